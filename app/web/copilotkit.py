"""CopilotKit's runtime protocol, served by chatgate itself: a ``runtimeUrl`` needs no Node runtime.

What ``@copilotkit/runtime`` 1.75's v2 fetch router serves in its multi-route mode, under
``[copilotkit] path`` (docs/copilotkit.md has the table of every route):

- ``GET {base}/info``: the caller's agents (name, description, AG-UI capabilities), and nothing
  advertised that is not served: the thread list and mutations, not ``inspect`` (its events and state are
  not served), no suggestions, no transcription.
- ``POST {base}/agent/{agent}/run``: the agent's AG-UI run, through the very chat endpoint of
  ``/agents/{agent}/ag-ui`` (app/web/chat.py): the same checks, limits, prompt policy, stored threads.
- ``POST {base}/agent/{agent}/connect``: the AG-UI reconnect of a stored thread, never a new run; from
  ``lastSeenEventId`` on, when it names the run going.
- ``POST {base}/agent/{agent}/stop/{thread_id}``: the stored thread's stop (app/web/runs.py).
- ``GET {base}/threads?agentId=``: the caller's stored threads, paged (app/web/copilotkit_threads.py);
- ``GET {base}/threads/{id}/messages``, ``PATCH``/``DELETE {base}/threads/{id}``, ``POST .../archive``:
  one thread's messages, rename, archive, delete (app/web/copilotkit_thread.py).
- ``POST {base}``: the single-route transport, each envelope handed to one of the above
  (app/web/copilotkit_single.py).

Every other route under the base answers the runtime's error shape, ``{"error", "code", "message"}``:
501 for a runtime route chatgate does not serve, 404 for a path the runtime has none at.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.caller import caller_of
from chatgate.errors import RequestError
from chatgate.protocol import AgentFacts, DescribesAgents, UIProtocol
from chatgate.run import AgentRegistry
from chatgate.strict_json import client_json
from chatgate.threads import RunCursor
from chatgate.web.capabilities import agent_facts
from chatgate.web.chat import chat_endpoint
from chatgate.web.copilotkit_single import not_served, runtime_error, single_route_endpoint
from chatgate.web.copilotkit_thread import thread_endpoints
from chatgate.web.copilotkit_threads import threads_endpoint
from chatgate.web.runs import stop_endpoint
from chatgate.web.services import running_of

__all__ = ["DEFAULT_AGENT_ID", "RUNTIME_VERSION", "copilotkit_routes", "last_seen_event"]

logger = logging.getLogger("chatgate.copilotkit")

RUNTIME_VERSION = "1.75.0"
"""The ``@copilotkit/runtime`` whose v2 runtime protocol these routes implement, as ``/info`` reports it."""

DEFAULT_AGENT_ID = "default"
"""The agent id CopilotKit's components use when given none: chatgate's default agent, unless one is so named."""

CARRIED_PROTOCOL = "ag-ui"
"""The protocol CopilotKit's runtime carries its runs in: its agents are AG-UI agents."""

_NOT_SERVED = frozenset(
    {
        "suggest",
        "transcribe",
        "subscribe",
        "clear",
        "events",
        "state",
        "memories",
        "annotate",
        "inspector-metadata",
        "inspector-learning",
        "cpk-debug-events",
    }
)
"""Path segments of the runtime's routes that chatgate does not serve (501 rather than 404)."""

_ALL_METHODS = ["GET", "POST", "PUT", "PATCH", "DELETE"]

Endpoint = Callable[[Request], Awaitable[Response]]


def copilotkit_routes(base: str | None, protocols: Sequence[UIProtocol]) -> list[BaseRoute]:
    """The runtime's routes under ``base``; none without a base, or without the AG-UI protocol installed."""
    if base is None:
        return []
    carried = next((protocol for protocol in protocols if protocol.name == CARRIED_PROTOCOL), None)
    if carried is None:
        logger.warning("[copilotkit] path is set but the %s protocol is not installed: not served", CARRIED_PROTOCOL)
        return []
    served = {
        "info": _info_endpoint(carried),
        "agent/run": _default_alias(chat_endpoint(carried)),
        "agent/connect": _default_alias(chat_endpoint(carried, reconnect=last_seen_event)),
        "agent/stop": _default_alias(stop_endpoint(protocols)),
    }
    thread = thread_endpoints(_agent_for, DEFAULT_AGENT_ID, carried, protocols)
    return [
        Route(base, single_route_endpoint(served), methods=["POST"]),
        Route(f"{base}/info", served["info"], methods=["GET"]),
        Route(f"{base}/agent/{{agent}}/run", served["agent/run"], methods=["POST"]),
        Route(f"{base}/agent/{{agent}}/connect", served["agent/connect"], methods=["POST"]),
        Route(f"{base}/agent/{{agent}}/stop/{{thread_id}}", served["agent/stop"], methods=["POST"]),
        Route(f"{base}/threads", threads_endpoint(_agent_for), methods=["GET"]),
        Route(f"{base}/threads/{{thread_id}}/messages", thread["messages"], methods=["GET"]),
        Route(f"{base}/threads/{{thread_id}}/archive", thread["archive"], methods=["POST"]),
        Route(f"{base}/threads/{{thread_id}}", thread["update"], methods=["PATCH"]),
        Route(f"{base}/threads/{{thread_id}}", thread["delete"], methods=["DELETE"]),
        Route(f"{base}/{{rest:path}}", _not_served, methods=_ALL_METHODS),
    ]


