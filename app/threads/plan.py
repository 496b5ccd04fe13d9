"""What a request adds to a stored thread: the reconciliation of the client's messages with the store's.

The stored history is the truth; what the client resends is ignored, except:

- a new user message (useChat: the last message, when its id is not stored yet; AG-UI: every user
  message whose id is not stored), appended in the order sent;
- the answer to a tool call the server issued and nobody answered yet, for a tool the frontend runs
  (a client can never supply the result of a server tool: those run only here, after an approval);
- an approval (or denial) of a server tool call that has no stored result yet; the runner checks it
  against the call it names. An approval of a call already answered is a replay and adds nothing;
- a frontend's ``activity`` message (AG-UI) whose id is not stored, in the order sent, with a request
  that adds one of the above: it is the frontend's UI state, kept in the thread and its snapshots and
  never sent to the model, so on its own it starts no run (and is not stored).

A request that adds nothing is a replay (a retry after a dropped connection, a page re-sending its
list, a duplicate sent at the same moment): it never starts a run of its own. While a run is going on
the thread it follows that run, the one a duplicate's twin started; otherwise AG-UI gets a hydrate
(the thread as ``MESSAGES_SNAPSHOT``) and useChat 422 ``nothing_to_answer``, unless the last stored
message is a user message nobody answered (its run failed before saying anything), which a retry
answers. ``regenerate`` drops the last assistant turn.

A run that answers the last run's pending tool calls or approval requests, or regenerates its answer,
follows that run (``ThreadPlan.follows_last_run``): AG-UI names it as ``RUN_STARTED.parentRunId``.
"""

from __future__ import annotations

from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias

from chatgate.errors import RequestError
from chatgate.history import ActivityMessage, AssistantMessage, Message, ToolCallPart, ToolMessage, UserMessage
from chatgate.ids import new_id
from chatgate.protocol import ThreadCapabilities
from chatgate.run_input import ApprovalResponse, RunInput
from chatgate.store import NewMessage, StoredMessage

__all__ = ["Approves", "PlanAction", "ThreadPlan", "nothing_to_answer", "plan_turn"]

PlanAction: TypeAlias = Literal["run", "follow", "hydrate", "refuse"]
"""Start a run; or, for a replay: follow the run already going, answer with the thread (AG-UI) or refuse
(useChat, ``nothing_to_answer``)."""

Approves: TypeAlias = Callable[[ApprovalResponse, ToolCallPart], bool]
"""Whether an approval's token was signed for exactly this call (AG-UI names only the token)."""


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """What to commit before the run and what the run answers.

    ``action`` says whether there is a run at all; ``history`` is the stored history after
    ``drop_from_seq`` plus ``append``; ``approvals`` are the request's approvals of calls still
    unanswered, each naming its call; ``behind`` says the client lacks stored messages (AG-UI then gets
    a snapshot first); ``message_id`` is the id of the assistant message the run writes (useChat's
    ``start.messageId``). Messages in ``history`` carry the ids clients know them by.
    ``follows_last_run`` says the run answers the last run's pending tool calls or approvals, or
    regenerates its answer: that run is its parent.
    """

    action: PlanAction
    append: tuple[NewMessage, ...]
    drop_from_seq: int | None
    history: tuple[Message, ...]
    approvals: tuple[ApprovalResponse, ...]
    behind: bool
    message_id: str
    continues: bool
    follows_last_run: bool = False


