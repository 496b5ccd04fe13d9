"""The HTTP routes of stored threads, under ``/agents/{agent}/threads``.

- ``GET .../threads``: the caller's threads (id, title or else the first user text, archived, updated time);
- ``GET .../threads/{id}``: its system-message state (never the rendered prompt) and audit trail;
- ``GET .../threads/{id}/messages``: the stored messages as useChat UIMessages;
- ``PATCH .../threads/{id}``: ``{"title": "..." | null, "archived": bool}`` (either or both): renames it
  (the title its first answer may have written too) and/or archives it; answers as the GET does;
- ``DELETE .../threads/{id}``: stops a running turn first (its upstream request closed), then removes it;
- ``PUT .../threads/{id}/system-message``: ``{"prompt": NAME}`` | ``{"system_message": "text"}`` |
  ``{"system_message": null}``: seeds before the first turn, swaps after it (history kept);
- ``POST .../threads/{id}/reset``: clears the history; ``{}`` keeps the system message, the same
  bodies as the PUT replace it.

Threads are the caller's own (``Caller.owner``): another owner's thread is a 404. Free text under
``manage_system_prompt = "server"`` needs an admin caller; named prompts need only the agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.access import read_body
from chatgate.caller import Caller
from chatgate.errors import RequestError, invalid_request
from chatgate.history import Message
from chatgate.ids import ClientId, StorableText
from chatgate.protocol import RendersMessages, UIProtocol
from chatgate.run import Agent
from chatgate.store import SystemState, ThreadInfo, ThreadStore
from chatgate.web.services import running_of
from chatgate.web.thread_changes import apply_change, change_from, json_object, remove_thread
from chatgate.web.thread_paths import caller_thread, path_thread_id, thread_context

__all__ = [
    "SystemMessageBody",
    "iso_time",
    "thread_routes",
    "ui_messages_of",
]

_BASE = "/agents/{agent}/threads"


class SystemMessageBody(BaseModel):
    """``{"prompt": NAME}`` or ``{"system_message": "text" | null}``; ``revision`` guards lost updates."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    prompt: ClientId | None = None
    system_message: StorableText | None = None
    revision: int | None = None


_BODY: TypeAdapter[SystemMessageBody] = TypeAdapter(SystemMessageBody)


