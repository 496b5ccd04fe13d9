"""Every HTTP request, observed once: its ``x-request-id``, and the requests counter by status.

``observe_request`` wraps the whole app (see ``ChatgateApp``), outside every middleware, so refusals
and errors get the header too. It sees only the response's start: a stream's body goes to the
server's own ``send`` (app/web/sse.py), so nothing here runs per event.

It also opens the request's ``RequestTrace`` slot, which a traced chat request fills with its trace id
for the log lines (app/telemetry/logs.py). The chat endpoint names its protocol and agent in the scope
(``label_request``); other routes count with both empty. The ``key`` label is the caller's key id, never the key.
"""

from __future__ import annotations

from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from chatgate.caller import caller_of
from chatgate.telemetry.logs import REQUEST_ID, REQUEST_TRACE, RequestTrace, new_request_id, valid_request_id
from chatgate.telemetry.metrics import Metrics, key_label

__all__ = ["REQUEST_ID_HEADER", "label_request", "observe_request"]

REQUEST_ID_HEADER = "x-request-id"
_HEADER = REQUEST_ID_HEADER.encode()
_LABELS_KEY = "chatgate.request_labels"


def label_request(scope: Scope, protocol: str, agent: str = "") -> None:
    """Name the protocol and (once resolved) the agent of a chat request, for the requests counter."""
    scope[_LABELS_KEY] = (protocol, agent)


async def observe_request(scope: Scope, receive: Receive, send: Send, app: ASGIApp, metrics: Metrics) -> None:
    """Run ``app`` for one HTTP request with its request id set, adding the header and counting the answer."""
    client_id = next((value for name, value in scope["headers"] if name == _HEADER), None)
    request_id = client_id.decode("latin-1") if client_id is not None else None
    if not valid_request_id(request_id):
        request_id = new_request_id()
    assert request_id is not None
    header = (_HEADER, request_id.encode("latin-1"))

    async def send_with_id(message: Message) -> None:
        if message["type"] == "http.response.start":
            message["headers"] = [*message.get("headers", ()), header]
            protocol, agent = scope.get(_LABELS_KEY, ("", ""))
            key = key_label(caller_of(HTTPConnection(scope)))
            metrics.count_request(protocol, agent, key, message["status"])
        await send(message)

    token = REQUEST_ID.set(request_id)
    trace_token = REQUEST_TRACE.set(RequestTrace())
    try:
        await app(scope, receive, send_with_id)
    finally:
        REQUEST_TRACE.reset(trace_token)
        REQUEST_ID.reset(token)
