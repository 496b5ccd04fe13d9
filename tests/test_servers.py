"""The test servers are real: Redis and PostgreSQL answer on loopback."""

import asyncpg
import redis.asyncio as redis


async def test_redis_answers(redis_url: str) -> None:
    client = redis.from_url(redis_url)
    try:
        assert await client.ping()
    finally:
        await client.aclose()


async def test_postgres_answers(postgres_url: str) -> None:
    connection = await asyncpg.connect(postgres_url)
    try:
        assert await connection.fetchval("select 40 + 2") == 42
    finally:
        await connection.close()
