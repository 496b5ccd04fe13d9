"""``data:`` URLs (RFC 2397), as user files carry their bytes inline: the base64 payload and the bytes.

The file checks (app/files/) size them and the providers send the payload in each upstream's own shape.
"""

from __future__ import annotations

import base64
import binascii

__all__ = ["data_url_bytes", "inline_base64"]


def inline_base64(url: str) -> str | None:
    """The base64 payload of a ``data:`` URL (a plain-text payload encoded), or None for any other URL."""
    header, comma, payload = url.partition(",")
    if not comma or not header.startswith("data:"):
        return None
    if header.endswith(";base64"):
        return payload
    return base64.b64encode(payload.encode()).decode()


def data_url_bytes(url: str) -> bytes:
    """The bytes of a ``data:`` URL (base64 or plain text); ``ValueError`` when it is not one or is malformed."""
    payload = inline_base64(url)
    if payload is None:
        raise ValueError("not a data: URL")
    try:
        return base64.b64decode(payload, validate=True)
    except binascii.Error as exc:
        raise ValueError(f"invalid base64: {exc}") from None
