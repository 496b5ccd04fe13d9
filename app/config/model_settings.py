"""Which ``model_settings`` each kind of upstream understands, checked when the config loads.

Settings keep each API's own names, so its documentation applies as written. ``extra_body`` is the
escape hatch: a table merged into the request body as is, for anything not listed here.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["SETTINGS", "answer_tokens", "setting_problems"]

Check = Callable[[Any], str | None]


def _number(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool)
    return None if ok else "must be a number"


def _positive_int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return None if ok else "must be a positive integer"


def _int(value: Any) -> str | None:
    return None if isinstance(value, int) and not isinstance(value, bool) else "must be an integer"


def _string(value: Any) -> str | None:
    return None if isinstance(value, str) else "must be a string"


def _stop(value: Any) -> str | None:
    ok = isinstance(value, str) or (isinstance(value, list) and all(isinstance(item, str) for item in value))
    return None if ok else "must be a string or a list of strings"


def _table(value: Any) -> str | None:
    return None if isinstance(value, dict) else "must be a table"


def _thinking(value: Any) -> str | None:
    if isinstance(value, dict) or (isinstance(value, int) and not isinstance(value, bool) and value >= 1024):
        return None
    return "must be a budget of at least 1024 tokens, or a table as the Messages API takes it"


def _think(value: Any) -> str | None:
    ok = isinstance(value, bool) or value in ("low", "medium", "high")
    return None if ok else "must be true, false, 'low', 'medium' or 'high'"


def _non_negative_number(value: Any) -> str | None:
    ok = isinstance(value, int | float) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be a number of seconds, 0 or more"


def _non_negative_int(value: Any) -> str | None:
    ok = isinstance(value, int) and not isinstance(value, bool) and value >= 0
    return None if ok else "must be an integer, 0 or more"


def _bool(value: Any) -> str | None:
    return None if isinstance(value, bool) else "must be true or false"


def _keep_alive(value: Any) -> str | None:
    ok = isinstance(value, str | int | float) and not isinstance(value, bool)
    return None if ok else "must be a duration such as '5m', or seconds"


_COMMON: dict[str, Check] = {
    "temperature": _number,
    "top_p": _number,
    "max_tokens": _positive_int,
    "stop": _stop,
    "extra_body": _table,
}

SETTINGS: Mapping[str, Mapping[str, Check]] = {
    "openai": {
        **_COMMON,
        "max_completion_tokens": _positive_int,
        "reasoning_effort": _string,
        "seed": _int,
        "presence_penalty": _number,
        "frequency_penalty": _number,
    },
    "anthropic": {**_COMMON, "top_k": _positive_int, "thinking": _thinking},
    "ollama": {
        **_COMMON,
        "top_k": _positive_int,
        "seed": _int,
        "num_ctx": _positive_int,
        "think": _think,
        "keep_alive": _keep_alive,
        "truncate": _bool,
    },
    "builtin": {
        "delay": _non_negative_number,
        "reasoning": _bool,
        "fail_after": _non_negative_int,
        "history": _bool,
    },
}
"""Per provider kind (and ``builtin``): each setting it accepts and the check its value must pass."""


def setting_problems(kind: str, settings: Mapping[str, Any]) -> list[str]:
    """One ``"key: what is wrong"`` line per setting ``kind`` does not accept as given."""
    known = SETTINGS[kind]
    label = "the built-in model" if kind == "builtin" else f"{kind} providers"
    problems = []
    for key, value in settings.items():
        check = known.get(key)
        if check is None:
            problems.append(f"{key}: not a setting of {label} (known: {', '.join(sorted(known))})")
        elif (problem := check(value)) is not None:
            problems.append(f"{key}: {problem}")
    return problems


_ANSWER_KEYS = ("max_tokens", "max_completion_tokens", "num_predict")


def answer_tokens(settings: Mapping[str, Any], default: int | None = None) -> int | None:
    """The answer's token limit in ``model_settings`` (``max_tokens`` or the kind's name for it), or ``default``."""
    for key in _ANSWER_KEYS:
        value = settings.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return default
