"""Fuzzing the chat routes with bodies generated from the request schemas that ``/openapi.json`` serves.

The schemas are the adapters' pydantic wire models, so most generated bodies are well-formed requests
(and stream), some are one mutation away from well-formed, and the rest are any JSON or any bytes.
For every one: no 5xx, no traceback in the body, a JSON error with a code for every refusal, and every
stream that starts ends with its protocol's terminal event (AG-UI ``RUN_FINISHED``/``RUN_ERROR``,
useChat ``[DONE]`` after ``finish`` or ``error``). Bounded in examples so the suite stays fast.
"""

import json
from collections.abc import Iterator
from typing import Any
from urllib.parse import quote

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config

EXAMPLES = 60
# route -> (its path in /openapi.json, protocol)
ROUTES = {
    "/ag-ui": ("/ag-ui", "ag-ui"),
    "/agents/open/ag-ui": ("/agents/{agent}/ag-ui", "ag-ui"),
    "/api/chat": ("/api/chat", "vercel-ai"),
    "/agents/open/chat": ("/agents/{agent}/chat", "vercel-ai"),
}
# Strings worth trying where the schema says "string": roles, part types, URLs, ids, near-misses.
SPECIAL_STRINGS = [
    "",
    "system",
    "developer",
    "user",
    "assistant",
    "tool",
    "text",
    "file",
    "image",
    "dynamic-tool",
    "tool-get_weather",
    "data:image/png;base64,iVBORw0KGgo=",
    "data:text/plain,hi",
    "https://example.invalid/x.png",
    "file:///etc/passwd",
    "javascript:alert(1)",
    "null",
    "\u0000",
    "\ud7ff\ue000",
    "x" * 300,
]
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=10),
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=8), inner, max_size=3),
    max_leaves=8,
)
strings = st.text(max_size=24) | st.sampled_from(SPECIAL_STRINGS)


def from_schema(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[Any]:
    """Values matching the subset of JSON Schema that pydantic emits for the wire models."""
    if "$ref" in schema:
        name = schema["$ref"].rsplit("/", 1)[1]
        return st.deferred(lambda: from_schema(defs[name], defs))
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for union in ("anyOf", "oneOf"):
        if union in schema:
            return st.one_of([from_schema(option, defs) for option in schema[union]])
    kind = schema.get("type")
    if kind == "object":
        properties = {name: from_schema(sub, defs) for name, sub in schema.get("properties", {}).items()}
        required = set(schema.get("required", ()))
        return (
            st.fixed_dictionaries(
                {name: strategy for name, strategy in properties.items() if name in required},
                optional={name: strategy for name, strategy in properties.items() if name not in required},
            )
            if properties
            else st.dictionaries(st.text(max_size=8), json_values, max_size=3)
        )
    if kind == "array":
        return st.lists(from_schema(schema.get("items", {}), defs), min_size=schema.get("minItems", 0), max_size=4)
    if kind == "string":
        return strings
    if kind == "integer":
        return st.integers()
    if kind == "number":
        return st.floats(allow_nan=False, allow_infinity=False)
    if kind == "boolean":
        return st.booleans()
    if kind == "null":
        return st.none()
    return json_values


@st.composite
def mutated(draw: st.DrawFn, valid: st.SearchStrategy[dict[str, Any]]) -> Any:
    """A well-formed body with one key dropped or one value replaced by any JSON."""
    body = draw(valid)
    if not body:
        return body
    key = draw(st.sampled_from(sorted(body)))
    if draw(st.booleans()):
        del body[key]
    else:
        body[key] = draw(json_values)
    return body


def complete(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    """The top-level model with every property required (useChat's ``messages`` is optional in the model)."""
    model = defs[schema["$ref"].rsplit("/", 1)[1]] if "$ref" in schema else schema
    return {**model, "required": list(model.get("properties", {}))}


def bodies(schema: dict[str, Any], defs: dict[str, Any]) -> st.SearchStrategy[bytes]:
    valid = from_schema(complete(schema, defs), defs) | from_schema(schema, defs)
    as_json = st.one_of(valid, valid, valid, mutated(valid), json_values).map(lambda value: json.dumps(value).encode())
    return st.one_of(as_json, as_json, as_json, st.binary(max_size=64))


@pytest.fixture(scope="module")
def server() -> Iterator[tuple[str, dict[str, Any]]]:
    config = make_config(
        {
            "bot": {"model": "builtin:echo", "system_prompt": "Be brief.", "default": True},
            "open": {"model": "builtin:echo", "manage_system_prompt": "client", "system_prompt_fallback": True},
        }
    )
    live = LiveServer(create_app(config))
    live.start()
    try:
        yield live.url, httpx.get(f"{live.url}/openapi.json").json()
    finally:
        live.stop()


def check_answer(response: httpx.Response, protocol: str) -> None:
    assert response.status_code < 500, response.text
    assert "Traceback" not in response.text
    if response.status_code != 200:
        error = response.json()["error"]
        assert error["code"] and error["message"]
        return
    assert response.headers["content-type"].startswith("text/event-stream")
    frames = [line[len("data: ") :] for line in response.text.split("\n") if line.startswith("data: ")]
    assert frames, "a stream that started must say something"
    if protocol == "ag-ui":
        events = [json.loads(frame) for frame in frames]
        assert events[-1]["type"] in ("RUN_FINISHED", "RUN_ERROR"), events[-3:]
        assert sum(event["type"] in ("RUN_FINISHED", "RUN_ERROR") for event in events) == 1
    else:
        assert frames[-1] == "[DONE]", frames[-3:]
        assert json.loads(frames[-2])["type"] in ("finish", "error"), frames[-3:]


@pytest.mark.parametrize("route", list(ROUTES))
def test_no_generated_body_breaks_a_chat_route(server: tuple[str, dict[str, Any]], route: str) -> None:
    url, document = server
    schemas = document["components"]["schemas"]
    path, protocol = ROUTES[route]
    body_schema = document["paths"][path]["post"]["requestBody"]["content"]["application/json"]["schema"]
    seen: dict[int, int] = {}

    @settings(
        max_examples=EXAMPLES,
        deadline=None,
        database=None,
        suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large, HealthCheck.filter_too_much],
    )
    @given(body=bodies(body_schema, schemas))
    def one_request(body: bytes) -> None:
        with httpx.Client(timeout=10) as client:
            response = client.post(f"{url}{route}", content=body, headers={"content-type": "application/json"})
        seen[response.status_code] = seen.get(response.status_code, 0) + 1
        check_answer(response, protocol)

    one_request()
    assert seen.get(200, 0) > 0, f"no generated body was a valid request: {seen}"


@given(name=st.text(min_size=1, max_size=30))
@settings(max_examples=60, deadline=None, database=None)
def test_no_agent_name_in_the_path_breaks_a_route(server: tuple[str, dict[str, Any]], name: str) -> None:
    url, _ = server
    body = {"threadId": "t", "runId": "r", "messages": [{"id": "u", "role": "user", "content": "hi"}]}
    response = httpx.post(f"{url}/agents/{quote(name, safe='')}/ag-ui", json=body)
    check_answer(response, "ag-ui")
