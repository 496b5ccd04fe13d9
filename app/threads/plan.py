"""What a request adds to a stored thread: the reconciliation of the client's messages with the store's.

The stored history is the truth; what the client resends is ignored, except:

- a new user message (useChat: the last message, when its id is not stored yet; AG-UI: every user
  message whose id is not stored), appended in the order sent;
- the answer to a tool call the server issued and nobody answered yet, for a tool the frontend runs
  (a client can never supply the result of a server tool: those run only here, after an approval);
- approvals, which the runner checks against the stored call they name.

A user message whose id is already stored is not stored again (a retry). ``regenerate`` drops the
last assistant turn. An AG-UI request that adds nothing is a hydrate: the client only wants the
thread, as ``MESSAGES_SNAPSHOT``.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass, replace

from chatgate.errors import RequestError
from chatgate.history import AssistantMessage, Message, ToolMessage, UserMessage
from chatgate.ids import new_id
from chatgate.protocol import ThreadCapabilities
from chatgate.run_input import RunInput
from chatgate.store import NewMessage, StoredMessage

__all__ = ["ThreadPlan", "plan_turn"]


@dataclass(frozen=True, slots=True)
class ThreadPlan:
    """What to commit before the run and what the run answers.

    ``history`` is the stored history after ``drop_from_seq`` plus ``append``; ``hydrate`` means no
    run at all; ``behind`` that the client lacks stored messages (AG-UI then gets a snapshot first);
    ``message_id`` the id of the assistant message the run writes (useChat's ``start.messageId``).
    Messages in ``history`` carry the ids clients know them by.
    """

    append: tuple[NewMessage, ...]
    drop_from_seq: int | None
    history: tuple[Message, ...]
    hydrate: bool
    behind: bool
    message_id: str
    continues: bool


def plan_turn(
    stored: Sequence[StoredMessage],
    run_input: RunInput,
    *,
    protocol: ThreadCapabilities,
    server_tools: Collection[str],
) -> ThreadPlan:
    """Reconcile ``run_input`` with ``stored``; see the module docstring."""
    history = [_public(message.message, message.public_id) for message in stored]
    if run_input.regenerate:
        return _regenerate(stored)
    known = {message.public_id for message in stored} | {message.id for message in stored}
    pending = _pending_client_calls(history, server_tools)
    append: list[NewMessage] = []
    client = run_input.messages
    for index, message in enumerate(client):
        if isinstance(message, ToolMessage) and message.tool_call_id in pending:
            pending.discard(message.tool_call_id)
            answer = replace(message, id=new_id("msg"))
            append.append(NewMessage(answer, client_id=message.id or None))
        elif isinstance(message, UserMessage) and message.id not in known:
            if protocol.newest_message_only and index != len(client) - 1:
                continue
            known.add(message.id)
            append.append(NewMessage(replace(message, id=new_id("msg")), client_id=message.id or None))
    client_ids = {message.id for message in client}
    behind = any(message.public_id not in client_ids for message in stored)
    nothing_new = not append and not run_input.approvals
    hydrate = protocol.hydrates and nothing_new
    if nothing_new and not hydrate and not (history and isinstance(history[-1], UserMessage)):
        raise RequestError(422, "nothing_to_answer", "the request adds no new message to this thread")
    last_group = _last_assistant_id(stored)
    continues = run_input.continue_message_id is not None and run_input.continue_message_id == last_group
    message_id = last_group if continues and last_group else new_id("msg")
    return ThreadPlan(
        append=tuple(append),
        drop_from_seq=None,
        history=(*history, *(_public(new.message, new.client_id or new.message.id) for new in append)),
        hydrate=hydrate,
        behind=behind,
        message_id=message_id,
        continues=continues,
    )


def _regenerate(stored: Sequence[StoredMessage]) -> ThreadPlan:
    last_user = next((i for i in range(len(stored) - 1, -1, -1) if isinstance(stored[i].message, UserMessage)), None)
    if last_user is None:
        raise RequestError(422, "nothing_to_regenerate", "the thread has no user message to answer again")
    drop = stored[last_user + 1].seq if last_user + 1 < len(stored) else None
    history = tuple(_public(message.message, message.public_id) for message in stored[: last_user + 1])
    return ThreadPlan((), drop, history, hydrate=False, behind=True, message_id=new_id("msg"), continues=False)


def _pending_client_calls(history: Sequence[Message], server_tools: Collection[str]) -> set[str]:
    """Ids of calls to frontend tools in the last assistant turn that have no result yet."""
    answered = {message.tool_call_id for message in history if isinstance(message, ToolMessage)}
    pending: set[str] = set()
    for message in reversed(history):
        if isinstance(message, UserMessage):
            break
        if isinstance(message, AssistantMessage):
            pending |= {
                call.tool_call_id
                for call in message.tool_calls
                if call.name not in server_tools and call.tool_call_id not in answered
            }
    return pending


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