def plan_turn(
    stored: Sequence[StoredMessage],
    run_input: RunInput,
    *,
    protocol: ThreadCapabilities,
    server_tools: Collection[str],
    running: bool = False,
    approves: Approves | None = None,
) -> ThreadPlan:
    """Reconcile ``run_input`` with ``stored``; see the module docstring.

    ``running`` says a run holds the thread: every pending call is being answered by it, so no
    approval is new. ``approves`` tells which call an approval that names none (AG-UI) answers.
    """
    history = [_public(message.message, message.public_id) for message in stored]
    if run_input.regenerate:
        return _regenerate(stored)
    known = {message.public_id for message in stored} | {message.id for message in stored}
    pending = _pending_calls(history, server_tools, frontend=True)
    append: list[NewMessage] = []
    client = run_input.messages
    answers_calls = False
    for index, message in enumerate(client):
        if isinstance(message, ToolMessage) and message.tool_call_id in pending:
            pending.discard(message.tool_call_id)
            answers_calls = True
            answer = replace(message, id=new_id("msg"))
            append.append(NewMessage(answer, client_id=message.id or None))
        elif isinstance(message, UserMessage) and message.id not in known:
            if protocol.newest_message_only and index != len(client) - 1:
                continue
            known.add(message.id)
            append.append(NewMessage(replace(message, id=new_id("msg")), client_id=message.id or None))
        elif isinstance(message, ActivityMessage) and message.id not in known:
            known.add(message.id)
            append.append(NewMessage(replace(message, id=new_id("msg")), client_id=message.id or None))
    approvals = () if running else _new_approvals(history, run_input.approvals, server_tools, approves)
    if all(isinstance(new.message, ActivityMessage) for new in append) and not approvals:
        append = []  # activity alone is no turn: a replay, as if it were not sent
    client_ids = {message.id for message in client}
    behind = any(message.public_id not in client_ids for message in stored)
    full = (*history, *(_public(new.message, new.client_id or new.message.id) for new in append))
    last_group = _last_assistant_id(stored)
    continues = run_input.continue_message_id is not None and run_input.continue_message_id == last_group
    message_id = last_group if continues and last_group else new_id("msg")
    action: PlanAction = "run"
    if not append and not approvals:  # a replay
        if running:
            action = "follow"
        elif protocol.hydrates:
            action = "hydrate"
        elif not (history and isinstance(history[-1], UserMessage)):
            action = "refuse"
    follows = action == "run" and (answers_calls or bool(approvals))
    return ThreadPlan(action, tuple(append), None, full, approvals, behind, message_id, continues, follows)


def nothing_to_answer() -> RequestError:
    """422 ``nothing_to_answer``: the useChat answer to a replay on a thread with nothing left to answer."""
    return RequestError(422, "nothing_to_answer", "the request adds no new message to this thread")


def _regenerate(stored: Sequence[StoredMessage]) -> ThreadPlan:
    last_user = next((i for i in range(len(stored) - 1, -1, -1) if isinstance(stored[i].message, UserMessage)), None)
    if last_user is None:
        raise RequestError(422, "nothing_to_regenerate", "the thread has no user message to answer again")
    drop = stored[last_user + 1].seq if last_user + 1 < len(stored) else None
    history = tuple(_public(message.message, message.public_id) for message in stored[: last_user + 1])
    return ThreadPlan(
        "run", (), drop, history, (), behind=True, message_id=new_id("msg"), continues=False, follows_last_run=True
    )


def _new_approvals(
    history: Sequence[Message],
    approvals: Sequence[ApprovalResponse],
    server_tools: Collection[str],
    approves: Approves | None,
) -> tuple[ApprovalResponse, ...]:
    """The approvals that answer a server tool call with no stored result, each naming its call.

    An approval of a call already answered (a replay) is dropped. One that names no call and whose
    token matches none (expired, or not this server's) is kept while some server call is pending: the
    runner then tells the model that call was not run, as before.
    """
    if not approvals:
        return ()
    pending = _pending_calls(history, server_tools, frontend=False)
    calls = [call for call in _last_turn_calls(history) if call.name in server_tools]
    new: list[ApprovalResponse] = []
    for approval in approvals:
        call_id = approval.tool_call_id
        if call_id is None and approves is not None:
            call_id = next((call.tool_call_id for call in calls if approves(approval, call)), None)
        if call_id in pending:
            new.append(replace(approval, tool_call_id=call_id))
        elif call_id is None and pending:
            new.append(approval)
    return tuple(new)


def _last_turn_calls(history: Sequence[Message]) -> list[ToolCallPart]:
    """The tool calls of the assistant messages after the last user message."""
    calls: list[ToolCallPart] = []
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            calls.extend(message.tool_calls)
    return calls


def _pending_calls(history: Sequence[Message], server_tools: Collection[str], *, frontend: bool) -> set[str]:
    """Ids of calls in the last assistant turn that have no result yet: to frontend tools, or to server tools."""
    answered = {message.tool_call_id for message in history if isinstance(message, ToolMessage)}
    return {
        call.tool_call_id
        for call in _last_turn_calls(history)
        if (call.name not in server_tools) == frontend and call.tool_call_id not in answered
    }


def _last_assistant_id(stored: Sequence[StoredMessage]) -> str | None:
    """The id of the first assistant message after the last user message (useChat's message id)."""
    first: str | None = None
    for message in reversed(stored):
        if isinstance(message.message, UserMessage):
            break
        if isinstance(message.message, AssistantMessage):
            first = message.id
    return first


def _public(message: Message, message_id: str) -> Message:
    """``message`` under the id its client knows it by."""
    return message if message.id == message_id else replace(message, id=message_id)
