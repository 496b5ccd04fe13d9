"""The approval ledger in Redis, shared by every process that uses the same ``[server] redis_url``.

One key per approval and scope, ``chatgate:approval:<sha256 of the scope, hex>:<token>`` (hashed, so an
owner's name of any length or content makes a key of fixed shape). A claim is ``SET key pending:<ticket> NX PX ttl``
(one script, so that a request that loses the race reads the winner's value atomically); recording is
a script that replaces the value only while it still holds this claimer's ticket, keeping the expiry.
Redis that does not answer is an ``ApprovalLedgerError``: the approval is then not acted on (closed).
"""

from __future__ import annotations

import hashlib
import secrets
from typing import Any

import redis.asyncio as redis
from redis.exceptions import RedisError

from chatgate.approvals.ledger import (
    ENTRY_TTL,
    ApprovalLedgerError,
    ApprovalOutcome,
    Claim,
    Claimed,
    Pending,
    Settled,
    outcome_from_json,
    outcome_to_json,
)

__all__ = ["KEY_PREFIX", "RedisApprovalLedger"]

KEY_PREFIX = "chatgate:approval:"

_PENDING = "pending:"

# Returns nil when this request set the key (it holds the claim), else the value already there.
_CLAIM = """
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'PX', ARGV[2]) then return false end
return redis.call('GET', KEYS[1])
"""

# Replaces the pending value with the outcome only if the value is still this claimer's.
_RECORD = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[2], 'KEEPTTL')
  return 1
end
return 0
"""


class RedisApprovalLedger:
    """The ledger in Redis, through the app's one pool (``Running.redis``, app/web/services.py)."""

    def __init__(self, client: redis.Redis, *, ttl: float = ENTRY_TTL) -> None:
        self._redis = client
        self._ttl_ms = int(ttl * 1000)
        self._claim: Any = client.register_script(_CLAIM)
        self._record: Any = client.register_script(_RECORD)

    async def claim(self, approval_id: str, *, scope: str) -> Claim:
        """Claim ``approval_id`` in ``scope`` with SET NX, or return the claim or outcome already held there."""
        ticket = secrets.token_urlsafe(12)
        try:
            existing = await self._claim(keys=[_key(scope, approval_id)], args=[_PENDING + ticket, self._ttl_ms])
        except RedisError as exc:
            raise ApprovalLedgerError(f"redis: {exc}") from exc
        if existing is None:
            return Claimed(approval_id, ticket, scope)
        text = existing.decode() if isinstance(existing, bytes) else str(existing)
        if text.startswith(_PENDING):
            return Pending()
        try:
            return Settled(outcome_from_json(text))
        except (ValueError, KeyError, TypeError) as exc:  # not written by chatgate: refuse to act on it
            raise ApprovalLedgerError(f"redis: unreadable approval entry: {exc}") from exc

    async def record(self, claim: Claimed, outcome: ApprovalOutcome) -> None:
        """Replace this request's pending claim with the outcome."""
        try:
            await self._record(
                keys=[_key(claim.scope, claim.approval_id)], args=[_PENDING + claim.ticket, outcome_to_json(outcome)]
            )
        except RedisError as exc:
            raise ApprovalLedgerError(f"redis: {exc}") from exc


def _key(scope: str, approval_id: str) -> str:
    """The Redis key of ``approval_id``'s entry in ``scope``."""
    return f"{KEY_PREFIX}{hashlib.sha256(scope.encode('utf-8', 'surrogatepass')).hexdigest()}:{approval_id}"
