"""Fuzzing every stored-thread route on SQLite and PostgreSQL, over one keep-alive connection.

Alice owns thread ``t1``. Bob (and callers with no key or a wrong one) send generated requests to
every route that takes a thread id: the thread routes, stop, resume in both protocols, and both
protocols' chat routes, with ids that respell ``t1`` (case, URL-encoding, dot segments, trailing
slash, fullwidth lookalikes, tabs, NUL) or are any text. For every request: no 5xx, the same
connection answers the next one (``auto_open = 0``: a reset fails the test), and no reply to Bob
holds Alice's text. After the run: no error or traceback was logged and Alice's thread is unchanged.
"""

from __future__ import annotations

import http.client
import json
import logging
from collections import Counter
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote, urlsplit

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config

EXAMPLES = 600
KEYS = {"alice": "alice-key-0123456789", "bob": "bob-key-0123456789ab"}
SECRET = "ALICE-SECRET-4417"
RESPELLED = [
    "t1", "T1", "t%31", "%74%31", "./t1", "t1/.", "../threads/t1", "t1/", "t1//", "%2E%2E", ".", "..",
    "t1%2F", "t1%00", "t1%09", "%09t1", "t1%0A", "t1%20", "%EF%BD%94%EF%BC%91", "%EF%BD%941", "t1%C2%85",
    "t1%E2%80%A8", "t1%ED%A0%80", "t1%FF", "t1?x=1", "t1#f", "t1;p", "%", "%zz",
]  # fmt: skip
SPECIAL_TEXT = ["t1", "T1", "t1\x00", "t1\t", "\uff54\uff11", "t1/", "..", "x" * 201, "\u2028", "\x7f", ""]


def _path_id(value: str) -> str:
    return quote(value, safe="")


ids = st.one_of(st.sampled_from(RESPELLED), st.text(max_size=12).map(_path_id))
texts = st.one_of(st.sampled_from(SPECIAL_TEXT), st.text(max_size=20))
callers = st.sampled_from(["bob"] * 6 + ["none", "wrong"])


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, str, str | None]:
    """``(route name, method, path, JSON body)``."""
    thread = draw(ids)
    base = f"/agents/bot/threads/{thread}"
    route = draw(
        st.sampled_from(["list", "get", "messages", "delete", "system", "reset", "stop", "resume", "chat", "ag-ui"])
    )
    if route == "list":
        return route, "GET", "/agents/bot/threads" + draw(st.sampled_from(["", "/", "?x=%00"])), None
    if route in ("get", "messages", "delete"):
        method = "DELETE" if route == "delete" else "GET"
        return route, method, base + ("/messages" if route == "messages" else ""), None
    if route in ("system", "reset"):
        body = draw(
            st.one_of(
                st.fixed_dictionaries({"system_message": st.one_of(st.none(), texts)}),
                st.fixed_dictionaries({"prompt": texts}),
                st.fixed_dictionaries({"revision": st.integers(-1, 3)}),
                st.just({}),
            )
        )
        raw = draw(st.sampled_from([json.dumps(body), '{"system_message": "\\ud800"}', "{", "[]"]))
        method, suffix = ("PUT", "/system-message") if route == "system" else ("POST", "/reset")
        return route, method, base + suffix, raw
    if route == "stop":
        return route, "POST", base + "/stop", None
    if route == "resume":
        return route, "GET", draw(st.sampled_from(["/api/chat", "/agents/bot/ag-ui"])) + f"/{thread}/stream", None
    thread_text, message_id, text = draw(texts), draw(texts), draw(texts)
    if route == "chat":
        message = {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}
        body = {
            "id": thread_text,
            "message": message,
            "trigger": draw(st.sampled_from(["submit-message", "regenerate-message"])),
        }
        return route, "POST", "/agents/bot/chat", json.dumps(body)
    message = {"id": message_id, "role": "user", "content": text}
    return (
        route,
        "POST",
        "/agents/bot/ag-ui",
        json.dumps({"threadId": thread_text, "runId": "r", "messages": [message]}),
    )


@pytest.fixture
def url(store_url: str) -> Iterator[str]:
    agent = {"model": "builtin:echo", "conversations": "server", "prompts": {"pirate": "Arr."}}
    keys = [{"id": name, "key": key, "admin": name == "alice"} for name, key in KEYS.items()]
    config = make_config({"bot": agent}, store={"url": store_url}, keys=keys)
    server = LiveServer(create_app(config))
    server.start()
    yield server.url
    server.stop()


def _alice_view(url: str) -> Any:
    headers = {"authorization": f"Bearer {KEYS['alice']}"}
    base = f"{url}/agents/bot/threads/t1"
    thread, messages = httpx.get(base, headers=headers).json(), httpx.get(f"{base}/messages", headers=headers).json()
    return thread, messages, httpx.get(f"{url}/agents/bot/threads", headers=headers).json()


def test_no_stored_thread_route_fails_resets_or_leaks(
    url: str, store_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    alice = {"authorization": f"Bearer {KEYS['alice']}"}
    body = {"id": "t1", "message": {"id": "a1", "role": "user", "parts": [{"type": "text", "text": SECRET}]}}
    assert httpx.post(f"{url}/agents/bot/chat", json=body, headers=alice).status_code == 200
    assert httpx.put(f"{url}/agents/bot/threads/t1/system-message", json={"prompt": "pirate"}, headers=alice).is_success
    before = _alice_view(url)
    address = urlsplit(url)
    connection = http.client.HTTPConnection(address.hostname or "", address.port, timeout=30)
    connection.auto_open = 0
    connection.connect()
    counts: Counter[str] = Counter()
    statuses: Counter[int] = Counter()

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
    )
    @given(request=requests(), caller=callers)
    def one(request: tuple[str, str, str, str | None], caller: str) -> None:
        nonlocal connection
        route, method, path, body = request
        headers = {"content-type": "application/json"} if body is not None else {}
        if caller in KEYS:
            headers["authorization"] = f"Bearer {KEYS[caller]}"
        elif caller == "wrong":
            headers["authorization"] = "Bearer not-a-key-0000000000"
        connection.request(method, path, body=body, headers=headers)
        response = connection.getresponse()  # on a reset this raises: the test fails
        text = response.read().decode("utf-8", "replace")
        counts[route] += 1
        statuses[response.status] += 1
        assert response.status < 500, (method, path, body, response.status, text)
        assert SECRET not in text, (method, path, body)
        if response.status >= 400:
            assert json.loads(text)["error"]["code"], text
        if (response.getheader("connection") or "").lower() == "close":  # the server said so: not a reset
            connection.close()
            connection.connect()

    try:
        with caplog.at_level(logging.WARNING):
            one()
    finally:
        connection.close()
    store = store_url.split(":", 1)[0]
    print(f"\n{store}: requests per route {dict(sorted(counts.items()))}; statuses {dict(sorted(statuses.items()))}")
    assert set(counts) == {"list", "get", "messages", "delete", "system", "reset", "stop", "resume", "chat", "ag-ui"}
    assert sum(count for status, count in statuses.items() if status >= 500) == 0
    assert not [record.getMessage() for record in caplog.records if record.levelno >= logging.ERROR]
    assert _alice_view(url) == before
