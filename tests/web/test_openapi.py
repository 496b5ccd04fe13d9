"""``GET /openapi.json``: a valid OpenAPI 3.1 document of every route, its request body and the error shape."""

from collections.abc import Callable
from typing import Any

import httpx
import pytest
from openapi_spec_validator import validate
from starlette.routing import Route

from chatgate.config import Config
from chatgate.protocol import discover_protocols
from chatgate.web.app import create_app
from chatgate.web.openapi import openapi_document
from tests.conftest import make_config


@pytest.fixture
def document(serve: Callable[[Config], str]) -> dict[str, Any]:
    response = httpx.get(f"{serve(make_config({'bot': {'model': 'builtin:echo', 'default': True}}))}/openapi.json")
    assert response.status_code == 200
    found: dict[str, Any] = response.json()
    return found


def test_it_is_a_valid_openapi_document(document: dict[str, Any]) -> None:
    validate(document)
    assert document["openapi"].startswith("3.1")


def test_every_route_and_method_is_described() -> None:
    app = create_app(make_config({"bot": {"model": "builtin:echo", "default": True}}))
    document = openapi_document(app.routes, discover_protocols())
    for route in app.routes:
        assert isinstance(route, Route)
        for method in (route.methods or set()) - {"HEAD"}:
            assert method.lower() in document["paths"][route.path], (method, route.path)


def test_chat_routes_take_their_protocols_wire_models(document: dict[str, Any]) -> None:
    schemas = document["components"]["schemas"]
    for path, model in [("/ag-ui", "ag-ui.RunAgentInput"), ("/api/chat", "vercel-ai.ChatRequest")]:
        post = document["paths"][path]["post"]
        assert post["requestBody"]["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{model}"}
        assert "text/event-stream" in post["responses"]["200"]["content"]
    assert {"threadId", "runId", "messages"} <= set(schemas["ag-ui.RunAgentInput"]["properties"])
    assert "messages" in schemas["vercel-ai.ChatRequest"]["properties"]
    agent_route = document["paths"]["/agents/{agent}/ag-ui"]["post"]
    assert agent_route["parameters"] == [
        {"name": "agent", "in": "path", "required": True, "schema": {"type": "string"}}
    ]


def test_every_operation_documents_the_error_shape(document: dict[str, Any]) -> None:
    error = document["components"]["schemas"]["Error"]
    assert error["properties"]["error"]["required"] == ["code", "message"]
    for operations in document["paths"].values():
        for operation in operations.values():
            assert operation["responses"]["4XX"]["content"]["application/json"]["schema"] == {
                "$ref": "#/components/schemas/Error"
            }
