"""Feedback on answers (docs/prompts.md#feedback): a person scores an answer of theirs, once, and may change it.

- ``POST /agents/{agent}/threads/{thread_id}/messages/{message_id}/feedback``: an answer of a stored thread,
  by the id the client knows it by (``GET .../messages``, or the stream's);
- ``POST /agents/{agent}/runs/{run_id}/feedback``: an answer of a stateless run, by its run id (useChat's
  ``message.metadata.runId``, AG-UI's ``runId``);
- ``DELETE`` on either withdraws it.

The body is ``{"score": N, "comment"?: "...", "tags"?: ["..."]}``; ``score`` is -1 or +1 for an agent's
``feedback_scale = "thumbs"`` (the default), 1 to 5 for ``"stars"``. Only the answer's owner may give it
(the key and person its run was made with, or the thread's owner): anything else, a user message, an
unknown id or another agent's answer is the same 404, so the route says nothing about others' answers.
A second POST replaces the first (200; the first is 201).
"""

from __future__ import annotations

from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.access import resolve_agent
from chatgate.caller import Caller, caller_of
from chatgate.errors import RequestError, invalid_request
from chatgate.history import AssistantMessage
from chatgate.ids import StorableText, check_id
from chatgate.run import Agent
from chatgate.tracing import trace_feedback
from chatgate.usage import Feedback, RunOwner, UsageRecord, opinion, person_of, valid_scores
from chatgate.web.openapi import OPERATIONS, Operation
from chatgate.web.services import running_of, services_of
from chatgate.web.thread_changes import json_object
from chatgate.web.thread_paths import caller_thread, path_thread_id, thread_context

__all__ = ["MAX_COMMENT_CHARS", "MAX_TAGS", "MAX_TAG_CHARS", "FeedbackBody", "feedback_routes"]

_ON_RUN = "/agents/{agent}/runs/{run_id}/feedback"
_ON_MESSAGE = "/agents/{agent}/threads/{thread_id}/messages/{message_id}/feedback"

for _path, _what in ((_ON_RUN, "a stateless run's answer"), (_ON_MESSAGE, "a stored thread's answer")):
    OPERATIONS[("POST", _path)] = Operation(f"Score {_what} (its owner only): score, comment, tags")
    OPERATIONS[("DELETE", _path)] = Operation(f"Withdraw the caller's feedback on {_what}")

MAX_COMMENT_CHARS = 2000
MAX_TAGS = 10
MAX_TAG_CHARS = 40

_Tag = Annotated[StorableText, Field(min_length=1, max_length=MAX_TAG_CHARS)]


class FeedbackBody(BaseModel):
    """``{"score": N, "comment"?: "...", "tags"?: ["..."]}``: bounded, and nothing else."""

    model_config = ConfigDict(extra="forbid", frozen=True, strict=True)

    score: int
    comment: Annotated[StorableText, Field(max_length=MAX_COMMENT_CHARS)] | None = None
    tags: list[_Tag] = Field(default_factory=list, max_length=MAX_TAGS)


_BODY: TypeAdapter[FeedbackBody] = TypeAdapter(FeedbackBody)


def feedback_routes() -> list[BaseRoute]:
    """The feedback routes."""
    return [
        Route(_ON_RUN, _give_on_run, methods=["POST"]),
        Route(_ON_RUN, _withdraw_on_run, methods=["DELETE"]),
        Route(_ON_MESSAGE, _give_on_message, methods=["POST"]),
        Route(_ON_MESSAGE, _withdraw_on_message, methods=["DELETE"]),
    ]


def _unknown_answer(answer_id: str) -> RequestError:
    return RequestError(404, "unknown_answer", f"no answer {answer_id[:100]!r} of yours here")


def _owner(agent: Agent, caller: Caller, run_id: str) -> RunOwner:
    return RunOwner(agent.name, run_id, caller.key_id, person_of(caller))


async def _run_answer(request: Request) -> tuple[Agent, RunOwner, UsageRecord]:
    """The caller's run named by the path: its usage row proves it is theirs; else the 404."""
    caller = caller_of(request)
    agent = resolve_agent(running_of(request).agents, request.path_params["agent"], caller)
    run_id = check_id("run_id", request.path_params["run_id"])
    owner = _owner(agent, caller, run_id)
    run = await running_of(request).usage.ledger.run(owner)
    if run is None:
        raise _unknown_answer(run_id)
    return agent, owner, run


