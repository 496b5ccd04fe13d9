"""What every route under a stored thread reads first: its agent, the store, the caller and the thread.

The thread routes (app/web/threads.py) and the run routes (app/web/runs.py: resume, stop) share these, so
a thread is found, and refused, the same way on each: a 422 for an id the id rule refuses, a 404 for an
agent without conversations or another owner's thread, a 503 without a store.
"""

from __future__ import annotations

from starlette.requests import Request

from chatgate.access import resolve_agent
from chatgate.caller import Caller, caller_of
from chatgate.errors import RequestError
from chatgate.ids import check_thread_id
from chatgate.run import Agent
from chatgate.store import ThreadInfo, ThreadStore
from chatgate.web.services import running_of

__all__ = ["caller_thread", "path_thread_id", "thread_context", "unknown_thread"]


def path_thread_id(request: Request) -> str:
    """The ``{thread_id}`` of a route's path, checked by the one rule for thread ids (app/ids.py); else 422."""
    return check_thread_id("thread_id", request.path_params["thread_id"])


def thread_context(request: Request) -> tuple[Agent, ThreadStore, Caller]:
    """The agent of a ``/agents/{agent}/threads`` route, the store and the caller; refusals as 4xx/503."""
    running = running_of(request)
    registry = running.agents
    caller = caller_of(request)
    name = request.path_params["agent"]
    agent = resolve_agent(registry, name, caller)
    if agent.config.conversations != "server":
        raise RequestError(404, "no_threads", f"agent {name!r} keeps no conversations (conversations = 'client')")
    store = running.store
    if store is None:
        raise RequestError(503, "store_unavailable", "no store is open; restart the server after enabling one")
    return agent, store, caller


async def caller_thread(store: ThreadStore, agent: Agent, caller: Caller, thread_id: str) -> ThreadInfo:
    """The caller's thread ``thread_id`` of ``agent``; 404 when it has none (another key's is none of its)."""
    thread = await store.get_thread(caller.owner, agent.name, thread_id)
    if thread is None:
        raise unknown_thread(thread_id)
    return thread


def unknown_thread(thread_id: str) -> RequestError:
    """The 404 ``unknown_thread`` for ``thread_id``."""
    return RequestError(404, "unknown_thread", f"no thread {thread_id!r} here")
