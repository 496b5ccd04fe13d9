"""Replays on stored threads, over real HTTP: a model that answers from the request, and each kind of replay.

``ThreadModel`` is an OpenAI-compatible fake upstream: a last user message ending ``call NAME {json}``
gets a call of that tool, anything else a text answer. Every request is recorded, so a test counts the
model calls of its thread (each thread's user text carries a ``[thread]`` marker); ``hold()`` makes the
replies wait until ``release()``, so duplicates can be sent while the run they race is still going.

A ``Stack`` is chatgate on one store: SQLite, PostgreSQL, or two app instances sharing one PostgreSQL
and one Redis (two replicas). ``Flow`` drives one replay kind in one protocol on a thread of its own:
``prepare`` brings the thread to where the request is due, ``request`` is the body a client sends (and
sends again).
"""

from __future__ import annotations

import asyncio
import itertools
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx

from chatgate.config import Config
from chatgate.history import AssistantMessage, Message, ToolMessage, UserMessage
from chatgate.store import open_store
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.providers.fakes import FakeUpstream, Recorded, Reply, fake_in_thread, openai_chunk
from tests.providers.support import provider_table

__all__ = [
    "KINDS",
    "PROTOCOLS",
    "Flow",
    "Stack",
    "ThreadModel",
    "answer_text",
    "events_of",
    "running_model",
    "start_stack",
]

KINDS = ["approval", "denial", "tool_result", "user_message"]
"""approval and denial are a useChat ``approval-responded`` part, or an AG-UI ``resume`` entry."""
PROTOCOLS = ["ag-ui", "chat"]
AGENT = "bot"
_CALL = re.compile(r"call (\w+) (\{.*\})$", re.DOTALL)
_DONE = b"data: [DONE]\n\n"


class ThreadModel(FakeUpstream):
    """The fake model: a tool call when the last user message asks for one, else ``answer N``."""

    def __init__(self) -> None:
        super().__init__()
        self._numbers = itertools.count(1)
        self._open = threading.Event()
        self._open.set()

    def hold(self) -> None:
        """Replies wait from now on, until ``release``."""
        self._open.clear()

    def release(self) -> None:
        """Let every waiting reply go."""
        self._open.set()

    def calls(self, thread: str) -> int:
        """How many model calls the requests of ``thread`` made."""
        return sum(f"[{thread}]".encode() in request.raw for request in self.requests)

    async def reply_to(self, request: Recorded) -> Reply:
        """Answer from the request's last message, once replies are not held."""
        while not self._open.is_set():
            await asyncio.sleep(0.005)
        number = next(self._numbers)
        last = request.body["messages"][-1]
        content = last.get("content")
        text = content if isinstance(content, str) else "".join(p.get("text", "") for p in content or [])
        called = _CALL.search(text) if last["role"] == "user" else None
        if called is None:
            chunks = [openai_chunk({"content": f"answer {number}"}), openai_chunk({}, "stop")]
            return Reply([*chunks, _DONE])
        function = {"name": called[1], "arguments": ""}
        start = {"index": 0, "id": f"call_{number}", "type": "function", "function": function}
        arguments = {"index": 0, "function": {"arguments": called[2]}}
        chunks = [openai_chunk({"tool_calls": [start]}), openai_chunk({"tool_calls": [arguments]})]
        return Reply([*chunks, openai_chunk({}, "tool_calls"), _DONE])


@contextmanager
def running_model() -> Iterator[ThreadModel]:
    """A ``ThreadModel`` serving on its own thread."""
    model = ThreadModel()
    with fake_in_thread(fake=model):
        yield model


@dataclass
class Stack:
    """chatgate on one store: ``urls`` of its app instances (two replicas share a store and a Redis)."""

    name: str
    store_url: str
    urls: list[str]
    servers: list[LiveServer] = field(default_factory=list)

    def url(self, index: int) -> str:
        """The instance for the ``index``-th request: requests alternate between replicas."""
        return self.urls[index % len(self.urls)]

    async def rows(self, thread: str) -> list[str]:
        """The roles of the thread's stored messages, with ``:call`` for an assistant message calling tools."""
        store = await open_store(self.store_url, Path.cwd())
        try:
            info = await store.get_thread("", AGENT, thread)
            if info is None:
                return []
            stored = await store.messages(info)
        finally:
            await store.close()
        return [_role(m.message) for m in stored]


def _role(message: Message) -> str:
    if isinstance(message, AssistantMessage):
        return "assistant:call" if message.tool_calls else "assistant"
    return {UserMessage: "user", ToolMessage: "tool"}.get(type(message), "system")


def start_stack(name: str, store_url: str, model_url: str, redis_url: str | None = None) -> Stack:
    """Start one instance on ``store_url`` (two with ``redis_url``, as two replicas)."""
    agent = {
        "model": "up:m",
        "conversations": "server",
        "client_tools": {"pick_color": {"description": "Ask the user for a color."}},
        "tools": {"record": {"function": "tests.sample_tools:record", "requires_approval": True}},
    }
    server: dict[str, Any] = {"approval_secret": "a-secret-of-enough-length"}
    if redis_url is not None:
        server["redis_url"] = redis_url
    config: Config = make_config(
        {AGENT: agent},
        providers={"up": provider_table("openai", model_url)},
        server=server,
        store={"url": store_url},
    )
    stack = Stack(name, store_url, [])
    for _ in range(2 if redis_url is not None else 1):
        live = LiveServer(create_app(config))
        live.start()
        stack.servers.append(live)
        stack.urls.append(live.url)
    return stack


