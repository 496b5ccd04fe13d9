"""A run's journal: its protocol-neutral events, kept beside its encoded frames in a Redis run log.

The frames a run log holds are the request protocol's own (useChat SSE in one of several versions,
AG-UI events). Folding them back into a turn would take a decoder per protocol and version, mirroring
each encoder. The journal keeps what the producer's ``TurnRecorder`` is fed instead: one JSON line per
run event, written to the same Stream entry as the frames it batches with (one script call, so any
frame a follower read from Redis has its event in the journal too). Whoever finds the producer dead
folds the journal through a ``TurnRecorder`` again (app/threads/recovery.py) and stores the very turn the
producer would have saved. The first line is the run's header: the id of its first assistant message.
"""

from __future__ import annotations

import json
from dataclasses import astuple, fields, is_dataclass, replace
from typing import Any

from chatgate import events
from chatgate.events import ModelUsage, RunEvent, RunFailed, RunFinished

__all__ = ["decode_record", "encode_event", "encode_header"]

_TYPES: dict[str, type[Any]] = {
    name: getattr(events, name)
    for name in events.__all__
    if name not in ("RunEvent", "FinishReason", "ModelUsage", "UsageTally")
}
_FIELDS: dict[type[Any], tuple[str, tuple[str, ...]]] = {
    kind: (name, tuple(f.name for f in fields(kind) if f.metadata.get("journal", True)))
    for name, kind in _TYPES.items()
}
_HEADER = "header"
# A line is a JSON array: the event's type, then its fields in order (a third of the cost of an object).


def _value(value: Any) -> Any:
    """A journal value for what JSON cannot hold: a ``ModelUsage`` as its fields, anything else as text."""
    return astuple(value) if is_dataclass(value) and not isinstance(value, type) else str(value)


_encode = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, default=_value).encode


def encode_event(event: RunEvent) -> bytes:
    """One journal line for ``event`` (a value no JSON can hold, a tool's raw ``output``, as its text)."""
    name, names = _FIELDS[type(event)]
    return _encode([name, *[getattr(event, field) for field in names]]).encode()


def encode_header(first_id: str | None) -> bytes:
    """The journal's first line: the id the run's first assistant message gets (useChat's ``messageId``)."""
    return _encode([_HEADER, first_id]).encode()


def _usage(entries: Any) -> tuple[ModelUsage, ...]:
    """A terminal event's usage from its journal line: each ``ModelUsage`` was written as its fields."""
    return tuple(ModelUsage(*entry) for entry in entries)


def decode_record(line: bytes) -> RunEvent | str | None:
    """A journal line: its event, the header's first id (``""`` for none), or None for a line it cannot read."""
    try:
        kind, *values = json.loads(line)
        if kind == _HEADER:
            return str(values[0] or "")
        event: RunEvent = _TYPES[kind](*values)
        if isinstance(event, RunFailed):
            event = replace(event, usage=_usage(event.usage))
        elif isinstance(event, RunFinished):
            event = replace(event, usage=_usage(event.usage), pending_tool_call_ids=tuple(event.pending_tool_call_ids))
        return event
    except (ValueError, KeyError, TypeError, IndexError):
        return None
