"""Approvals of signed-in people are theirs alone: bob cannot spend alice's approval, nor receive its outcome.

The same setup as tests/e2e/test_approvals_scoped.py (a fake upstream that asks everyone for the same tool
call), with real sign-in tokens instead of keys; tool executions are counted in the file ``record`` writes.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.e2e.approval_flows import PROTOCOLS, answer, ask, executions, tool_outputs
from tests.e2e.test_approvals_scoped import RECORD, same_call
from tests.oidc_provider import OpenIDProvider
from tests.providers.fakes import FakeUpstream, fake_in_thread, text_reply
from tests.providers.support import provider_table

Serve = Callable[[Config], str]


@pytest.fixture
def log(tmp_path: Path) -> Path:
    return tmp_path / "runs.log"


@pytest.fixture
def upstream(log: Path) -> Iterator[FakeUpstream]:
    with fake_in_thread(same_call(log), same_call(log), text_reply("openai", "done")) as fake:
        yield fake


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_another_persons_approval_runs_nothing(
    serve: Serve, upstream: FakeUpstream, log: Path, protocol: str, oidc_provider: OpenIDProvider
) -> None:
    base = serve(
        make_config(
            {"ops": {"model": "up:m", "tools": RECORD}},
            providers={"up": provider_table("openai", upstream.url)},
            server={"approval_secret": "a-secret-of-enough-length"},
            auth={"jwt": {"issuer": oidc_provider.issuer, "audience": "chatgate"}},
        )
    )
    alice = {"authorization": f"Bearer {oidc_provider.token('alice')}"}
    bob = {"authorization": f"Bearer {oidc_provider.token('bob')}"}
    alices = ask(base, protocol, "ops", {}, headers=alice)
    bobs = ask(base, protocol, "ops", {}, headers=bob)
    assert (alices.call_id, alices.arguments) == (bobs.call_id, bobs.arguments)
    assert tool_outputs(answer(base, bobs, "ops", alices.token, headers=bob)) == []  # refused: not his
    assert executions(log) == 0
    assert tool_outputs(answer(base, alices, "ops", headers=alice)) == ["recorded ran"]
    assert executions(log) == 1
    assert tool_outputs(answer(base, bobs, "ops", alices.token, headers=bob)) == []  # nor her outcome
    assert tool_outputs(answer(base, bobs, "ops", headers=bob)) == ["recorded ran"]  # his own runs his tool
    assert executions(log) == 2