def events_of(body: bytes) -> list[dict[str, Any]]:
    """The JSON frames of an SSE body, ``[DONE]`` left out."""
    lines = body.decode().split("\n")
    return [json.loads(line[6:]) for line in lines if line.startswith("data: ") and line != "data: [DONE]"]


def answer_text(events: list[dict[str, Any]]) -> str:
    """The text the model streamed, in either protocol."""
    return "".join(e.get("delta", "") for e in events if e["type"] in ("text-delta", "TEXT_MESSAGE_CONTENT"))


@dataclass
class Flow:
    """One replay ``kind`` in one ``protocol`` on ``thread``, recording tool runs in ``log``."""

    kind: str
    protocol: str
    thread: str
    log: Path
    paused: list[dict[str, Any]] = field(default_factory=list)

    @property
    def path(self) -> str:
        """The agent's route for the protocol."""
        return f"/agents/{AGENT}/{self.protocol}"

    @property
    def model_calls(self) -> int:
        """Model calls the request under test makes when answered: one, after whatever ``prepare`` made."""
        return 1

    @property
    def prepare_calls(self) -> int:
        """Model calls ``prepare`` made."""
        return 0 if self.kind == "user_message" else 1

    @property
    def executions(self) -> int:
        """How many times the tool runs once the request is answered."""
        return 1 if self.kind == "approval" else 0

    @property
    def rows(self) -> list[str]:
        """The stored rows once the request is answered."""
        if self.kind == "user_message":
            return ["user", "assistant"]
        return ["user", "assistant:call", "tool", "assistant"]

    def user(self, text: str, message_id: str = "u1") -> dict[str, Any]:
        """A user message in the protocol's shape, marked with the thread."""
        text = f"[{self.thread}] {text}"
        if self.protocol == "ag-ui":
            return {"id": message_id, "role": "user", "content": text}
        return {"id": message_id, "role": "user", "parts": [{"type": "text", "text": text}]}

    def first(self) -> dict[str, Any]:
        """The first request: a user message asking for the kind's tool call (or just a question)."""
        if self.kind in ("approval", "denial"):
            text = f"call record {json.dumps({'path': str(self.log)})}"
        elif self.kind == "tool_result":
            text = 'call pick_color {"palette": "warm"}'
        else:
            text = "hello"
        return self.body([self.user(text)])

    def body(self, messages: list[dict[str, Any]], **extra: Any) -> dict[str, Any]:
        """A request body carrying ``messages``."""
        if self.protocol == "ag-ui":
            return {"threadId": self.thread, "runId": "r1", "messages": messages, **extra}
        return {"id": self.thread, "messages": messages, "trigger": "submit-message", **extra}

    async def prepare(self, client: httpx.AsyncClient, base: str) -> None:
        """Bring the thread to the point where ``request()`` is due: a call waiting for its answer."""
        if self.kind == "user_message":
            return
        response = await client.post(base + self.path, json=self.first())
        assert response.status_code == 200, response.text
        self.paused = events_of(response.content)

    def request(self) -> dict[str, Any]:
        """The request under test, as its client sends it (and sends again)."""
        if self.kind == "user_message":
            return self.first()
        user = self.first()["messages"][0]
        approved = self.kind == "approval"
        if self.protocol == "ag-ui":
            start = next(e for e in self.paused if e["type"] == "TOOL_CALL_START")
            arguments = "".join(e["delta"] for e in self.paused if e["type"] == "TOOL_CALL_ARGS")
            function = {"name": start["toolCallName"], "arguments": arguments}
            call = {"id": start["toolCallId"], "type": "function", "function": function}
            assistant = {"id": start["parentMessageId"], "role": "assistant", "toolCalls": [call]}
            if self.kind == "tool_result":
                result = {"id": "tr1", "role": "tool", "toolCallId": start["toolCallId"], "content": "red"}
                return self.body([user, assistant, result])
            (interrupt,) = self.paused[-1]["outcome"]["interrupts"]
            status = "resolved" if approved else "cancelled"
            return self.body([user, assistant], resume=[{"interruptId": interrupt["id"], "status": status}])
        message_id = self.paused[0]["messageId"]
        start = next(e for e in self.paused if e["type"] == "tool-input-start")
        tool_input = next(e for e in self.paused if e["type"] == "tool-input-available")["input"]
        part: dict[str, Any] = {"type": f"tool-{start['toolName']}", "toolCallId": start["toolCallId"]}
        if self.kind == "tool_result":
            part.update(state="output-available", input=tool_input, output={"color": "red"})
        else:
            approval = next(e for e in self.paused if e["type"] == "tool-approval-request")["approvalId"]
            part.update(state="approval-responded", input=tool_input, approval={"id": approval, "approved": approved})
        assistant = {"id": message_id, "role": "assistant", "parts": [{"type": "step-start"}, part]}
        return self.body([user, assistant], messageId=message_id)
