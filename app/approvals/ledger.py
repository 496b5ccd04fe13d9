"""The ledger of answered approvals: each approval token runs its tool at most once.

Answering an approval is claim, then run, then record::

    claim = await ledger.claim(token, scope=scope)
    Claimed   -> this request alone runs the tool (or reports it denied), then ledger.record(claim, outcome)
    Pending   -> another request holds the claim and is answering it now: the tool is not run again
    Settled   -> answered before: claim.outcome is the first outcome, given again without running anything

Every entry belongs to one scope (``chatgate.approvals.approval_scope``: the agent, the owner and the
stored thread it was issued for), and the same token claimed in another scope is another entry: one
scope's outcome is never given to another. (The token is signed over its scope as well, so the runner
refuses a foreign approval before it reaches the ledger; the ledger's scoping is the second wall.)

A claim is atomic, so of any number of requests sending the same approval at once exactly one gets
``Claimed``. An entry lives for one token lifetime (plus a clock-skew allowance) after its claim, by which
time the token it records has expired and no longer verifies. A claim whose claimer never records (its
process died mid-tool) stays ``Pending`` until then: the tool may have run, so it is never run again.

Implementations: ``MemoryApprovalLedger`` (one process; the app owns it, so it survives config reloads)
and ``RedisApprovalLedger`` (app/approvals/redis.py; every process sharing one Redis). A third
only has to implement ``claim`` and ``record`` with the same atomicity, and store outcomes with
``outcome_to_json``/``outcome_from_json``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Protocol, TypeAlias

from pydantic_core import to_jsonable_python

from chatgate.approvals.tokens import TOKEN_TTL
from chatgate.errors import ChatgateError
from chatgate.events import ToolDenied, ToolResult

__all__ = [
    "ENTRY_TTL",
    "ApprovalLedger",
    "ApprovalLedgerError",
    "ApprovalOutcome",
    "Claim",
    "Claimed",
    "MemoryApprovalLedger",
    "Pending",
    "Settled",
    "outcome_from_json",
    "outcome_to_json",
]

ApprovalOutcome: TypeAlias = ToolResult | ToolDenied
"""What answering an approval produced: the tool's result, or the denial."""

ENTRY_TTL = TOKEN_TTL + 300.0
"""Seconds a ledger entry is kept after its claim: the token's lifetime, plus five minutes of clock skew."""


@dataclass(frozen=True, slots=True)
class Claimed:
    """The asking request holds the approval: it runs the tool and records the outcome with ``ticket``."""

    approval_id: str
    ticket: str
    scope: str = ""


@dataclass(frozen=True, slots=True)
class Pending:
    """Another request holds the approval and has not recorded its outcome yet."""


@dataclass(frozen=True, slots=True)
class Settled:
    """The approval was answered before; ``outcome`` is what that answer produced."""

    outcome: ApprovalOutcome


Claim: TypeAlias = Claimed | Pending | Settled


class ApprovalLedgerError(ChatgateError):
    """The ledger could not be asked (its store is unreachable): nothing may run on that approval now."""


class ApprovalLedger(Protocol):
    """Where answered approvals are kept; ``approval_id`` is always a verified, canonical token."""

    async def claim(self, approval_id: str, *, scope: str) -> Claim:
        """Claim ``approval_id`` in ``scope`` atomically, or say who has it; raises ``ApprovalLedgerError``."""
        ...

    async def record(self, claim: Claimed, outcome: ApprovalOutcome) -> None:
        """Store the outcome of a claim this request holds; raises ``ApprovalLedgerError``."""
        ...


def outcome_to_json(outcome: ApprovalOutcome) -> str:
    """The outcome as JSON text, for a ledger that stores strings."""
    body: dict[str, Any]
    if isinstance(outcome, ToolDenied):
        body = {"kind": "denied", "tool_call_id": outcome.tool_call_id, "reason": outcome.reason}
    else:
        body = {
            "kind": "result",
            "tool_call_id": outcome.tool_call_id,
            "content": outcome.content,
            "is_error": outcome.is_error,
            "output": to_jsonable_python(outcome.output, fallback=str),
        }
    return json.dumps(body, ensure_ascii=True)


def outcome_from_json(text: str) -> ApprovalOutcome:
    """The outcome ``outcome_to_json`` wrote."""
    body = json.loads(text)
    if body["kind"] == "denied":
        return ToolDenied(body["tool_call_id"], body["reason"])
    return ToolResult(body["tool_call_id"], body["content"], body["is_error"], output=body["output"])


class MemoryApprovalLedger:
    """The ledger of one process, in a dict.

    ``claim`` never awaits, so on the one event loop it is atomic. Entries are kept in claim order,
    which is also expiry order, so forgetting the expired ones only ever looks at the oldest.
    """

    def __init__(self, *, ttl: float = ENTRY_TTL, clock: Callable[[], float] = time.monotonic) -> None:
        self._ttl = ttl
        self._clock = clock
        self._entries: dict[tuple[str, str], tuple[float, str, ApprovalOutcome | None]] = {}
        self._tickets = 0

    async def claim(self, approval_id: str, *, scope: str) -> Claim:
        """Claim ``approval_id`` in ``scope``, or return the claim or outcome already held for it there."""
        now = self._clock()
        self._forget_expired(now)
        entry = self._entries.get((scope, approval_id))
        if entry is not None:
            outcome = entry[2]
            return Pending() if outcome is None else Settled(outcome)
        self._tickets += 1
        ticket = str(self._tickets)
        self._entries[scope, approval_id] = (now + self._ttl, ticket, None)
        return Claimed(approval_id, ticket, scope)

    async def record(self, claim: Claimed, outcome: ApprovalOutcome) -> None:
        """Store the outcome, keeping the entry's place (and expiry); a claim that expired is dropped."""
        entry = self._entries.get((claim.scope, claim.approval_id))
        if entry is not None and entry[1] == claim.ticket:
            self._entries[claim.scope, claim.approval_id] = (entry[0], entry[1], outcome)

    def _forget_expired(self, now: float) -> None:
        while self._entries:
            key, (expires, _, _) = next(iter(self._entries.items()))
            if expires >= now:
                return
            del self._entries[key]
