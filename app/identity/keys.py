"""The issuer's signing keys: its JWKS, fetched once and kept.

The JWKS comes from ``jwks_url`` or from the ``jwks_uri`` of the issuer's discovery document
(``{issuer}/.well-known/openid-configuration``). A token naming a ``kid`` the cached set lacks (a key
rotation) fetches it again, but at most once per ``jwks_refresh_seconds`` whatever the tokens say, and
one fetch at a time: a flood of made-up ``kid``s costs the provider one request per period. A failed fetch
keeps the keys already known, so an outage of the provider stops no token signed by them.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

import httpx
import jwt

from chatgate.config import JwtConfig
from chatgate.errors import ChatgateError

__all__ = ["READY_FETCH_SECONDS", "IssuerKeys", "KeysUnavailable"]

logger = logging.getLogger("chatgate.identity")

_FETCH_SECONDS = 5.0
READY_FETCH_SECONDS = 10.0
"""While no key set is known, ``/readyz`` tries a fetch at most this often."""
_KEY_TYPES = frozenset({"RSA", "EC", "OKP"})


class KeysUnavailable(ChatgateError):
    """No key set was ever fetched: the provider could not be reached or answered nonsense."""


class IssuerKeys:
    """The signing keys of one issuer, by ``kid``; ``fetches`` counts the JWKS requests made."""

    def __init__(self, settings: JwtConfig) -> None:
        self._settings = settings
        self._keys: dict[str, jwt.PyJWK] | None = None
        self._jwks_url = settings.jwks_url
        self._last_attempt = -float("inf")
        self._lock = asyncio.Lock()
        self.fetches = 0

    async def key(self, kid: str | None) -> jwt.PyJWK | None:
        """The key called ``kid`` (with no ``kid``: the only key, if there is one); None when unknown.

        Raises ``KeysUnavailable`` when no key set could ever be fetched.
        """
        found = self._find(kid)
        if found is not None:
            return found
        async with self._lock:  # one fetch at a time; waiters then look at its result
            found = self._find(kid)
            if found is None and time.monotonic() - self._last_attempt >= self._settings.jwks_refresh_seconds:
                await self._refresh()
                found = self._find(kid)
        if self._keys is None:
            raise KeysUnavailable
        return found

    async def ready(self) -> None:
        """Return when a key set is known or can be fetched now; raise ``KeysUnavailable`` otherwise (``/readyz``).

        With keys cached this asks nothing, so an outage of the provider leaves the replica ready. Without
        any, it tries a fetch at most once per ``READY_FETCH_SECONDS`` (the probe is unauthenticated).
        """
        if self._keys is not None:
            return
        async with self._lock:
            wait = min(self._settings.jwks_refresh_seconds, READY_FETCH_SECONDS)
            if self._keys is None and time.monotonic() - self._last_attempt >= wait:
                await self._refresh()
        if self._keys is None:
            raise KeysUnavailable(f"no signing keys of {self._settings.issuer} could be fetched")

    def _find(self, kid: str | None) -> jwt.PyJWK | None:
        if self._keys is None:
            return None
        if kid is None:
            return next(iter(self._keys.values())) if len(self._keys) == 1 else None
        return self._keys.get(kid)

    async def _refresh(self) -> None:
        self._last_attempt = time.monotonic()
        try:
            async with httpx.AsyncClient(timeout=_FETCH_SECONDS, follow_redirects=False) as client:
                if self._jwks_url is None:
                    self._jwks_url = await _discover(client, self._settings.issuer)
                self.fetches += 1
                response = await client.get(self._jwks_url)
                response.raise_for_status()
                keys = _parse(response.json())
        except (httpx.HTTPError, ValueError) as error:
            known = "keeping the keys already known" if self._keys is not None else "no keys known yet"
            logger.warning("could not fetch the signing keys of %s (%s); %s", self._settings.issuer, error, known)
            return
        logger.info("fetched %d signing key(s) of %s", len(keys), self._settings.issuer)
        self._keys = keys


async def _discover(client: httpx.AsyncClient, issuer: str) -> str:
    """The ``jwks_uri`` of ``issuer``'s discovery document."""
    response = await client.get(issuer.rstrip("/") + "/.well-known/openid-configuration")
    response.raise_for_status()
    document = response.json()
    jwks_uri = document.get("jwks_uri") if isinstance(document, dict) else None
    if not isinstance(jwks_uri, str) or not jwks_uri.startswith(("https://", "http://")):
        raise ValueError("the discovery document has no jwks_uri")
    return jwks_uri


def _parse(document: Any) -> dict[str, jwt.PyJWK]:
    """The signing keys of a JWKS document, by ``kid``; keys of unknown types or for encryption are left out."""
    if not isinstance(document, dict) or not isinstance(document.get("keys"), list):
        raise ValueError("the JWKS has no keys list")
    keys: dict[str, jwt.PyJWK] = {}
    for entry in document["keys"]:
        if not isinstance(entry, dict) or entry.get("use", "sig") != "sig" or entry.get("kty") not in _KEY_TYPES:
            continue  # encryption keys, and symmetric ("oct") keys, which no public JWKS should hold
        try:
            key = jwt.PyJWK(entry)
        except jwt.PyJWTError:
            continue  # a key type this build cannot use: tokens naming it are refused as unknown
        keys[str(entry.get("kid", ""))] = key
    if not keys:
        raise ValueError("the JWKS has no usable signing key")
    return keys
