"""``GET /usage`` (admin: everyone's, grouped), ``GET /usage/me`` (the caller's own), prompt versions.

``GET /agents/{agent}/prompts`` (admin) lists the prompt versions an agent's runs answered under;
``GET /agents/{agent}/experiment`` (admin) compares its variants by their feedback (docs/prompts.md).

Query: ``since`` and ``until`` (ISO 8601 dates or times, UTC when no offset; default: this calendar
month so far), ``group_by`` (comma-separated of person, key, agent, model, day, prompt_version, variant;
default: agent, model).
"""

from __future__ import annotations

from dataclasses import asdict
from datetime import UTC, datetime
from typing import Any

from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import BaseRoute, Route

from chatgate.caller import caller_of
from chatgate.errors import RequestError
from chatgate.usage import DECISION_PROBABILITY, GROUPS, Group, VariantTally, compare_variants, person_of
from chatgate.web.openapi import OPERATIONS, Operation
from chatgate.web.services import running_of

__all__ = ["usage_routes"]

_DEFAULT_GROUPS: tuple[Group, ...] = ("agent", "model")

OPERATIONS[("GET", "/usage")] = Operation(
    "Tokens and cost of every caller's runs, grouped (admin keys only); query since, until, group_by"
)
OPERATIONS[("GET", "/usage/me")] = Operation("Tokens and cost of the caller's own runs; query since, until, group_by")
OPERATIONS[("GET", "/agents/{agent}/prompts")] = Operation(
    "The prompt versions an agent's runs answered under, per variant: runs, first and last use (admin keys only)"
)


OPERATIONS[("GET", "/agents/{agent}/experiment")] = Operation(
    "An agent's variants compared by their feedback: each one's probability of being the best (admin keys only);"
    " query since, until"
)


def usage_routes() -> list[BaseRoute]:
    """The usage routes."""
    return [
        Route("/usage", _all_usage, methods=["GET"]),
        Route("/usage/me", _my_usage, methods=["GET"]),
        Route("/agents/{agent}/prompts", _prompt_versions, methods=["GET"]),
        Route("/agents/{agent}/experiment", _experiment, methods=["GET"]),
    ]


def _bad(field: str, problem: str) -> RequestError:
    return RequestError(422, "invalid_query", f"{field}: {problem}", [{"field": field, "problem": problem}])


def _time(request: Request, field: str, default: datetime) -> datetime:
    text = request.query_params.get(field)
    if text is None:
        return default
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise _bad(field, f"not an ISO 8601 date or time: {text[:40]!r}") from None
    return value if value.tzinfo is not None else value.replace(tzinfo=UTC)


def _groups(request: Request) -> tuple[Group, ...]:
    text = request.query_params.get("group_by")
    if text is None:
        return _DEFAULT_GROUPS
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in GROUPS]
    if unknown:
        raise _bad("group_by", f"unknown group {unknown[0][:40]!r} (known: {', '.join(GROUPS)})")
    return tuple(dict.fromkeys(names))  # type: ignore[arg-type]


def _window(request: Request, since: datetime | None = None) -> tuple[datetime, datetime]:
    """``since`` and ``until`` of the query; by default this calendar month (or from ``since``) until now."""
    now = datetime.now(UTC)
    since = _time(request, "since", since or datetime(now.year, now.month, 1, tzinfo=UTC))
    until = _time(request, "until", now)
    if until <= since:
        raise _bad("until", "must be after since")
    return since, until


async def _summary(request: Request, **only: str | None) -> Response:
    since, until = _window(request)
    group_by = _groups(request)
    accounts = running_of(request).usage
    rows = await accounts.ledger.summary(group_by, since.timestamp(), until.timestamp(), **only)
    body: dict[str, Any] = {
        "since": since.isoformat(),
        "until": until.isoformat(),
        "group_by": list(group_by),
        "rows": rows,
    }
    return JSONResponse(body)


async def _all_usage(request: Request) -> Response:
    if not caller_of(request).admin:
        raise RequestError(403, "forbidden", "only admin keys may read /usage; use /usage/me for your own")
    return await _summary(request)


async def _my_usage(request: Request) -> Response:
    caller = caller_of(request)
    # A key's own usage includes the people it named; a named person sees theirs under that key only. A
    # caller with no key id (no keys configured, or a person the identity layer signed in) matches only
    # rows with none: never every key's.
    return await _summary(request, key_id=caller.key_id or "", person=person_of(caller))


async def _prompt_versions(request: Request) -> Response:
    """Versions and hashes only: a prompt's text is never in this answer, nor in the ledger."""
    if not caller_of(request).admin:
        raise RequestError(403, "forbidden", "only admin keys may read an agent's prompt versions")
    running = running_of(request)
    agent = request.path_params["agent"]
    if running.agents.get(agent) is None:
        raise RequestError(404, "unknown_agent", f"no agent named {agent[:100]!r}")
    versions = await running.usage.ledger.prompt_versions(agent)
    return JSONResponse({"agent": agent, "versions": versions})


async def _experiment(request: Request) -> Response:
    """The agent's configured variants, by the feedback on their runs (all time unless the query says)."""
    if not caller_of(request).admin:
        raise RequestError(403, "forbidden", "only admin keys may read an agent's experiment")
    running = running_of(request)
    name = request.path_params["agent"]
    agent = running.agents.get(name)
    if agent is None:
        raise RequestError(404, "unknown_agent", f"no agent named {name[:100]!r}")
    variants = agent.config.variants
    if not variants:
        raise RequestError(404, "no_variants", f"agent {name!r} has no variants to compare")
    since, until = _window(request, datetime.fromtimestamp(0, UTC))
    rows = await running.usage.ledger.summary(("agent", "variant"), since.timestamp(), until.timestamp())
    found = {row["variant"]: row for row in rows if row["agent"] == name and row["variant"] in variants}
    tallies = {
        label: VariantTally(found[label]["runs"], found[label]["positive"], found[label]["negative"])
        if label in found
        else VariantTally(0, 0, 0)
        for label in variants
    }
    experiment = compare_variants(tallies)
    standings = [
        {**asdict(standing), "weight": variants[standing.label].weight} | _counts(tallies[standing.label])
        for standing in experiment.variants
    ]
    body = {
        "agent": name,
        "since": since.isoformat(),
        "until": until.isoformat(),
        "decision_probability": DECISION_PROBABILITY,
        "variants": standings,
        "leader": experiment.leader,
        "decided": experiment.decided,
        "feedback_needed": experiment.feedback_needed,
        "runs_needed": experiment.runs_needed,
    }
    return JSONResponse(body)


def _counts(tally: VariantTally) -> dict[str, int]:
    return {"positive": tally.positive, "negative": tally.negative}
