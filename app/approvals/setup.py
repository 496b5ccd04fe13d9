"""What one app keeps for approvals across config reloads: the ledger and the fallback secret.

The app makes one ``AppApprovals`` at start and hands it to every ``AgentRegistry`` it builds, so a
reload neither forgets which approvals were answered nor, without ``approval_secret``, changes the random
key that pending approvals were signed with.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field

import redis.asyncio as redis

from chatgate.approvals.ledger import ApprovalLedger, MemoryApprovalLedger
from chatgate.approvals.redis import RedisApprovalLedger
from chatgate.approvals.tokens import ApprovalSigner, new_secret
from chatgate.config import Config

__all__ = ["AppApprovals", "app_approvals"]

logger = logging.getLogger("chatgate.approvals")


@dataclass(frozen=True, slots=True)
class AppApprovals:
    """The ledger of answered approvals, and the key used when the config sets no ``approval_secret``."""

    ledger: ApprovalLedger = field(default_factory=MemoryApprovalLedger)
    fallback_secret: bytes = field(default_factory=new_secret)

    def signer(self, config: Config) -> ApprovalSigner:
        """The signer for ``config``: its ``approval_secret``, or this app's random key."""
        secret = config.server.approval_secret
        return ApprovalSigner(secret.encode() if secret else self.fallback_secret)

    def warn_if_unshared(self, config: Config) -> None:
        """Say loudly that approvals are single-use per process only, if ``config`` has any to answer."""
        if not isinstance(self.ledger, MemoryApprovalLedger):
            return
        gated = any(tool.requires_approval for agent in config.agents.values() for tool in agent.tools.values())
        gated = gated or any(c.requires_approval for agent in config.agents.values() for c in agent.mcp.values())
        if gated:
            logger.warning(
                "APPROVALS ARE SINGLE-USE ONLY WITHIN THIS PROCESS: no [server] redis_url is set, so the ledger "
                "of answered approvals lives in this process's memory. A deployment with several processes or "
                "replicas must set redis_url, or an approval can run its tool once in each process."
            )


def app_approvals(redis_client: redis.Redis | None) -> AppApprovals:
    """The app's approvals: the ledger in Redis when there is one, else in this process."""
    return AppApprovals(RedisApprovalLedger(redis_client)) if redis_client is not None else AppApprovals()
