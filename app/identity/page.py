"""What the chat page needs to sign a person in: ``GET /sign-in.json`` and the issuer in its CSP.

With ``[auth.jwt] page_client_id`` the page runs the authorization code flow with PKCE against the
issuer itself (tests/clients/page/src/sign_in.js): it reads the issuer, its client id and the extra
parameters of its requests here, and must be allowed to fetch the issuer's discovery document and token
endpoint. Without ``page_client_id`` this answers 404 and the page asks for a key, as before.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from starlette.responses import JSONResponse

from chatgate.config import Config
from chatgate.errors import RequestError

__all__ = ["SIGN_IN_PATH", "issuer_origin", "sign_in_settings"]

SIGN_IN_PATH = "/sign-in.json"


def issuer_origin(config: Config) -> str | None:
    """The issuer's origin when the page signs people in (for its ``connect-src``), else None."""
    settings = config.auth.jwt
    if settings is None or settings.page_client_id is None:
        return None
    parts = urlsplit(settings.issuer)
    return f"{parts.scheme}://{parts.netloc}"


def sign_in_settings(config: Config) -> JSONResponse:
    """The sign-in under ``config``: issuer, client id and request parameters; 404 when the page asks for keys."""
    settings = config.auth.jwt
    if settings is None or settings.page_client_id is None:
        raise RequestError(404, "not_found", "the chat page signs nobody in: [auth.jwt] page_client_id is not set")
    return JSONResponse(
        {"issuer": settings.issuer, "client_id": settings.page_client_id, "params": settings.page_params},
        headers={"cache-control": "no-cache"},
    )