def _default_alias(endpoint: Endpoint) -> Endpoint:
    """``endpoint`` with CopilotKit's agent id ``default`` meaning chatgate's default agent, unless one is so named."""

    async def aliased(request: Request) -> Response:
        params = request.path_params
        if params.get("agent") == DEFAULT_AGENT_ID:
            params["agent"] = _agent_for(running_of(request).agents, DEFAULT_AGENT_ID)
        return await endpoint(request)

    return aliased


def _agent_for(registry: AgentRegistry, agent_id: str) -> str:
    """The chatgate agent a CopilotKit agent id names: ``default`` is the default agent, unless one is so named."""
    default = registry.default
    if agent_id == DEFAULT_AGENT_ID and registry.get(agent_id) is None and default is not None:
        return default.name
    return agent_id


def last_seen_event(body: bytes) -> RunCursor | None:
    """A connect's ``lastSeenEventId``: ``{runId}:{index}``, the index of the run's last event the client has.

    The index counts the run's own events from ``RUN_STARTED`` (0), as its first stream sent them, and never
    the ``MESSAGES_SNAPSHOT`` a reconnect adds. Absent or null: None. 422 ``invalid_event_id`` otherwise.
    """
    value = client_json(body, "(body)").get("lastSeenEventId") if body else None
    if value is None:
        return None
    run_id, _, index = value.rpartition(":") if isinstance(value, str) else ("", "", "")
    if not run_id or not index.isdigit() or len(index) > _MAX_INDEX_DIGITS:
        problem = "lastSeenEventId: an event id is '{runId}:{index}', the index counting the run's events from 0"
        raise RequestError(422, "invalid_event_id", problem)
    return RunCursor(run_id, int(index) + 1)


_MAX_INDEX_DIGITS = 9


def _info_endpoint(carried: UIProtocol) -> Callable[[Request], Awaitable[Response]]:
    async def info(request: Request) -> Response:
        """The runtime's ``/info``: the caller's agents, and what of the runtime is served."""
        registry = running_of(request).agents
        caller = caller_of(request)
        agents = {
            agent.name: _agent_info(carried, agent.name, agent.config.description, agent_facts(agent, registry.config))
            for agent in registry
            if caller.may_use(agent.name)
        }
        aliased = _agent_for(registry, DEFAULT_AGENT_ID)
        if aliased != DEFAULT_AGENT_ID and aliased in agents:  # <CopilotChat /> without agentId finds it
            agents[DEFAULT_AGENT_ID] = {**agents[aliased], "name": DEFAULT_AGENT_ID}
        return JSONResponse(
            {
                "version": RUNTIME_VERSION,
                "agents": agents,
                "mode": "sse",
                "audioFileTranscriptionEnabled": False,
                "threadEndpoints": {"list": True, "inspect": False, "mutations": True, "realtimeMetadata": False},
                "suggestions": False,
                "a2uiEnabled": False,
                "openGenerativeUIEnabled": False,
                "telemetryDisabled": True,
            }
        )

    return info


def _agent_info(carried: UIProtocol, name: str, description: str, facts: AgentFacts) -> dict[str, Any]:
    """One agent of ``/info``: its name, description and, when the protocol describes agents, capabilities."""
    entry: dict[str, Any] = {"name": name, "description": description, "className": "chatgate"}
    if isinstance(carried, DescribesAgents):
        entry["capabilities"] = dict(carried.capabilities(facts))
    return entry


async def _not_served(request: Request) -> Response:
    """A runtime route chatgate does not serve (501), or no runtime route at all (404), in its error shape."""
    segments = request.path_params.get("rest", "").split("/")
    route = next((segment for segment in reversed(segments) if segment in _NOT_SERVED), None)
    if route is not None:
        return not_served(f"{route!r} route")
    return runtime_error(404, "Not found", "not_found", f"no CopilotKit runtime route at {request.url.path!r}")