def thread_routes(protocols: Sequence[UIProtocol]) -> list[BaseRoute]:
    """The thread routes; ``GET .../messages`` speaks the installed protocol that ``serves_messages``."""
    messages_protocol = ui_messages_of(protocols)
    names = [protocol.name for protocol in protocols]

    async def list_threads(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        threads = await store.list_threads(caller.owner, agent.name)
        listed = [
            {"id": t.id, "title": t.title, "archived": t.archived, "updated_at": iso_time(t.updated_at)}
            for t in threads
        ]
        return JSONResponse({"threads": listed})

    async def get_thread(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread = await caller_thread(store, agent, caller, path_thread_id(request))
        return JSONResponse(await _describe(store, thread))

    async def get_messages(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread = await caller_thread(store, agent, caller, path_thread_id(request))
        if messages_protocol is None:
            raise RequestError(404, "not_found", "the vercel-ai protocol is not installed")
        stored = await store.messages(thread)
        history = [(_with_id(m.message, m.public_id), m.status) for m in stored]
        return JSONResponse({"messages": messages_protocol.ui_messages(history, agent.config)})

    async def patch_thread(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread = await caller_thread(store, agent, caller, path_thread_id(request))  # another owner's: 404 first
        body = await json_object(request)
        if not set(body) <= {"title", "archived"}:
            raise RequestError(422, "invalid_request", 'the body is {"title": "..." | null, "archived": bool}')
        thread = await apply_change(store, thread, change_from(body, "title"))
        return JSONResponse(await _describe(store, thread))

    async def delete_thread(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread = await caller_thread(store, agent, caller, path_thread_id(request))
        await remove_thread(request, store, thread, names)
        return Response(status_code=204)

    async def put_system_message(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread_id = path_thread_id(request)
        body = await _body(request)
        if "prompt" not in body.model_fields_set and "system_message" not in body.model_fields_set:
            raise RequestError(422, "invalid_request", "give prompt or system_message")
        system = _system_state(agent, caller, body)
        thread_id = request.path_params["thread_id"]
        await _recover_dead_run(request, await store.get_thread(caller.owner, agent.name, thread_id))
        thread = await store.set_system(
            caller.owner, agent.name, thread_id, system, by=caller.limits_id, revision=body.revision
        )
        return JSONResponse(await _describe(store, thread))

    async def reset_thread(request: Request) -> Response:
        agent, store, caller = thread_context(request)
        thread_id = path_thread_id(request)
        known = await caller_thread(store, agent, caller, thread_id)  # another owner's: 404 before any body
        body = await _body(request)
        await _recover_dead_run(request, known)
        replace_with = body.model_fields_set & {"prompt", "system_message"}
        system = _system_state(agent, caller, body) if replace_with else None
        thread = await store.reset(
            caller.owner, agent.name, thread_id, system, by=caller.limits_id, revision=body.revision
        )
        return JSONResponse(await _describe(store, thread))

    one = _BASE + "/{thread_id}"
    return [
        Route(_BASE, list_threads, methods=["GET"]),
        Route(one, get_thread, methods=["GET"]),
        Route(one, patch_thread, methods=["PATCH"]),
        Route(one, delete_thread, methods=["DELETE"]),
        Route(one + "/messages", get_messages, methods=["GET"]),
        Route(one + "/system-message", put_system_message, methods=["PUT"]),
        Route(one + "/reset", reset_thread, methods=["POST"]),
    ]


async def _recover_dead_run(request: Request, thread: ThreadInfo | None) -> None:
    """Before a change that needs the thread free: save the turn of its run if that run's producer died."""
    recovery = running_of(request).recovery
    if thread is not None and thread.active_run is not None and recovery is not None:
        await recovery.recover(thread)


async def _body(request: Request) -> SystemMessageBody:
    registry = running_of(request).agents
    raw = await read_body(request, registry.config.server)  # capped: a 403 may need the body first
    try:
        return _BODY.validate_json(raw or b"{}")
    except ValidationError as exc:
        raise invalid_request(exc) from None


def ui_messages_of(protocols: Sequence[UIProtocol]) -> RendersMessages | None:
    """The installed protocol that serves stored messages (the core never imports adapters)."""
    for protocol in protocols:
        if protocol.threads.serves_messages and isinstance(protocol, RendersMessages):
            return protocol
    return None


def _system_state(agent: Agent, caller: Caller, body: SystemMessageBody) -> SystemState:
    fields = body.model_fields_set & {"prompt", "system_message"}
    if len(fields) != 1:
        raise RequestError(422, "invalid_request", "give exactly one of prompt or system_message")
    if "prompt" in fields:
        if body.prompt is None or body.prompt not in agent.config.prompts:
            known = ", ".join(sorted(agent.config.prompts)) or "none"
            raise RequestError(
                422, "unknown_prompt", f"agent {agent.name!r} has no prompt {body.prompt!r} (known: {known})"
            )
        return SystemState("prompt", body.prompt)
    if body.system_message is None:
        return SystemState()
    if agent.config.manage_system_prompt == "server" and not caller.admin:
        raise RequestError(
            403, "admin_required", "free-text system messages on this agent need an admin key; use a named prompt"
        )
    return SystemState("text", body.system_message)


async def _describe(store: ThreadStore, thread: ThreadInfo) -> dict[str, Any]:
    audit = await store.audit(thread)
    summary = await store.context_summary(thread)
    return {
        "id": thread.id,
        "agent": thread.agent,
        "title": thread.title,
        "archived": thread.archived,
        "system": thread.system.as_json(),
        "revision": thread.revision,
        "running": thread.active_run is not None,
        "created_at": iso_time(thread.created_at),
        "updated_at": iso_time(thread.updated_at),
        "audit": [
            {"action": entry.action, "system": entry.system.as_json(), "by": entry.by, "at": iso_time(entry.at)}
            for entry in audit
        ],
        # What the summary covers, never its text (model output, like an answer, but one no guard watched).
        "summary": None
        if summary is None
        else {
            "through": summary.through,
            "messages": summary.messages,
            "tokens": summary.tokens,
            "model": summary.model,
            "created_at": iso_time(summary.created_at),
        },
    }


def iso_time(timestamp: float) -> str:
    """A store's timestamp (seconds) as ISO 8601 in UTC, ``Z``-suffixed."""
    return datetime.fromtimestamp(timestamp, UTC).isoformat().replace("+00:00", "Z")


def _with_id(message: Message, message_id: str) -> Message:
    return replace(message, id=message_id)
