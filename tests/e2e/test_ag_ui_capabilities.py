"""``GET .../ag-ui/capabilities``: an AG-UI ``AgentCapabilities`` built from the config, read by a real
``HttpAgent`` subclass (the three lines of docs/protocols.md) and checked strictly by @ag-ui/core's schema."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from chatgate.web import create_app
from tests.conftest import LiveServer, make_config, run_node_client

KEY = "ops-key-0123456789abcdef"
WEATHER = {"function": "tests.sample_tools:get_weather"}
RECORD = {"function": "tests.sample_tools:record", "requires_approval": True}
PICK = {"description": "Ask the user to pick a colour.", "parameters": {"type": "object", "properties": {}}}


@pytest.fixture(scope="module")
def url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    store = tmp_path_factory.mktemp("capabilities") / "threads.db"
    config = make_config(
        {
            "ops": {
                "model": "up:claude-x",
                "description": "Operations helper.",
                "conversations": "server",
                "tools": {"get_weather": WEATHER, "record": RECORD},
                "client_tools": {"pick_color": PICK},
                "model_settings": {"thinking": {"type": "enabled", "budget_tokens": 1024}},
            },
            "echo": {"model": "builtin:echo", "default": True},
            "hidden": {"model": "builtin:echo"},
        },
        providers={"up": {"kind": "anthropic", "base_url": "http://127.0.0.1:9", "api_key": "x"}},
        keys=[{"id": "k", "key": KEY, "agents": ["ops", "echo"]}],
        store={"url": f"sqlite:///{store}"},
    )
    server = LiveServer(create_app(config))
    server.start()
    yield server.url
    server.stop()


def capabilities(url: str, path: str) -> dict[str, Any]:
    result: dict[str, Any] = run_node_client(
        "ag_ui_capabilities.mjs", {"url": url + path, "headers": {"authorization": f"Bearer {KEY}"}}
    )
    return result


def test_an_agent_with_tools_approvals_reasoning_and_a_stored_thread(url: str) -> None:
    found = capabilities(url, "/agents/ops/ag-ui")
    assert found["identity"]["name"] == "ops" and found["identity"]["description"] == "Operations helper."
    assert found["transport"]["streaming"] is True and found["transport"]["resumable"] is True
    assert [tool["name"] for tool in found["tools"]["items"]] == ["get_weather", "record", "pick_color"]
    assert found["tools"]["items"][0]["description"] == "Current weather for a city."
    assert found["tools"]["clientProvided"] is True
    assert found["humanInTheLoop"] == {"supported": True, "approvals": True, "interrupts": True}
    assert found["reasoning"] == {"supported": True, "streaming": True, "encrypted": True}
    assert found["multimodal"]["input"] == {"image": True, "audio": False, "video": False, "pdf": True, "file": False}
    assert found["state"] == {"snapshots": False, "deltas": False, "memory": True, "persistentState": False}


def test_the_default_agent_answers_on_the_short_route_and_agents_links_to_it(url: str) -> None:
    found = capabilities(url, "/ag-ui")
    assert found["identity"]["name"] == "echo" and "description" not in found["identity"]
    assert found["transport"]["resumable"] is False and found["humanInTheLoop"]["approvals"] is False
    assert found["reasoning"]["supported"] is False and not any(found["multimodal"]["input"].values())
    listed = httpx.get(f"{url}/agents", headers={"authorization": f"Bearer {KEY}"}).json()["agents"]
    links = {agent["name"]: agent["capabilities"] for agent in listed}
    assert links == {name: {"ag-ui": f"/agents/{name}/ag-ui/capabilities"} for name in ("ops", "echo")}


@pytest.mark.parametrize(
    ("path", "key", "status", "code"),
    [
        ("/agents/nobody/ag-ui/capabilities", KEY, 404, "unknown_agent"),
        ("/agents/hidden/ag-ui/capabilities", KEY, 403, None),
        ("/agents/ops/ag-ui/capabilities", None, 401, None),
    ],
)
def test_an_unknown_agent_or_a_caller_it_is_not_for_gets_a_json_error(
    url: str, path: str, key: str | None, status: int, code: str | None
) -> None:
    headers = {"authorization": f"Bearer {key}"} if key else {}
    response = httpx.get(url + path, headers=headers)
    assert response.status_code == status
    error = response.json()["error"]
    assert code is None or error["code"] == code
