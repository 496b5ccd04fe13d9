"""The interface a UI protocol adapter implements, and how the server finds the installed ones.

Adapters register under the ``chatgate.protocols`` entry-point group (see ``pyproject.toml``), so
the core never imports ``adapters/``. Every protocol is a ``UIProtocol``; what only some protocols do
is a small protocol of its own, checked with ``isinstance``: ``DescribesRequests`` (a request body's
JSON schema, for ``GET /openapi.json``), ``DescribesAgents`` (an agent's ``AgentFacts`` as the
protocol's capabilities document), ``RendersMessages`` (a stored thread in the client's shape) and
``RetractsSteps`` (its client can drop a step it was shown).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Mapping, Sequence
from dataclasses import dataclass
from importlib.metadata import entry_points
from typing import Any, Literal, Protocol, TypeAlias, runtime_checkable

from chatgate.config import AgentConfig
from chatgate.events import RunEvent
from chatgate.history import Message
from chatgate.run_input import RunInput, ToolDefinition

__all__ = [
    "AgentFacts",
    "DescribesAgents",
    "DescribesRequests",
    "InputKind",
    "RendersMessages",
    "RetractsSteps",
    "ThreadCapabilities",
    "UIProtocol",
    "discover_protocols",
    "retracts_steps",
]

InputKind: TypeAlias = Literal["image", "audio", "video", "pdf", "file"]
"""A kind of attachment a user message can carry."""


@dataclass(frozen=True, slots=True)
class AgentFacts:
    """What a client may rely on when it talks to one agent, in protocol-neutral words; no prompt, no secret.

    Built from the config by the HTTP edge (app/web/capabilities.py) for a protocol that ``DescribesAgents``.
    ``tools`` are the tools the agent itself offers (its server tools, then the frontend tools it
    declares); ``client_tools`` whether a request's own tools are offered too. ``reasoning`` is None
    when the config does not say whether the model reasons (an OpenAI-compatible server may or may not
    stream it); ``inputs`` the attachment kinds its provider is sent (others fail the run).
    """

    name: str
    description: str
    version: str
    resumable: bool
    tools: tuple[ToolDefinition, ...]
    client_tools: bool
    approvals: bool
    reasoning: bool | None
    encrypted_reasoning: bool
    inputs: frozenset[InputKind]
    memory: bool
    max_steps: int


@dataclass(frozen=True, slots=True)
class ThreadCapabilities:
    """How a protocol's client holds a stored thread: what the stored-thread code does differently for it.

    The core asks these, never a protocol's name, so a third protocol is one module and one entry point.
    """

    newest_message_only: bool = False
    """Only the last message a client sends can be new (useChat resends the thread it shows)."""
    hydrates: bool = False
    """A request that adds nothing asks for the thread, and gets it with no run (AG-UI)."""
    snapshot_when_behind: bool = False
    """A client that lacks stored messages is sent the thread before the run (``RunInput.snapshot``)."""
    names_the_answer: bool = False
    """The client knows an answer by the message id its stream announced, so the stored turn keeps it (useChat)."""
    serves_messages: bool = False
    """``GET .../threads/{id}/messages`` answers with this protocol's ``ui_messages(history, agent)``
    (it must be ``RendersMessages`` too)."""
    names_runs: bool = False
    """The client names each run (AG-UI ``runId``): the thread keeps the last one, and a run that answers
    or regenerates that run's turn gets it as ``RunInput.parent_run_id`` unless the client named a parent."""


class UIProtocol(Protocol):
    """A UI protocol: how its requests decode and how run events encode onto its stream."""

    name: str
    """Its name in ``GET /agents``, e.g. ``"ag-ui"``."""
    route: str
    """The last path segment of its per-agent route: ``/agents/{agent}/{route}``."""
    default_path: str
    """The path that serves the default agent, e.g. ``/api/chat``."""
    threads: ThreadCapabilities
    """How its client holds a stored thread."""

    def version(self, agent: AgentConfig) -> str | None:
        """The protocol version ``agent``'s streams speak, when its config chooses one, or None.

        useChat's is the agent's ``vercel_ai_version``; traces carry it as ``chatgate.protocol.version``.
        """
        ...

    def decode(self, body: bytes) -> RunInput:
        """Decode a request body; raise ``RequestError`` naming what is wrong."""
        ...

    def headers(self, agent: AgentConfig) -> Mapping[str, str]:
        """The response headers of a stream for ``agent``."""
        ...

    def encode(
        self, run_input: RunInput, agent: AgentConfig, events: AsyncIterator[RunEvent]
    ) -> AsyncGenerator[bytes, None]:
        """Encode ``events`` as complete SSE frames; must end the stream in-protocol, never raise."""
        ...

    def rejoined(self, history: Sequence[Message]) -> bytes:
        """Frames a reconnecting client gets right after a replayed run's first frame, or ``b""``.

        ``history`` is the thread before the run's turn: a protocol whose client keeps what it received
        (AG-UI) resets it there, so the replay rebuilds a partial answer instead of appending to it.
        """
        ...

    def interrupted(self, agent: AgentConfig, message: str, code: str) -> bytes:
        """The error ending of a followed run whose producer is gone without writing its own ending.

        A follower appends it after the frames it has: it knows nothing of what they left open.
        """
        ...


@runtime_checkable
class DescribesRequests(Protocol):
    """A protocol that publishes its request body's JSON schema (``GET /openapi.json``)."""

    def request_schema(self, ref_template: str) -> Mapping[str, Any]:
        """The JSON schema of a request body, its ``$ref``s spelled by ``ref_template`` (``{model}``)."""
        ...


@runtime_checkable
class DescribesAgents(Protocol):
    """A protocol with a capabilities document: ``GET {its routes}/capabilities`` (AG-UI)."""

    def capabilities(self, facts: AgentFacts) -> Mapping[str, Any]:
        """``facts`` as the protocol's capabilities document."""
        ...


@runtime_checkable
class RendersMessages(Protocol):
    """A protocol whose client reloads a stored thread in its own shape (useChat's UIMessages)."""

    def ui_messages(self, history: Sequence[tuple[Message, str]], agent: AgentConfig) -> list[dict[str, Any]]:
        """A stored thread (each message with its id) as the client takes it after a reload."""
        ...


@runtime_checkable
class RetractsSteps(Protocol):
    """A protocol whose client can drop a step it was shown (``StepRetracted``): ai 7, AG-UI."""

    def retracts(self, agent: AgentConfig) -> bool:
        """Whether ``agent``'s clients can drop a step (useChat: only ``vercel_ai_version = "v7"``)."""
        ...


def retracts_steps(protocol: UIProtocol, agent: AgentConfig) -> bool:
    """Whether a run streamed in ``protocol`` for ``agent`` may withdraw a step it showed."""
    return isinstance(protocol, RetractsSteps) and protocol.retracts(agent)


def discover_protocols() -> list[UIProtocol]:
    """The protocol adapters installed under the ``chatgate.protocols`` entry-point group."""
    protocols: list[UIProtocol] = [entry.load() for entry in entry_points(group="chatgate.protocols")]
    return sorted(protocols, key=lambda protocol: protocol.name)
