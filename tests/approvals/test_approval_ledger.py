"""The approval ledger's claim-then-record contract, the same for the in-process and the Redis ledger."""

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable

import pytest
import redis.asyncio as redis

from chatgate.approvals.ledger import (
    ApprovalLedger,
    ApprovalLedgerError,
    Claimed,
    MemoryApprovalLedger,
    Pending,
    Settled,
    outcome_from_json,
    outcome_to_json,
)
from chatgate.approvals.redis import KEY_PREFIX, RedisApprovalLedger
from chatgate.approvals.tokens import approval_scope
from chatgate.events import ToolDenied, ToolResult

RESULT = ToolResult("c1", '{"rows":[1,2]}', output={"rows": [1, 2], "note": "\ud800"})


@pytest.fixture(params=["memory", "redis"])
async def ledgers(request: pytest.FixtureRequest) -> AsyncIterator[Callable[[], ApprovalLedger]]:
    """Makes ledgers that share one store, as two processes (or two reloads) of one deployment would."""
    if request.param == "memory":
        shared = MemoryApprovalLedger()
        yield lambda: shared
        return
    client = redis.Redis.from_url(request.getfixturevalue("redis_url"))
    yield lambda: RedisApprovalLedger(client)
    await client.aclose()


SCOPE = approval_scope("ops", "key-a")


def token() -> str:
    return f"apr_1_{uuid.uuid4().hex}"


async def test_the_first_claim_runs_the_rest_get_its_outcome(ledgers: Callable[[], ApprovalLedger]) -> None:
    ledger, other = ledgers(), ledgers()
    approval = token()
    claim = await ledger.claim(approval, scope=SCOPE)
    assert isinstance(claim, Claimed)
    assert await other.claim(approval, scope=SCOPE) == Pending()
    await ledger.record(claim, RESULT)
    assert await other.claim(approval, scope=SCOPE) == Settled(RESULT)
    assert await ledger.claim(approval, scope=SCOPE) == Settled(RESULT)
    assert isinstance(await ledger.claim(token(), scope=SCOPE), Claimed)  # another approval is its own entry


async def test_an_entry_belongs_to_its_scope(ledgers: Callable[[], ApprovalLedger]) -> None:
    # The same token claimed for another key, user, agent or thread is another entry: it never gets
    # the first scope's outcome, nor is it told that scope's claim is pending.
    approval = token()
    claim = await ledgers().claim(approval, scope=SCOPE)
    assert isinstance(claim, Claimed)
    await ledgers().record(claim, RESULT)
    others = [
        approval_scope("ops", "key-b"),
        approval_scope("ops", "key-a/someone"),
        approval_scope("other", "key-a"),
        approval_scope("ops", "key-a", "thr_1"),
    ]
    for other in others:
        foreign = await ledgers().claim(approval, scope=other)
        assert isinstance(foreign, Claimed) and foreign.scope == other, other
    await ledgers().record(Claimed(approval, claim.ticket, others[0]), ToolDenied("c1"))  # no entry of its own
    assert await ledgers().claim(approval, scope=SCOPE) == Settled(RESULT)


async def test_twenty_claims_at_once_give_exactly_one_claimer(ledgers: Callable[[], ApprovalLedger]) -> None:
    approval = token()
    claims = await asyncio.gather(*(ledgers().claim(approval, scope=SCOPE) for _ in range(20)))
    assert sum(isinstance(claim, Claimed) for claim in claims) == 1
    assert claims.count(Pending()) == 19


async def test_a_denial_is_recorded_like_a_result(ledgers: Callable[[], ApprovalLedger]) -> None:
    approval = token()
    claim = await ledgers().claim(approval, scope=SCOPE)
    assert isinstance(claim, Claimed)
    await ledgers().record(claim, ToolDenied("c1", "no"))
    assert await ledgers().claim(approval, scope=SCOPE) == Settled(ToolDenied("c1", "no"))


async def test_only_the_claimer_can_record(ledgers: Callable[[], ApprovalLedger]) -> None:
    approval = token()
    claim = await ledgers().claim(approval, scope=SCOPE)
    assert isinstance(claim, Claimed)
    await ledgers().record(Claimed(approval, "someone-else", SCOPE), ToolDenied("c1"))
    assert await ledgers().claim(approval, scope=SCOPE) == Pending()


async def test_memory_entries_expire_with_the_token() -> None:
    now = [0.0]
    ledger = MemoryApprovalLedger(ttl=10, clock=lambda: now[0])
    first = await ledger.claim("apr_1_a", scope=SCOPE)
    assert isinstance(first, Claimed)
    await ledger.record(first, RESULT)
    now[0] = 5
    assert isinstance(await ledger.claim("apr_1_b", scope=SCOPE), Claimed)
    now[0] = 10.5
    assert isinstance(await ledger.claim("apr_1_a", scope=SCOPE), Claimed)  # forgotten; its token no longer verifies
    assert await ledger.claim("apr_1_b", scope=SCOPE) == Pending()


async def test_redis_entries_expire_with_the_token(redis_url: str) -> None:
    client = redis.Redis.from_url(redis_url)
    try:
        ledger = RedisApprovalLedger(client, ttl=3600)
        approval = token()
        claim = await ledger.claim(approval, scope=SCOPE)
        assert isinstance(claim, Claimed)
        await ledger.record(claim, RESULT)
        (key,) = await client.keys(KEY_PREFIX + "*:" + approval)
        ttl = await client.pttl(key)
        assert 3_590_000 < ttl <= 3_600_000  # recording keeps the claim's expiry
    finally:
        await client.aclose()


async def test_an_unreachable_redis_is_an_error_not_a_claim() -> None:
    client = redis.Redis(host="127.0.0.1", port=1, socket_connect_timeout=0.5)
    try:
        with pytest.raises(ApprovalLedgerError):
            await RedisApprovalLedger(client).claim(token(), scope=SCOPE)
    finally:
        await client.aclose()


def test_outcomes_round_trip_through_json() -> None:
    for outcome in (RESULT, ToolDenied("c1", "too risky"), ToolResult("c2", "failed", is_error=True)):
        text = outcome_to_json(outcome)
        assert text.isascii()
        assert outcome_from_json(text) == outcome
