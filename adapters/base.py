"""What both adapters share: SSE framing and request-body validation with clear 4xx errors."""

from __future__ import annotations

from typing import Any, TypeVar

from pydantic import TypeAdapter, ValidationError
from pydantic_core import to_json

from chatgate.errors import RequestError

__all__ = ["decode_body", "sse_frame"]

T = TypeVar("T")


def sse_frame(payload: Any) -> bytes:
    """One SSE frame, LF-only: ``data: <json>\\n\\n``. ``payload`` must hold no ``None`` values."""
    return b"data: " + to_json(payload) + b"\n\n"


def decode_body(body: bytes, schema: TypeAdapter[T]) -> T:
    """Validate a JSON request body; 400 when it is not JSON, 422 naming each wrong field otherwise."""
    try:
        return schema.validate_json(body)
    except ValidationError as exc:
        errors = exc.errors(include_url=False, include_context=False, include_input=False)
        if any(error["type"] == "json_invalid" for error in errors):
            raise RequestError(400, "invalid_json", f"the body is not valid JSON: {errors[0]['msg']}") from None
        details = [
            {"field": ".".join(str(part) for part in error["loc"]) or "(body)", "problem": error["msg"]}
            for error in errors
        ]
        summary = "; ".join(f"{d['field']}: {d['problem']}" for d in details[:5])
        raise RequestError(422, "invalid_request", f"the request is invalid: {summary}", details) from None
