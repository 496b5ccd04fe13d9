"""Approvals: tools that wait for a human, and the promise that each approval runs its tool once.

``tokens.py`` (signed, expiring approval tokens with one spelling), ``ledger.py`` (the ``ApprovalLedger``
interface and the in-process ledger), ``redis.py`` (the ledger shared through Redis), ``store.py`` (a
stored thread's ledger in the store's ``approvals`` table) and ``setup.py`` (what the app keeps for
approvals across reloads).
"""

from chatgate.approvals.ledger import (
    ApprovalLedger,
    ApprovalLedgerError,
    ApprovalOutcome,
    Claimed,
    MemoryApprovalLedger,
    Pending,
    Settled,
)
from chatgate.approvals.setup import AppApprovals, app_approvals
from chatgate.approvals.store import StoreApprovalLedger
from chatgate.approvals.tokens import ApprovalSigner, approval_scope, new_secret

__all__ = [
    "AppApprovals",
    "ApprovalLedger",
    "ApprovalLedgerError",
    "ApprovalOutcome",
    "ApprovalSigner",
    "Claimed",
    "MemoryApprovalLedger",
    "Pending",
    "Settled",
    "StoreApprovalLedger",
    "app_approvals",
    "approval_scope",
    "new_secret",
]
