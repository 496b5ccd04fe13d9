"""What both adapters share: SSE framing and request-body validation with clear 4xx errors.

A body is parsed by ``chatgate.strict_json.client_json`` (nesting depth and finite numbers checked,
each refusal naming the field) before the wire model validates it.
"""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError

from chatgate.errors import RequestError, invalid_request
from chatgate.strict_json import client_json, dump_json

__all__ = ["decode_body", "sse_frame"]

T = TypeVar("T")


def sse_frame(payload: Any) -> bytes:
    """One SSE frame, LF-only: ``data: <json>\\n\\n``. ``payload`` must hold no ``None`` values."""
    return b"data: " + dump_json(payload) + b"\n\n"


def decode_body(body: bytes, schema: TypeAdapter[T]) -> T:
    """Validate a JSON request body; 400 when it is not JSON, 422 naming each wrong field otherwise."""
    try:
        value = client_json(body, "(body)")
    except ValueError as exc:
        raise RequestError(400, "invalid_json", f"the body is not valid JSON: {exc}") from None
    try:
        return schema.validate_python(value)
    except ValidationError as exc:
        raise invalid_request(exc) from None
