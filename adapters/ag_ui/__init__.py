"""The AG-UI protocol (1.0): ``RunAgentInput`` in, an SSE stream of AG-UI events out.

Decoding is ``decode.py``, encoding ``encode.py``; ``wire.py`` holds the wire types and ``snapshot.py``
a stored history as a ``MESSAGES_SNAPSHOT``. ``protocol`` is registered under the ``chatgate.protocols``
entry-point group.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from typing import Any

import chatgate.adapters.ag_ui.wire as wire
from chatgate.adapters.ag_ui.capabilities import agent_capabilities
from chatgate.adapters.ag_ui.decode import decode_request
from chatgate.adapters.ag_ui.encode import encode_run
from chatgate.adapters.ag_ui.snapshot import snapshot_messages
from chatgate.adapters.base import sse_frame
from chatgate.config import AgentConfig
from chatgate.events import RunEvent
from chatgate.history import Message
from chatgate.protocol import AgentFacts, ThreadCapabilities
from chatgate.run_input import RunInput

__all__ = ["AgUiProtocol", "protocol"]


_HEADERS = {"cache-control": "no-cache", "x-accel-buffering": "no"}


class AgUiProtocol:
    """AG-UI 1.0 over SSE (decode.py, encode.py)."""

    name = "ag-ui"
    route = "ag-ui"
    default_path = "/ag-ui"
    threads = ThreadCapabilities(hydrates=True, snapshot_when_behind=True, names_runs=True)

    def request_schema(self, ref_template: str) -> dict[str, Any]:
        """The JSON schema of a request body, ``RunAgentInput`` (for ``GET /openapi.json``)."""
        return wire.run_agent_input.json_schema(by_alias=True, ref_template=ref_template)

    def capabilities(self, facts: AgentFacts) -> dict[str, Any]:
        """The agent as an AG-UI ``AgentCapabilities`` (``GET .../ag-ui/capabilities``)."""
        return agent_capabilities(facts)

    def version(self, agent: AgentConfig) -> None:
        """None: every agent speaks AG-UI 1.0 (a client may declare its own ``protocolVersion``)."""
        return None

    def retracts(self, agent: AgentConfig) -> bool:
        """True: a ``MESSAGES_SNAPSHOT`` without a step's messages makes every AG-UI client drop them."""
        return True

    def decode(self, body: bytes) -> RunInput:
        """Decode a ``RunAgentInput`` body; 400 when it is not JSON, 422 naming each wrong field."""
        return decode_request(body)

    def headers(self, agent: AgentConfig) -> Mapping[str, str]:
        """No caching, no proxy buffering; ``EventStreamResponse`` sets the content type."""
        return _HEADERS

    def encode(
        self, run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]
    ) -> AsyncGenerator[bytes, None]:
        """The AG-UI event stream for one run; it always ends in ``RUN_FINISHED`` or ``RUN_ERROR``."""
        return encode_run(run_input, agent, events)

    def rejoined(self, history: Sequence[Message]) -> bytes:
        """``MESSAGES_SNAPSHOT`` of the thread before the run: HttpAgent drops a partial answer it kept."""
        return sse_frame({"type": "MESSAGES_SNAPSHOT", "messages": snapshot_messages(history)})

    def ui_messages(self, history: Sequence[tuple[Message, str]], agent: AgentConfig) -> list[dict[str, Any]]:
        """A stored thread as AG-UI messages, as a ``MESSAGES_SNAPSHOT`` carries them (CopilotKit's thread messages)."""
        return snapshot_messages([message for message, _status in history])

    def interrupted(self, agent: AgentConfig, message: str, code: str) -> bytes:
        """``RUN_ERROR``: it may follow any event, open messages included, and ends the run."""
        return sse_frame({"type": "RUN_ERROR", "message": message, "code": code})


protocol = AgUiProtocol()
"""The entry point registered under ``chatgate.protocols``."""
