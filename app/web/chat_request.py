"""A chat request's trace: started once its agent is known, and ended with the refusal if it is refused.

``trace_chat`` starts the request's ``RunTrace`` (None when tracing is off) and leaves it in the scope;
``traced_refusals`` wraps the chat endpoint so a request refused (a 4xx) or failing before its run
started ends its span with what the client was told. Once the run starts, the run ends the span.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import Response

from chatgate.caller import Caller
from chatgate.protocol import UIProtocol
from chatgate.run import Agent
from chatgate.tracing import RunTrace
from chatgate.web.services import services_of

__all__ = ["trace_chat", "traced_refusals"]

_TRACE_KEY = "chatgate.run_trace"

Endpoint = Callable[[Request], Awaitable[Response]]


def trace_chat(request: Request, agent: Agent, protocol: UIProtocol, caller: Caller) -> RunTrace | None:
    """Start the ``invoke_agent`` span of this chat request, or None when tracing is off."""
    telemetry = services_of(request.app).telemetry
    if telemetry is None:
        return None
    version = protocol.version(agent.config)
    trace = RunTrace(
        telemetry, agent, protocol=protocol.name, protocol_version=version, caller=caller, headers=request.headers
    )
    request.scope[_TRACE_KEY] = trace
    return trace


def traced_refusals(endpoint: Endpoint) -> Endpoint:
    """``endpoint``, ending its request's span with the error when it raises (the request is refused)."""

    async def traced(request: Request) -> Response:
        try:
            return await endpoint(request)
        except BaseException as exc:
            trace: RunTrace | None = request.scope.get(_TRACE_KEY)
            if trace is not None:
                trace.refused(exc)
            raise

    return traced
