"""Identifiers: the ones chatgate makes, and the one rule for the ones clients send.

A client names threads, messages, tool calls, approvals and prompts. Every such name is checked once,
here, with the same rule on every store (docs/conversations.md, "Ids"): 1 to ``MAX_ID_LENGTH``
characters, none of them a control character (Unicode ``Cc``: NUL, tab, newline, DEL, C1), a
surrogate (``Cs``) or a line or paragraph separator (``Zl``, ``Zp``). PostgreSQL cannot store NUL in
``text`` at all, and a control character in an id is never what a real client meant: useChat ids are
nanoid-like (``[0-9A-Za-z]``), AG-UI and CopilotKit ids are UUIDs. A thread id also names a URL path
segment, so it holds no ``/`` and is not ``.`` or ``..``.
"""

from __future__ import annotations

import secrets
import unicodedata
from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator

from chatgate.errors import RequestError

__all__ = [
    "MAX_ID_LENGTH",
    "ClientId",
    "ClientThreadId",
    "StorableText",
    "check_id",
    "check_thread_id",
    "id_problem",
    "new_id",
    "text_problem",
    "thread_id_problem",
]

MAX_ID_LENGTH = 200
"""The longest id a client may send, in characters."""

_REFUSED_CATEGORIES = frozenset({"Cc", "Cs", "Zl", "Zp"})


def new_id(prefix: str) -> str:
    """A fresh random id such as ``msg_3f9a...``: unique enough to never collide within a thread."""
    return f"{prefix}_{secrets.token_hex(12)}"


def id_problem(value: str) -> str | None:
    """What is wrong with ``value`` as a client's id, or None when it may be used."""
    if not value:
        return "must not be empty"
    if len(value) > MAX_ID_LENGTH:
        return f"is longer than {MAX_ID_LENGTH} characters"
    if value.isascii() and value.isprintable():  # the common case: one C-level scan
        return None
    for char in value:
        if unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"holds the character U+{ord(char):04X}; ids hold no control characters, surrogates or line breaks"
    return None


def thread_id_problem(value: str) -> str | None:
    """``id_problem``, and what keeps a thread id one URL path segment: no ``/``, not ``.`` or ``..``."""
    problem = id_problem(value)
    if problem is None and "/" in value:
        return "holds a '/'; a thread id is one URL path segment"
    if problem is None and value in {".", ".."}:
        return "is a dot segment; a thread id is one URL path segment"
    return problem


def text_problem(value: str) -> str | None:
    """What keeps free text (a system message) out of a ``text`` column: NUL and lone surrogates."""
    if "\0" in value:
        return "holds a NUL character (U+0000), which cannot be stored"
    if not value.isascii() and any("\ud800" <= char <= "\udfff" for char in value):
        return "holds a lone surrogate, which cannot be stored"
    return None


def check_thread_id(field: str, value: str) -> str:
    """``value`` when it is a valid thread id; otherwise a 422 naming ``field``."""
    return _checked(field, value, thread_id_problem(value))


def check_id(field: str, value: str) -> str:
    """``value`` when it is a valid client id (a path's run or message id); otherwise a 422 naming ``field``."""
    return _checked(field, value, id_problem(value))


def _checked(field: str, value: str, problem: str | None) -> str:
    if problem is None:
        return value
    raise RequestError(
        422, "invalid_request", f"the request is invalid: {field}: {problem}", [{"field": field, "problem": problem}]
    )


def _valid(problem_of: Callable[[str], str | None]) -> AfterValidator:
    def validate(value: str) -> str:
        problem = problem_of(value) if value else None  # "" on the wire means "none given"
        if problem is not None:
            raise ValueError(problem)
        return value

    return AfterValidator(validate)


ClientId = Annotated[str, _valid(id_problem)]
"""A wire model's id field: pydantic refuses a bad one with a 422 naming the wire field ("" is "none")."""

ClientThreadId = Annotated[str, _valid(thread_id_problem)]
"""A wire model's thread id field (useChat ``id``, AG-UI ``threadId``)."""

StorableText = Annotated[str, _valid(text_problem)]
"""Free text a client asks the store to keep in a column of its own (a system message)."""
