"""The routes that reach a running run: resume and stop (docs/resume.md).

- ``GET /agents/{agent}/{route}/{id}/stream`` (and under the protocol's default path): useChat's
  ``resume: true``. 422 for an ``id`` the id rule refuses (app/ids.py); 204 when nothing runs on the
  caller's thread ``id`` (or it cannot be replayed, or was started in another protocol); otherwise
  the run's stream from its start, then live, to its end.
- ``POST /agents/{agent}/threads/{id}/stop``: stops the thread's running run, on whichever replica
  produces it. ``{"stopped": true}``, or ``false`` when nothing was running.

Both check the agent and the caller as the chat route does; a resume holds a stream slot.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.access import hold_stream_slot, resolve_agent
from chatgate.caller import caller_of
from chatgate.protocol import UIProtocol
from chatgate.telemetry import label_request
from chatgate.threads import replay_run, request_stop, run_log_id
from chatgate.web.services import running_of, services_of
from chatgate.web.sse import EventStreamResponse
from chatgate.web.thread_paths import caller_thread, path_thread_id, thread_context

__all__ = ["resume_endpoint", "stop_endpoint", "stop_routes"]


def resume_endpoint(protocol: UIProtocol) -> Callable[[Request], Awaitable[Response]]:
    """``GET .../{thread_id}/stream`` for ``protocol``'s chat routes."""

    async def resume(request: Request) -> Response:
        started = time.perf_counter()
        label_request(request.scope, protocol.name)
        services, running = services_of(request.app), running_of(request)
        registry = running.agents
        agent = resolve_agent(registry, request.path_params.get("agent"), caller_of(request))
        label_request(request.scope, protocol.name, agent.name)
        thread_id = path_thread_id(request)
        store = running.store
        if agent.config.conversations != "server" or store is None:
            return Response(status_code=204)
        thread = await store.get_thread(caller_of(request).owner, agent.name, thread_id)
        if thread is None or thread.active_run is None:
            return Response(status_code=204)
        log_id = run_log_id(thread.active_run, protocol.name)
        recovery = running.recovery
        lost = partial(recovery.recover, thread) if recovery is not None else None
        ending = partial(protocol.interrupted, agent.config)
        frames = await replay_run(running.run_log, log_id, ending, lost=lost)
        if frames is None:
            return Response(status_code=204)
        metrics = services.metrics

        async def follow() -> EventStreamResponse:
            return EventStreamResponse(
                frames,
                protocol.headers(agent.config),
                keepalive=registry.config.server.keepalive_seconds,
                meter=metrics.stream(protocol.name, agent.name, started),
                joined=True,
            )

        try:
            # Following a run this process runs for the same key costs no second slot.
            run = next((r.task for r in services.thread_runs if r.run_id == thread.active_run), None)
            return await hold_stream_slot(request, follow, services=services, follows=run)  # type: ignore[return-value]
        except BaseException:
            await frames.aclose()  # refused a slot: stop following the run now, not when collected
            raise

    return resume


def stop_endpoint(protocols: Sequence[UIProtocol]) -> Callable[[Request], Awaitable[Response]]:
    """Stop the running run of the ``{agent}``'s stored thread ``{thread_id}``, on whichever replica produces it."""
    names = [protocol.name for protocol in protocols]

    async def stop(request: Request) -> Response:
        """{"stopped": bool}: false when nothing was running."""
        agent, store, caller = thread_context(request)
        thread = await caller_thread(store, agent, caller, path_thread_id(request))
        run_log = running_of(request).run_log
        return JSONResponse({"stopped": await request_stop(run_log, thread, names)})

    return stop


def stop_routes(protocols: Sequence[UIProtocol]) -> list[BaseRoute]:
    """``POST /agents/{agent}/threads/{thread_id}/stop``."""
    return [Route("/agents/{agent}/threads/{thread_id}/stop", stop_endpoint(protocols), methods=["POST"])]
