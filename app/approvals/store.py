"""The approval ledger of a server-held thread: its claims live in the conversation store.

A thread's approvals are answered where its history is: in the store's ``approvals`` table, whose
primary key, the thread's key and the token, makes a claim atomic across every replica sharing the
database. The claim is the insert; the outcome is written when the tool has run; a replay reads it
back. The thread's key stands for the whole scope: a thread belongs to one owner on one agent, so
another key's, user's, agent's or thread's approval is another row, and never reads this one.
"""

from __future__ import annotations

from chatgate.approvals.ledger import (
    ApprovalOutcome,
    Claim,
    Claimed,
    Pending,
    Settled,
    outcome_from_json,
    outcome_to_json,
)
from chatgate.store import ThreadInfo, ThreadStore

__all__ = ["StoreApprovalLedger"]


class StoreApprovalLedger:
    """``ApprovalLedger`` over ``store`` for the approvals answered on ``thread``."""

    def __init__(self, store: ThreadStore, thread: ThreadInfo) -> None:
        self._store = store
        self._thread = thread

    async def claim(self, approval_id: str, *, scope: str) -> Claim:
        """Claim by inserting the approval's row in this thread; the first insert wins."""
        if await self._store.claim_approval(approval_id, self._thread):
            return Claimed(approval_id, ticket=self._thread.key, scope=scope)
        outcome = await self._store.settled_approval(approval_id, self._thread)
        return Settled(outcome_from_json(outcome)) if outcome is not None else Pending()

    async def record(self, claim: Claimed, outcome: ApprovalOutcome) -> None:
        """Write the outcome beside the claim."""
        await self._store.settle_approval(claim.approval_id, self._thread, outcome_to_json(outcome))
