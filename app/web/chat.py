"""The chat route of each protocol: one run request, from its body to its stream.

``POST /agents/{agent}/{route}`` (and the protocol's short path for the default agent) decode the body
in the protocol, check it against the limits and the files, take a stream slot and stream the run; on an
agent with ``conversations = "server"`` the thread stage reconciles the request with the stored thread
first (app/threads/). CopilotKit's runtime routes (app/web/copilotkit.py) run through the same endpoint.
"""

from __future__ import annotations

import time
from collections.abc import Awaitable, Callable
from dataclasses import replace

from starlette.requests import Request
from starlette.responses import Response

from chatgate.access import check_request_limits, hold_stream_slot, read_body, resolve_agent
from chatgate.approvals import approval_scope
from chatgate.caller import Caller, caller_of
from chatgate.config import Config
from chatgate.errors import RequestError
from chatgate.files import FileInliner, check_files, referenced_file, resolve_references
from chatgate.protocol import UIProtocol, retracts_steps
from chatgate.run import VARIANT_HEADER, Agent, choose_variant, run_agent
from chatgate.run_input import RunInput
from chatgate.telemetry import label_request
from chatgate.threads import RunCursor, ThreadTitler, open_thread_turn, thread_titler
from chatgate.tracing import RunTrace
from chatgate.usage import RunAccount, UsageAccounts, run_account, side_account
from chatgate.web.chat_request import trace_chat, traced_refusals
from chatgate.web.services import running_of, services_of
from chatgate.web.sse import EventStreamResponse

__all__ = ["Cursor", "chat_endpoint"]


Cursor = Callable[[bytes], RunCursor | None]
"""Where a reconnect's body says its client stopped reading the run (``RunCursor``), if it says."""


def chat_endpoint(protocol: UIProtocol, *, reconnect: Cursor | None = None) -> Callable[[Request], Awaitable[Response]]:
    """``POST`` a run in ``protocol``: decode, check, then stream the run (or follow it on a stored thread).

    With ``reconnect`` the request only reattaches (CopilotKit's ``connect``): what it sends is read for its
    thread and never starts a run. On a stored thread that is the thread's reconnect (the run going,
    followed from its start after a snapshot, or from the body's cursor, read by ``reconnect``; else the
    thread's messages); an agent that keeps no conversations has nothing to reattach to, and answers an
    empty stream.
    """

    async def chat(request: Request) -> Response:
        started = time.perf_counter()
        label_request(request.scope, protocol.name)
        services, running = services_of(request.app), running_of(request)
        registry = running.agents  # read once: a reload may swap it meanwhile
        caller = caller_of(request)
        agent = resolve_agent(registry, request.path_params.get("agent"), caller)
        label_request(request.scope, protocol.name, agent.name)
        trace = trace_chat(request, agent, protocol, caller)  # None when tracing is off
        _check_content_type(request)
        settings = registry.config.server
        body = await read_body(request, settings)
        run_input = _decode(protocol, body)
        stored = agent.config.conversations == "server"
        agent = _variant(request, agent, caller, run_input, stored)
        cursor = None
        if reconnect is not None:
            cursor = reconnect(body)
            if not stored:  # nothing held to reattach to, and no run to trace
                if trace is not None:
                    trace.end()
                return Response(b"", media_type="text/event-stream", headers=dict(protocol.headers(agent.config)))
            run_input = replace(run_input, messages=(), approvals=())
        check_request_limits(run_input, settings)
        files = running.files
        inline_limit = registry.config.files.inline_limit
        messages = await resolve_references(
            run_input.messages, files, caller.owner, agent.name, inline_limit=inline_limit
        )
        if messages is not run_input.messages:
            run_input = replace(run_input, messages=messages)
        check_files(run_input.messages, settings, is_reference=_is_reference)
        if files is not None:  # the model calls get the bytes of the uploads the history references
            agent = replace(agent, files=FileInliner(files, caller.owner, agent.name, inline_limit))
        metrics = services.metrics
        if not stored and run_input.newest_only:
            problem = "the full history is required: this agent keeps no conversations (conversations = 'client')"
            raise RequestError(
                422, "history_required", f"messages: {problem}", [{"field": "messages", "problem": problem}]
            )

        # Over budget: a plain 429 before any byte of the stream (app/usage/), checked as the stream's slot
        # is taken (with Redis, in the same round trip).
        account = run_account(running.usage, registry.config, caller, agent.name, run_input, agent.config)

        async def start() -> EventStreamResponse:
            if stored:
                turn = await open_thread_turn(
                    running.threads,
                    agent,
                    caller,
                    run_input,
                    protocol=protocol,
                    config=registry.config,
                    account=account,
                    trace=trace,
                    seen=cursor,
                    titler=_titler(agent, running.usage, registry.config, caller),
                )
                frames, joined, run = turn.frames, True, turn.run  # a run log's follower: it joins what piled up
                if run is None:  # a hydrate or a follow: this request started no run
                    account.finish()  # its reservation goes back
                    if trace is not None:
                        trace.end()
            else:
                # Approvals issued to this key (and end user) are answerable by it alone.
                owned = agent
                if caller.owner:
                    owned = replace(agent, approval_scope=approval_scope(agent.name, caller.owner))
                events = run_agent(
                    owned,
                    run_input,
                    stopping=services.stopping,
                    metrics=metrics,
                    account=account,
                    trace=trace,
                    retracts=retracts_steps(protocol, agent.config),
                )
                frames, joined, run = protocol.encode(run_input, agent.config, events), False, None
            return EventStreamResponse(
                frames,
                protocol.headers(agent.config),
                keepalive=settings.keepalive_seconds,
                meter=metrics.stream(protocol.name, agent.name, started),
                joined=joined,
                run=run,
                # The run ends its span and account; this ends them too if the run never began (its stream
                # was gone first): a reservation never outlives its request.
                closed=None if stored else _closer(trace, account),
            )

        return await hold_stream_slot(request, start, services=services, check=account)  # type: ignore[return-value]

    return traced_refusals(chat)


