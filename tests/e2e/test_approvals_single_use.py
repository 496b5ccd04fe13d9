"""An approval runs its tool once, whatever a client replays: counted in a file the tool appends to.

Both protocols (AG-UI and useChat v6) over raw HTTP against live servers, with builtin:echo calling a
``record`` tool that needs approval and appends one line per execution.
"""

import asyncio
import json
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.config import Config, load_config
from chatgate.ids import id_problem
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.e2e.approval_flows import (
    PROTOCOLS,
    answer,
    answer_body,
    answer_with_real_client,
    ask,
    events_of,
    executions,
    route,
    tool_outputs,
)

Serve = Callable[[Config], str]
SECRET = "a-secret-of-enough-length"
RECORD = {"record": {"function": "tests.sample_tools:record", "requires_approval": True}}
AGENT = {"model": "builtin:echo", "tools": RECORD}


@pytest.fixture(params=PROTOCOLS)
def protocol(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


def config(**server: Any) -> Config:
    return make_config({"ops": AGENT, "other": AGENT}, server={"approval_secret": SECRET, **server})


def respellings(token: str) -> list[str]:
    _, issued, rest = token.split("_", 2)
    nonce, mac = rest[:22], rest[23:]
    return [
        f"apr_0{issued}_{rest}",
        f"apr_0x{issued}_{rest}",
        f"apr_+{issued}_{rest}",
        f"apr_ {issued}_{rest}",
        f"apr_{issued} _{rest}",
        f"apr_{issued.upper()}_{rest}",
        f"apr_{issued}_{nonce.upper()}_{mac}",
        f"apr_{issued}_{nonce}==_{mac}",
        f"apr_{issued}_{rest}=",
        token.replace("_", "%5F"),
        f" {token}",
        f"{token}\n",
    ]


def test_respelled_approval_ids_are_refused_and_run_nothing(serve: Serve, protocol: str, tmp_path: Path) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = ask(base, protocol, "ops", {"path": str(log)})
    for spelling in (s for s in respellings(paused.token) if s != paused.token):
        if id_problem(spelling) is not None:  # not an id at all (a newline): refused before any run
            body = answer_body(paused, spelling)
            assert httpx.post(route(base, protocol, "ops"), json=body, timeout=30).status_code == 422
        else:
            events = answer(base, paused, "ops", spelling)
            assert tool_outputs(events) == []  # the model is told it did not run; the client sees no result
        assert executions(log) == 0, spelling
    assert tool_outputs(answer(base, paused, "ops")) == ["recorded ran"]
    assert tool_outputs(answer(base, paused, "ops")) == ["recorded ran"]  # a replay: the first outcome
    assert executions(log) == 1


async def replay_at_once(urls: list[str], body: dict[str, Any], times: int) -> list[list[dict[str, Any]]]:
    async with httpx.AsyncClient(timeout=60) as client:
        responses = await asyncio.gather(*(client.post(urls[i % len(urls)], json=body) for i in range(times)))
    return [events_of(response) for response in responses]


async def test_twenty_concurrent_replays_run_the_tool_once(serve: Serve, protocol: str, tmp_path: Path) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = await asyncio.to_thread(ask, base, protocol, "ops", {"path": str(log)})
    answers = await replay_at_once([route(base, protocol, "ops")], answer_body(paused), 20)
    assert executions(log) == 1
    outputs = [tool_outputs(events) for events in answers]
    assert all(len(output) == 1 for output in outputs)
    assert sum(output == ["recorded ran"] for output in outputs) >= 1
    assert {output[0] for output in outputs} <= {"recorded ran", ALREADY_ANSWERING}


def test_a_replay_through_the_real_clients_gets_the_first_outcome(serve: Serve, protocol: str, tmp_path: Path) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = ask(base, protocol, "ops", {"path": str(log)})
    assert tool_outputs(answer_with_real_client(base, paused, "ops")) == ["recorded ran"]
    assert tool_outputs(answer_with_real_client(base, paused, "ops")) == ["recorded ran"]
    assert executions(log) == 1


def test_a_client_hanging_up_mid_tool_leaves_the_outcome_for_its_retry(
    serve: Serve, protocol: str, tmp_path: Path
) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = ask(base, protocol, "ops", {"path": str(log), "seconds": 1})
    with pytest.raises(httpx.ReadTimeout):  # the client gives up while the tool runs, and hangs up
        httpx.post(route(base, protocol, "ops"), json=answer_body(paused), timeout=0.3)
    deadline = time.monotonic() + 10
    while executions(log) == 0 and time.monotonic() < deadline:
        time.sleep(0.05)
    time.sleep(0.2)  # the outcome is recorded right after the tool returns
    assert tool_outputs(answer(base, paused, "ops")) == ["recorded ran"]
    assert executions(log) == 1


def test_a_token_issued_by_one_agent_runs_nothing_on_another(serve: Serve, protocol: str, tmp_path: Path) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = ask(base, protocol, "ops", {"path": str(log)})
    assert tool_outputs(answer(base, paused, "other")) == []
    assert executions(log) == 0
    assert tool_outputs(answer(base, paused, "ops")) == ["recorded ran"]
    assert executions(log) == 1


def reloading_server(tmp_path: Path, secret: str | None) -> tuple[LiveServer, Any]:
    path = tmp_path / "chatgate.toml"
    server_table = f'[server]\napproval_secret = "{secret}"\n' if secret else ""
    agent = '[agents.ops]\nmodel = "builtin:echo"\ndescription = "{}"\n'
    tool = '[agents.ops.tools.record]\nfunction = "tests.sample_tools:record"\nrequires_approval = true\n'
    text = server_table + agent + tool
    path.write_text(text.format("before"))
    app = create_app(load_config(path), config_path=path)
    server = LiveServer(app)
    server.start()

    def reload() -> None:
        before = app.services.running.agents
        path.write_text(text.format("after"))
        assert app.services.running.config_watcher.reload()
        assert app.services.running.agents is not before

    return server, reload


@pytest.mark.parametrize("secret", [SECRET, None], ids=["secret", "no-secret"])
def test_a_replay_after_a_reload_does_not_run_again(tmp_path: Path, protocol: str, secret: str | None) -> None:
    server, reload = reloading_server(tmp_path, secret)
    log = tmp_path / "runs.log"
    try:
        paused = ask(server.url, protocol, "ops", {"path": str(log)})
        assert tool_outputs(answer(server.url, paused, "ops")) == ["recorded ran"]
        reload()
        assert tool_outputs(answer(server.url, paused, "ops")) == ["recorded ran"]
        assert executions(log) == 1
    finally:
        server.stop()


def test_without_a_secret_a_pending_approval_survives_a_reload(tmp_path: Path, protocol: str) -> None:
    server, reload = reloading_server(tmp_path, None)
    log = tmp_path / "runs.log"
    try:
        paused = ask(server.url, protocol, "ops", {"path": str(log)})
        reload()
        assert tool_outputs(answer(server.url, paused, "ops")) == ["recorded ran"]
        assert executions(log) == 1
    finally:
        server.stop()


def test_a_lone_surrogate_in_the_arguments_is_no_internal_error(
    serve: Serve, protocol: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    base, log = serve(config()), tmp_path / "runs.log"
    paused = ask(base, protocol, "ops", {"path": str(log), "note": "\ud800"})  # signing it used to crash
    raw = json.dumps({"path": str(log), "note": "\ud800"}, ensure_ascii=False)  # the surrogate itself, unescaped
    for arguments in (paused.arguments, raw, "\ud800"):
        for _ in range(2):
            body = answer_body(replace(paused, arguments=arguments))
            response = httpx.post(route(base, protocol, "ops"), content=json.dumps(body), headers=JSON, timeout=30)
            # The body parser refuses a raw lone surrogate with a 400; anything else is an answered run.
            assert response.status_code in (200, 400), response.text
            if response.status_code == 200:
                events = events_of(response)
                assert events[-1]["type"] in ("RUN_FINISHED", "finish"), events[-1]
                assert all(output.startswith("Invalid arguments for record") for output in tool_outputs(events))
    assert executions(log) == 0  # the tool's validation refuses the surrogate: it never runs
    assert "Traceback" not in caplog.text and "unexpected" not in caplog.text


JSON = {"content-type": "application/json"}
ALREADY_ANSWERING = "This approval is already being answered by another request; the tool was not run again."
UNAVAILABLE = "Approvals cannot be checked right now; please try again."


def _unavailable(events: list[dict[str, Any]]) -> list[str]:
    """[UNAVAILABLE] when the run ended refusing to check its approval (the ledger unreachable), else []."""
    said = [event.get("errorText", event.get("message")) for event in events if event["type"] in ("error", "RUN_ERROR")]
    return [UNAVAILABLE] if said == [UNAVAILABLE] else []


def test_two_servers_sharing_redis_answer_an_approval_once(
    serve: Serve, protocol: str, tmp_path: Path, redis_url: str
) -> None:
    first, second = serve(config(redis_url=redis_url)), serve(config(redis_url=redis_url))
    log = tmp_path / "runs.log"
    paused = ask(first, protocol, "ops", {"path": str(log)})
    assert tool_outputs(answer(first, paused, "ops")) == ["recorded ran"]
    assert tool_outputs(answer(second, paused, "ops")) == ["recorded ran"]  # the first outcome, from Redis
    assert tool_outputs(answer(second, paused, "other")) == []
    assert executions(log) == 1


async def test_twenty_concurrent_replays_across_two_servers_sharing_redis_run_once(
    serve: Serve, protocol: str, tmp_path: Path, redis_url: str
) -> None:
    first, second = serve(config(redis_url=redis_url)), serve(config(redis_url=redis_url))
    log = tmp_path / "runs.log"
    paused = await asyncio.to_thread(ask, second, protocol, "ops", {"path": str(log)})
    urls = [route(first, protocol, "ops"), route(second, protocol, "ops")]
    answers = await replay_at_once(urls, answer_body(paused), 20)
    assert executions(log) == 1
    # A replay whose connection to Redis timed out (seen on a starved machine) ends in an error, fail-closed.
    outputs = [tool_outputs(events) or _unavailable(events) for events in answers]
    assert {output[0] for output in outputs if len(output) == 1} <= {"recorded ran", ALREADY_ANSWERING, UNAVAILABLE}
    assert all(len(output) == 1 for output in outputs)
    assert tool_outputs(await asyncio.to_thread(answer, first, paused, "ops")) == ["recorded ran"]