async def _message_answer(request: Request) -> tuple[Agent, RunOwner, str, str]:
    """The caller's stored answer named by the path: its run, thread key and public id; else the 404."""
    agent, store, caller = thread_context(request)
    thread = await caller_thread(store, agent, caller, path_thread_id(request))
    message_id = check_id("message_id", request.path_params["message_id"])
    for stored in await store.messages(thread):
        if stored.public_id == message_id and isinstance(stored.message, AssistantMessage):
            run_id = stored.message.metadata.get("runId")  # written when its run finished (app/threads/run.py)
            if isinstance(run_id, str) and run_id:
                return agent, _owner(agent, caller, run_id), thread.key, message_id
    raise _unknown_answer(message_id)


async def _body(request: Request, agent: Agent) -> FeedbackBody:
    try:
        body = _BODY.validate_python(await json_object(request))
    except ValidationError as exc:
        raise invalid_request(exc) from None
    scale = agent.config.feedback_scale
    if body.score not in valid_scores(scale):
        allowed = " or ".join(str(s) for s in valid_scores(scale))
        problem = f"must be {allowed} (this agent's feedback_scale is {scale!r})"
        raise RequestError(422, "invalid_request", f"score: {problem}", [{"field": "score", "problem": problem}])
    return body


async def _give(
    request: Request,
    agent: Agent,
    owner: RunOwner,
    run: UsageRecord | None,
    thread_key: str | None = None,
    message_id: str | None = None,
) -> Response:
    """Keep the feedback in the body; ``run`` is the answer's usage row, which names its prompt and span."""
    body = await _body(request, agent)
    usage = running_of(request).usage
    feedback = Feedback(
        owner,
        body.score,
        opinion(body.score, agent.config.feedback_scale),
        body.comment,
        tuple(body.tags),
        thread_key,
        message_id,
        run.prompt_version if run is not None else None,
        run.variant if run is not None else None,
    )
    first = await usage.feedback.give(feedback)
    telemetry = services_of(request.app).telemetry
    if telemetry is not None and run is not None and run.trace_id and run.span_id:
        trace_feedback(telemetry, run.trace_id, run.span_id, _span_attributes(agent, feedback))
    return JSONResponse(_described(feedback), status_code=201 if first else 200)


def _span_attributes(agent: Agent, feedback: Feedback) -> dict[str, Any]:
    """What the trace gets: the score and whose run, never the comment or tags (the person's data)."""
    attributes: dict[str, Any] = {
        "gen_ai.agent.name": agent.name,
        "chatgate.run.id": feedback.run.run_id,
        "chatgate.feedback.score": feedback.score,
        "chatgate.feedback.opinion": feedback.opinion,
        "chatgate.feedback.scale": agent.config.feedback_scale,
    }
    for key, value in (("version", feedback.prompt_version), ("variant", feedback.variant)):
        if value is not None:
            attributes[f"chatgate.prompt.{key}"] = value
    return attributes


def _described(feedback: Feedback) -> dict[str, Any]:
    return {
        "run_id": feedback.run.run_id,
        "message_id": feedback.message_id,
        "score": feedback.score,
        "comment": feedback.comment,
        "tags": list(feedback.tags),
        "prompt_version": feedback.prompt_version,
        "variant": feedback.variant,
    }


async def _withdraw(request: Request, owner: RunOwner, answer_id: str) -> Response:
    if not await running_of(request).usage.feedback.withdraw(owner):
        raise _unknown_answer(answer_id)
    return Response(status_code=204)


async def _give_on_run(request: Request) -> Response:
    agent, owner, run = await _run_answer(request)
    return await _give(request, agent, owner, run)


async def _withdraw_on_run(request: Request) -> Response:
    _, owner, _ = await _run_answer(request)
    return await _withdraw(request, owner, owner.run_id)


async def _give_on_message(request: Request) -> Response:
    agent, owner, thread_key, message_id = await _message_answer(request)
    run = await running_of(request).usage.ledger.run(owner)  # none if its run made no model call
    return await _give(request, agent, owner, run, thread_key, message_id)


async def _withdraw_on_message(request: Request) -> Response:
    _, owner, _, message_id = await _message_answer(request)
    return await _withdraw(request, owner, message_id)