def _titler(agent: Agent, accounts: UsageAccounts, config: Config, caller: Caller) -> ThreadTitler | None:
    """The agent's thread titler; each title call is counted in the caller's usage, under its own model."""

    def account(model: str, thread_id: str, run_id: str) -> RunAccount:
        return side_account(accounts, config, caller, agent.name, model, thread_id=thread_id, run_id=run_id)

    return thread_titler(agent, account)


def _closer(trace: RunTrace | None, account: RunAccount) -> Callable[[], None]:
    """What a stateless stream's end closes, in case its run never began: the span and the account."""

    def closed() -> None:
        if trace is not None:
            trace.close()
        account.finish()

    return closed


def _is_reference(url: str) -> bool:
    return referenced_file(url) is not None


def _check_content_type(request: Request) -> None:
    content_type = request.headers.get("content-type", "")
    if content_type.split(";", 1)[0].strip().lower() != "application/json":
        raise RequestError(
            415,
            "unsupported_media_type",
            f"the body must be JSON sent as content-type: application/json (got {content_type or 'none'!r})",
        )


def _decode(protocol: UIProtocol, body: bytes) -> RunInput:
    try:
        return protocol.decode(body)
    except RecursionError:  # the adapters bound nesting; this is the backstop for any that does not
        raise RequestError(422, "invalid_request", "the request is invalid: (body): it nests too deep") from None


def _variant(request: Request, agent: Agent, caller: Caller, run_input: RunInput, stored: bool) -> Agent:
    """The agent as the variant this run is assigned (docs/prompts.md); an admin may force one by header.

    The subject is the stored thread (its owner's), else the caller (key, user or person), else, with no
    keys configured, the client's thread id, else the run: the same one every turn and on every replica.
    """
    forced = request.headers.get(VARIANT_HEADER)
    if forced is not None and not caller.admin:
        raise RequestError(403, "variant_forbidden", f"{VARIANT_HEADER}: only an admin key may force a variant")
    if not agent.variants:
        return agent
    if stored:
        subject = f"{caller.owner}\x00{run_input.thread_id}"
    else:
        subject = caller.owner or run_input.thread_id or run_input.run_id
    return choose_variant(agent, subject, forced)
