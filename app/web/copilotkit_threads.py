"""CopilotKit's thread list, ``GET {base}/threads?agentId=``: the caller's stored threads, a page at a time.

The runtime's list shape (``{"threads": [...], "nextCursor"}``, each thread ``id``, ``name``,
``agentId``, ``archived``, ``createdAt``, ``updatedAt``) over chatgate's store: only the key's (or the
signed-in person's) threads on an agent it may use, most recently updated first, paged by an opaque
cursor that names the last thread listed, so a page reads only its own rows. Archived threads are left
out unless ``includeArchived=true``, as the runtime does.
"""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from chatgate.access import resolve_agent
from chatgate.caller import caller_of
from chatgate.errors import RequestError
from chatgate.run import Agent, AgentRegistry
from chatgate.store import ThreadInfo, ThreadSummary
from chatgate.web.services import running_of
from chatgate.web.threads import iso_time

__all__ = ["MAX_PAGE", "runtime_thread", "threads_endpoint"]

MAX_PAGE = 200
"""The most threads one page lists (``limit``); 50 when the client names none."""

_DEFAULT_PAGE = 50


def threads_endpoint(agent_for: Callable[[AgentRegistry, str], str]) -> Callable[[Request], Awaitable[Response]]:
    """``GET {base}/threads``; ``agent_for`` names the chatgate agent of a CopilotKit agent id."""

    async def list_threads(request: Request) -> Response:
        """The caller's threads on ``agentId``: a page, and the cursor of the next (null after the last)."""
        agent_id = request.query_params.get("agentId", "")
        if not agent_id:
            raise RequestError(422, "invalid_request", "agentId: the agent whose threads to list is required")
        registry = running_of(request).agents
        agent = resolve_agent(registry, agent_for(registry, agent_id), caller_of(request))
        return await _page(request, agent, agent_id)

    return list_threads


async def _page(request: Request, agent: Agent, agent_id: str) -> Response:
    """A page of the caller's threads on ``agent``, listed under the id the client asked by."""
    running = running_of(request)
    store = running.store
    if agent.config.conversations != "server" or store is None:
        return JSONResponse({"threads": [], "nextCursor": None})  # an agent that keeps none has none
    limit = _limit(request.query_params.get("limit"))
    after = _cursor(request.query_params.get("cursor"))
    archived = _include_archived(request.query_params.get("includeArchived"))
    owner = caller_of(request).owner
    threads = await store.list_threads(owner, agent.name, limit=limit + 1, after=after, archived=archived)
    page, more = threads[:limit], len(threads) > limit
    return JSONResponse(
        {
            "threads": [runtime_thread(thread, thread.title or None, agent_id) for thread in page],
            "nextCursor": _next_cursor(page[-1]) if more else None,
        }
    )


def runtime_thread(thread: ThreadSummary | ThreadInfo, name: str | None, agent_id: str) -> dict[str, object]:
    """A thread in the runtime's shape, listed under the agent id the client asked by."""
    return {
        "id": thread.id,
        "name": name,
        "agentId": agent_id,
        "archived": thread.archived,
        "createdAt": iso_time(thread.created_at),
        "updatedAt": iso_time(thread.updated_at),
    }


def _limit(value: str | None) -> int:
    if value is None:
        return _DEFAULT_PAGE
    if not value.isdigit() or not 1 <= int(value) <= MAX_PAGE:
        raise RequestError(422, "invalid_request", f"limit: a whole number from 1 to {MAX_PAGE} (got {value!r})")
    return int(value)


def _include_archived(value: str | None) -> bool:
    if value not in (None, "true", "false"):
        raise RequestError(422, "invalid_request", f"includeArchived: true or false (got {value!r})")
    return value == "true"


def _next_cursor(last: ThreadSummary) -> str:
    raw = json.dumps([last.updated_at, last.id]).encode()
    return base64.urlsafe_b64encode(raw).decode().rstrip("=")


def _cursor(value: str | None) -> tuple[float, str] | None:
    """The thread a page starts after, from a cursor this route gave; 422 ``invalid_cursor`` otherwise."""
    if value is None:
        return None
    try:
        updated_at, thread_id = json.loads(base64.urlsafe_b64decode(value + "=" * (-len(value) % 4)))
    except (ValueError, TypeError, binascii.Error):
        raise RequestError(422, "invalid_cursor", "cursor: not one this route gave; start again without it") from None
    if not isinstance(updated_at, int | float) or isinstance(updated_at, bool) or not isinstance(thread_id, str):
        raise RequestError(422, "invalid_cursor", "cursor: not one this route gave; start again without it")
    return float(updated_at), thread_id
