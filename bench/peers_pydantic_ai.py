"""pydantic-ai's UI adapters for the benchmark: AGUIAdapter on ``/ag-ui``, VercelAIAdapter on ``/api/chat``.

Runs under bench/.venv-peers (``bench/run`` installs pydantic-ai-slim there), started by
``serve.py pydantic-ai SOURCE``: SOURCE is the fake upstream's URL (an OpenAIChatModel relaying it) or
``function`` (a FunctionModel streaming 200 one-word deltas, the built-in model's equivalent).
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

from pydantic_ai import Agent
from pydantic_ai.messages import ModelMessage
from pydantic_ai.models.function import AgentInfo, FunctionModel
from pydantic_ai.models.openai import OpenAIChatModel
from pydantic_ai.providers.openai import OpenAIProvider
from pydantic_ai.ui.ag_ui import AGUIAdapter
from pydantic_ai.ui.vercel_ai import VercelAIAdapter
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

TOKENS = 200


async def _words(messages: list[ModelMessage], info: AgentInfo) -> AsyncIterator[str]:
    for n in range(TOKENS):
        yield f"word{n:03d} "


def peer_app(source: str) -> Any:
    if source == "function":
        model: Any = FunctionModel(stream_function=_words)
    else:
        model = OpenAIChatModel("bench", provider=OpenAIProvider(base_url=f"{source}/v1", api_key="bench"))
    agent = Agent(model, instructions="You are a benchmark.")

    async def ag_ui(request: Request) -> Response:
        return await AGUIAdapter.dispatch_request(request, agent=agent)

    async def vercel(request: Request) -> Response:
        return await VercelAIAdapter.dispatch_request(request, agent=agent)

    async def healthz(request: Request) -> Response:
        return JSONResponse({"status": "ok"})

    routes = [
        Route("/ag-ui", ag_ui, methods=["POST"]),
        Route("/api/chat", vercel, methods=["POST"]),
        Route("/healthz", healthz),
    ]
    return Starlette(routes=routes)
