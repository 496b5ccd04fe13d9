"""What an owner changes on a stored thread itself, shared by chatgate's thread routes and CopilotKit's.

A rename writes the thread's one title (``ThreadStore.set_title``, the field its automatic title also
fills); an archive sets or clears its archived flag; a delete stops a running turn first, then removes
it. Both route families validate with the same rules, so a title refused on one is refused on the other.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from starlette.requests import Request

from chatgate.access import read_body
from chatgate.errors import RequestError
from chatgate.ids import text_problem
from chatgate.store import ThreadInfo, ThreadStore
from chatgate.strict_json import client_json
from chatgate.threads import MAX_TITLE_CHARS, stop_and_wait
from chatgate.web.services import running_of, services_of
from chatgate.web.thread_paths import unknown_thread

__all__ = [
    "ThreadChange",
    "apply_change",
    "change_from",
    "checked_archived",
    "checked_title",
    "json_object",
    "remove_thread",
]


@dataclass(frozen=True, slots=True)
class ThreadChange:
    """A rename (``renames``: to ``title``, None clearing it) and/or an archive (``archived``; None: no change)."""

    renames: bool = False
    title: str | None = None
    archived: bool | None = None


async def json_object(request: Request) -> dict[str, Any]:
    """The request's body as a JSON object (capped like every body); 400 if not JSON, 422 if not an object."""
    raw = await read_body(request, running_of(request).agents.config.server)
    try:
        body = client_json(raw or b"{}", "(body)")
    except ValueError:
        raise RequestError(400, "invalid_request", "the body is not JSON") from None
    if not isinstance(body, dict):
        raise _invalid("(body)", "a JSON object")
    return body


def change_from(body: Mapping[str, object], title_field: str) -> ThreadChange:
    """The change a JSON body asks for: its title under ``title_field``, ``archived``; 422 if neither or bad."""
    renames = title_field in body
    title = checked_title(title_field, body.get(title_field))
    archived = checked_archived("archived", body["archived"]) if "archived" in body else None
    if not renames and archived is None:
        raise _invalid("(body)", f"give {title_field} or archived")
    return ThreadChange(renames, title, archived)


def checked_title(field: str, value: object) -> str | None:
    """A title as stored: trimmed text of 1 to ``MAX_TITLE_CHARS`` characters, or None (no title); else 422."""
    if value is None:
        return None
    if not isinstance(value, str):
        raise _invalid(field, "a string, or null for no title")
    title = value.strip()
    problem = text_problem(title)
    if problem is None and not title:
        problem = "is empty; send null for no title"
    if problem is None and len(title) > MAX_TITLE_CHARS:
        problem = f"is longer than {MAX_TITLE_CHARS} characters"
    if problem is not None:
        raise _invalid(field, problem)
    return title


def checked_archived(field: str, value: object) -> bool:
    """``value`` when it is a JSON boolean; else 422."""
    if not isinstance(value, bool):
        raise _invalid(field, "true or false")
    return value


async def apply_change(store: ThreadStore, thread: ThreadInfo, change: ThreadChange) -> ThreadInfo:
    """Write ``change`` to ``thread``: the thread as it is now; 404 if it went meanwhile."""
    if change.renames and not await store.set_title(thread, change.title):
        raise unknown_thread(thread.id)
    if change.archived is not None and not await store.set_archived(thread, change.archived):
        raise unknown_thread(thread.id)
    now = await store.get_thread(thread.owner, thread.agent, thread.id)
    if now is None:
        raise unknown_thread(thread.id)
    return now


async def remove_thread(request: Request, store: ThreadStore, thread: ThreadInfo, protocols: Iterable[str]) -> None:
    """Stop ``thread``'s running turn (its upstream request closed), then delete it; 404 if it went meanwhile."""
    run_log, runs = running_of(request).run_log, services_of(request.app).thread_runs
    await stop_and_wait(store, run_log, runs, thread, protocols)
    if not await store.delete(thread.owner, thread.agent, thread.id):
        raise unknown_thread(thread.id)


def _invalid(field: str, problem: str) -> RequestError:
    return RequestError(
        422, "invalid_request", f"the request is invalid: {field}: {problem}", [{"field": field, "problem": problem}]
    )
