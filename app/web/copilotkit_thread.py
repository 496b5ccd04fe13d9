"""One CopilotKit thread, ``{base}/threads/{threadId}``: its messages, rename, archive, delete.

The routes of ``@copilotkit/runtime`` 1.75's thread handlers, over chatgate's store and scoped like
every thread route: another key's (or person's) thread is a 404, never a 403.

- ``GET .../threads/{id}/messages?agentId=``: ``{"messages"}``, the stored thread as AG-UI messages
  (``agentId`` absent: CopilotKit's ``default`` agent, since the runtime sends none);
- ``PATCH .../threads/{id}`` ``{"agentId", "name"?, "archived"?}``: renames (the thread's one title)
  and/or archives or unarchives it; answers the thread as the list shows it;
- ``POST .../threads/{id}/archive`` ``{"agentId"}``: ``{"threadId", "archived": true}``;
- ``DELETE .../threads/{id}`` ``{"agentId"}``: stops a running turn, then ``{"threadId", "deleted": true}``.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chatgate.access import resolve_agent
from chatgate.caller import caller_of
from chatgate.errors import RequestError
from chatgate.ids import check_thread_id
from chatgate.protocol import RendersMessages, UIProtocol
from chatgate.run import AgentRegistry
from chatgate.store import ThreadInfo, ThreadStore
from chatgate.web.copilotkit_threads import runtime_thread
from chatgate.web.services import running_of
from chatgate.web.thread_changes import ThreadChange, apply_change, change_from, json_object, remove_thread
from chatgate.web.thread_paths import caller_thread, unknown_thread

__all__ = ["thread_endpoints"]

Endpoint = Callable[[Request], Awaitable[Response]]
AgentFor = Callable[[AgentRegistry, str], str]


def thread_endpoints(
    agent_for: AgentFor, default_agent: str, carried: UIProtocol, protocols: Sequence[UIProtocol]
) -> dict[str, Endpoint]:
    """The endpoints of one thread: ``messages``, ``update`` (PATCH), ``delete``, ``archive``.

    ``agent_for`` names the chatgate agent of a CopilotKit agent id; ``default_agent`` is the id meant
    when a request names none.
    """
    names = [protocol.name for protocol in protocols]

    async def messages(request: Request) -> Response:
        agent_id = request.query_params.get("agentId") or default_agent
        store, thread = await _thread(request, agent_for, agent_id)
        if not isinstance(carried, RendersMessages):
            raise RequestError(404, "not_found", f"the {carried.name} protocol renders no stored messages")
        history = [(replace(m.message, id=m.public_id), m.status) for m in await store.messages(thread)]
        agent = running_of(request).agents.get(thread.agent)
        rendered = carried.ui_messages(history, agent.config) if agent is not None else []
        return JSONResponse({"messages": rendered})

    async def update(request: Request) -> Response:
        body = await json_object(request)
        store, thread = await _thread(request, agent_for, _agent_id(body))
        thread = await apply_change(store, thread, change_from(body, "name"))
        return JSONResponse(runtime_thread(thread, thread.title, _agent_id(body)))

    async def archive(request: Request) -> Response:
        body = await json_object(request)
        store, thread = await _thread(request, agent_for, _agent_id(body))
        await apply_change(store, thread, ThreadChange(archived=True))
        return JSONResponse({"threadId": thread.id, "archived": True})

    async def delete(request: Request) -> Response:
        body = await json_object(request)
        store, thread = await _thread(request, agent_for, _agent_id(body))
        await remove_thread(request, store, thread, names)
        return JSONResponse({"threadId": thread.id, "deleted": True})

    return {"messages": messages, "update": update, "archive": archive, "delete": delete}


def _agent_id(body: dict[str, object]) -> str:
    agent_id = body.get("agentId")
    if not isinstance(agent_id, str) or not agent_id:
        raise RequestError(422, "invalid_request", "agentId: the agent of the thread is required")
    return agent_id


async def _thread(request: Request, agent_for: AgentFor, agent_id: str) -> tuple[ThreadStore, ThreadInfo]:
    """The store and the caller's thread ``{thread_id}`` on ``agent_id``; 404 when the caller has none."""
    thread_id = check_thread_id("threadId", request.path_params["thread_id"])
    running = running_of(request)
    caller = caller_of(request)
    agent = resolve_agent(running.agents, agent_for(running.agents, agent_id), caller)
    store = running.store
    if agent.config.conversations != "server":
        raise unknown_thread(thread_id)  # an agent that keeps no threads has none
    if store is None:
        raise RequestError(503, "store_unavailable", "no store is open; restart the server after enabling one")
    return store, await caller_thread(store, agent, caller, thread_id)
