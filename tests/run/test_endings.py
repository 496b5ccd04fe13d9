"""How a run ends: each failure's public message and stable code, its detail only in the log."""

from __future__ import annotations

import logging

import pytest

from chatgate.errors import ProviderError, RequestError, StoreUnavailable
from chatgate.events import TextDelta, TextEnd, TextStart, Usage, UsageTally
from chatgate.leak_guard import PROMPT_LEAK_MESSAGE, PromptLeak
from chatgate.run import ToolsUnavailable
from chatgate.run.endings import SHUTTING_DOWN, RunEnding, RunError, ServerStopping, max_steps_notice
from chatgate.usage import BudgetExceeded


def _ending() -> RunEnding:
    tally = UsageTally()
    tally.add("fake", "m", Usage(input_tokens=3, output_tokens=2))
    return RunEnding("bot", "r1", tally, account=None, trace=None)


@pytest.mark.parametrize(
    ("exc", "message", "code"),
    [
        (ServerStopping(), SHUTTING_DOWN, "server_shutdown"),
        (PromptLeak("at 3"), PROMPT_LEAK_MESSAGE, "prompt_leak"),
        (ProviderError("upstream said 529", public_message="Busy.", code="overloaded"), "Busy.", "overloaded"),
        (RunError("The system prompt could not be prepared."), "The system prompt could not be prepared.", "run_error"),
        (
            ToolsUnavailable("Tools are not available.", "tools_unavailable"),
            "Tools are not available.",
            "tools_unavailable",
        ),
        (BudgetExceeded("the daily budget is spent", 60), "the daily budget is spent", "budget_exceeded"),
        (
            RequestError(503, "budgets_unavailable", "budgets cannot be checked"),
            "budgets cannot be checked",
            "budgets_unavailable",
        ),
        (KeyError("secret detail"), "An internal error occurred.", "internal_error"),
    ],
)
def test_each_failure_ends_with_its_public_message_and_code(exc: Exception, message: str, code: str) -> None:
    failed = _ending().failed(exc, streamed=True)
    assert (failed.message, failed.code) == (message, code)
    assert "secret detail" not in failed.message
    assert [(entry.provider, entry.input_tokens) for entry in failed.usage] == [("fake", 3)]
    assert not failed.interrupted


def test_a_store_outage_ends_with_the_stores_code() -> None:
    failed = _ending().failed(StoreUnavailable("connection refused at 10.0.0.5"), streamed=False)
    assert failed.code == "store_unavailable" and "10.0.0.5" not in failed.message


def test_only_an_upstream_that_broke_off_after_speaking_is_interrupted() -> None:
    broke = ProviderError("reset", public_message="The model stream ended early.", kind="interrupted")
    assert _ending().failed(broke, streamed=True).interrupted
    assert not _ending().failed(broke, streamed=False).interrupted
    assert not _ending().failed(ProviderError("refused", kind="rejected"), streamed=True).interrupted


def test_an_unexpected_failure_is_logged_with_its_detail(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.ERROR, logger="chatgate.runner"):
        _ending().failed(KeyError("secret detail"), streamed=False)
    assert "secret detail" in caplog.text and "r1" in caplog.text


def test_the_max_steps_notice_is_one_text_message() -> None:
    start, delta, end = max_steps_notice("bot", "r1", 4)
    assert isinstance(start, TextStart) and isinstance(delta, TextDelta) and isinstance(end, TextEnd)
    assert start.id == delta.id == end.id
    assert "limit of 4 model steps" in delta.delta
