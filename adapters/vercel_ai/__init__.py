"""The Vercel AI SDK UI message stream: what ``useChat`` sends and reads (``ai`` 5.x, 6.x and 7.x).

Decoding is ``decode.py``, encoding ``encode.py``; ``wire.py`` holds the wire types and ``messages.py`` a
stored history as ``UIMessage``s. ``protocol`` is registered under the ``chatgate.protocols`` entry-point
group.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

from chatgate.adapters.vercel_ai.decode import decode_request
from chatgate.adapters.vercel_ai.encode import encode_run, interrupted_ending
from chatgate.adapters.vercel_ai.messages import ui_messages
from chatgate.adapters.vercel_ai.wire import REQUEST
from chatgate.config import AgentConfig
from chatgate.events import RunEvent
from chatgate.history import Message
from chatgate.protocol import ThreadCapabilities
from chatgate.run_input import RunInput

__all__ = ["HEADERS", "VercelAIProtocol", "protocol"]

HEADERS: Mapping[str, str] = {
    "cache-control": "no-cache",
    "x-vercel-ai-ui-message-stream": "v1",
    "x-accel-buffering": "no",
}
"""The response headers useChat expects (content-type is set by the SSE response)."""


class VercelAIProtocol:
    """The useChat protocol: ``POST /api/chat`` and ``/agents/{agent}/chat`` (decode.py, encode.py)."""

    name = "vercel-ai"
    route = "chat"
    default_path = "/api/chat"
    threads = ThreadCapabilities(newest_message_only=True, names_the_answer=True, serves_messages=True)

    def request_schema(self, ref_template: str) -> dict[str, Any]:
        """The JSON schema of a request body, ``ChatRequest`` (for ``GET /openapi.json``)."""
        return REQUEST.json_schema(by_alias=True, ref_template=ref_template)

    def version(self, agent: AgentConfig) -> str:
        """The ``ai`` generation the agent's streams are for: its ``vercel_ai_version``."""
        return agent.vercel_ai_version

    def retracts(self, agent: AgentConfig) -> bool:
        """Whether ``agent``'s clients can drop a step they were shown: ai 7's ``reset-step`` (v7 agents only)."""
        return agent.vercel_ai_version == "v7"

    def decode(self, body: bytes) -> RunInput:
        """Decode a ``DefaultChatTransport`` body; 400 for bad JSON, 422 naming a wrong field."""
        return decode_request(body)

    def ui_messages(self, history: Sequence[tuple[Message, str]], agent: AgentConfig) -> list[dict[str, Any]]:
        """A stored thread as the UIMessages ``useChat({messages})`` takes after a reload."""
        return ui_messages(history, agent.vercel_ai_version)

    def headers(self, agent: AgentConfig) -> Mapping[str, str]:
        """``cache-control``, ``x-vercel-ai-ui-message-stream: v1`` and ``x-accel-buffering``."""
        return HEADERS

    def rejoined(self, history: Sequence[Message]) -> bytes:
        """Nothing: the replay's ``start`` already makes the ``ai`` client rebuild the message."""
        return b""

    def interrupted(self, agent: AgentConfig, message: str, code: str) -> bytes:
        """``error``, ``finish`` and ``[DONE]``: the client keeps the parts it has and shows the error."""
        return interrupted_ending(agent, message)

    def encode(
        self, run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]
    ) -> AsyncGenerator[bytes, None]:
        """The UI message stream for ``events``; always ends with ``finish`` and ``[DONE]``, never raises."""
        return encode_run(run_input, agent, events)


protocol = VercelAIProtocol()
"""The registered ``chatgate.protocols`` entry point."""
