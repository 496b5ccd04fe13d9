"""Approvals: tools that wait for a human, and the promise that each approval runs its tool once.

``tokens.py`` (signed, expiring approval tokens with one spelling), ``ledger.py`` (the ``ApprovalLedger``
interface and the in-process ledger), ``redis.py`` (the ledger shared through Redis), ``store.py`` (a
stored thread's ledger in the store's ``approvals`` table) and ``setup.py`` (what the app keeps for
approvals across reloads).
"""

__all__: list[str] = []
