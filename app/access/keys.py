"""Who a request is: the ``[[keys]]`` entry its secret matches, as a ``Caller``.

With ``[auth.jwt]``, a bearer value that is no key is handed on to be verified as a sign-in token
(app/identity/).

Clients send ``Authorization: Bearer <key>`` or ``x-api-key: <key>``. The secret is hashed once and its
digest compared with every configured digest in constant time (``hmac.compare_digest``, no early exit),
so neither the comparison nor the log reveals it: refusals name no secret, only what was missing.
"""

from __future__ import annotations

import hashlib
import hmac
import re

from starlette.datastructures import Headers

from chatgate.caller import LOCAL, Caller
from chatgate.config import Config, KeyConfig
from chatgate.errors import RequestError

__all__ = ["USER_HEADER", "KeyRing"]

USER_HEADER = "x-chatgate-user"
"""The end user a trusted backend names; only keys with ``trusted_user_header = true`` may send it."""

_USER = re.compile(r"[\x21-\x7e](?:[\x20-\x7e]{0,198}[\x21-\x7e])?")  # printable ASCII, 1-200 characters
_UNAUTHORIZED = {"WWW-Authenticate": 'Bearer realm="chatgate"'}


class KeyRing:
    """The keys of one config, matched by digest. With no keys and no ``[auth.jwt]`` every request is ``LOCAL``."""

    def __init__(self, config: Config) -> None:
        self.config = config
        self._keys = [(key.digest, key) for key in config.keys]
        self._by_id = {key.id: key for key in config.keys}
        self._tokens = config.auth.jwt is not None

    @property
    def enabled(self) -> bool:
        """Whether requests must carry a key or a token."""
        return bool(self._keys) or self._tokens

    def key(self, key_id: str | None) -> KeyConfig | None:
        """The ``[[keys]]`` entry called ``key_id`` (None for ``LOCAL``)."""
        return self._by_id.get(key_id) if key_id is not None else None

    def authenticate(self, headers: Headers) -> Caller | str:
        """The caller ``headers`` prove to be; 401 for a missing or unknown key, 403 for a refused user header.

        With ``[auth.jwt]``, a bearer value that is no configured key is returned as it is: the sign-in token
        the caller must then verify (app/identity/).
        """
        if not self.enabled:
            return LOCAL
        secret = _presented_secret(headers)
        if secret is None:
            raise RequestError(
                401,
                "missing_key",
                "send an API key as 'Authorization: Bearer <key>' or 'x-api-key: <key>'"
                + (", or a sign-in token as 'Authorization: Bearer <token>'" if self._tokens else ""),
                headers=_UNAUTHORIZED,
            )
        digest = hashlib.sha256(secret.encode()).digest()
        found: KeyConfig | None = None
        for known, key in self._keys:  # every digest is compared: the time does not depend on which matched
            if hmac.compare_digest(known, digest):
                found = key
        if found is None and self._tokens and not headers.get("x-api-key"):
            if USER_HEADER in headers:
                raise RequestError(
                    403, "user_header_not_allowed", f"a sign-in token names its person itself: drop {USER_HEADER}"
                )
            return secret
        if found is None:
            raise RequestError(401, "invalid_key", "the API key is not valid", headers=_UNAUTHORIZED)
        return Caller(
            key_id=found.id,
            admin=found.admin,
            agents=frozenset(found.agents) if found.agents is not None else None,
            user=_user(found, headers.get(USER_HEADER)),
        )


def _presented_secret(headers: Headers) -> str | None:
    authorization = headers.get("authorization", "")
    scheme, _, token = authorization.partition(" ")
    if scheme.lower() == "bearer" and token.strip():
        return token.strip()
    api_key = headers.get("x-api-key", "").strip()
    return api_key or None


def _user(key: KeyConfig, value: str | None) -> str | None:
    if value is None:
        return None
    if not key.trusted_user_header:
        raise RequestError(
            403,
            "user_header_not_allowed",
            f"key {key.id!r} may not name a user in {USER_HEADER}: set trusted_user_header = true on the key",
        )
    if not _USER.fullmatch(value):
        raise RequestError(400, "invalid_user", f"{USER_HEADER} must be 1-200 printable ASCII characters")
    return value
