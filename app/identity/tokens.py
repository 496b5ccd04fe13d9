"""A sign-in token to the ``Caller`` of a person, or a 401 naming what failed.

A token is checked by PyJWT against a key of the issuer's JWKS: the algorithm must be in ``algorithms``
and fit the key's type (an RSA key verifies RS*/PS* only, a P-256 key ES256 only, an OKP key EdDSA only),
and ``iss``, ``aud``, ``exp`` (required), ``nbf`` and ``iat`` (when present) are checked with
``leeway_seconds``. A verified token is cached until it expires, so a stream or a client that sends the same
token again costs a dictionary look-up. Refusals name what failed, never the token.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from typing import Any

import jwt

from chatgate.caller import Caller
from chatgate.config import JwtConfig
from chatgate.errors import RequestError
from chatgate.identity.keys import IssuerKeys, KeysUnavailable
from chatgate.ids import id_problem

__all__ = ["TokenVerifier", "invalid_token"]

logger = logging.getLogger("chatgate.identity")

_CACHE_MOST = 10_000
_CURVES = {"ES256": "P-256", "ES384": "P-384", "ES512": "P-521"}


def invalid_token(reason: str) -> RequestError:
    """The 401 of a refused token: ``invalid_token``, with ``reason`` in the message."""
    return RequestError(
        401,
        "invalid_token",
        f"the sign-in token was refused: {reason}",
        headers={"WWW-Authenticate": 'Bearer realm="chatgate", error="invalid_token"'},
    )


class TokenVerifier:
    """Verifies the tokens of one ``[auth.jwt]``; ``keys`` is the issuer's key set (kept across reloads)."""

    def __init__(self, settings: JwtConfig) -> None:
        self.settings = settings
        self.keys = IssuerKeys(settings)
        self._verified: dict[str, tuple[Caller, float]] = {}
        self.verifications = 0

    async def caller(self, token: str) -> Caller:
        """The person ``token`` proves to be; 401 ``invalid_token`` if it proves nothing."""
        cached = self._verified.get(token)
        if cached is not None:
            caller, expires = cached
            if time.time() < expires + self.settings.leeway_seconds:
                return caller
            del self._verified[token]
        try:
            caller, expires = await self._verify(token)
        except RequestError as refused:
            logger.info("%s", refused.message)  # the reason, never the token itself
            raise
        if len(self._verified) >= _CACHE_MOST:
            self._forget_expired()
        self._verified[token] = (caller, expires)
        return caller

    async def _verify(self, token: str) -> tuple[Caller, float]:
        self.verifications += 1
        settings = self.settings
        try:
            header = jwt.get_unverified_header(token)
        except jwt.PyJWTError:
            raise invalid_token("it is neither a configured API key nor a well-formed JWT") from None
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in settings.algorithms:
            allowed = ", ".join(settings.algorithms)
            raise invalid_token(f"algorithm {str(alg)[:20]!r} is not allowed (allowed: {allowed})")
        kid = header.get("kid")
        if kid is not None and not isinstance(kid, str):
            raise invalid_token("the kid header is not a string")
        try:
            key = await self.keys.key(kid)
        except KeysUnavailable:
            raise RequestError(
                503,
                "identity_unavailable",
                "the identity provider's signing keys could not be fetched; try again shortly",
                headers={"Retry-After": str(max(1, round(settings.jwks_refresh_seconds)))},
            ) from None
        if key is None:
            raise invalid_token("it names an unknown signing key (kid)" if kid else "it names no key (kid)")
        mismatch = _key_mismatch(alg, key)
        if mismatch:
            raise invalid_token(mismatch)
        try:
            claims = jwt.decode(
                token,
                key.key,
                algorithms=[alg],
                audience=settings.audience,
                issuer=settings.issuer,
                leeway=settings.leeway_seconds,
                # PyJWT refuses a `sub` that is not a string; `sub` counts only as user_claim, checked below.
                options={"require": ["exp", "iss", "aud"], "verify_sub": False},
            )
        except jwt.PyJWTError as error:
            raise invalid_token(_reason(error, settings)) from None
        except (TypeError, ValueError):  # a key PyJWT cannot use for this algorithm after all
            raise invalid_token(f"algorithm {alg!r} does not fit the key it names") from None
        return self._person(claims), float(claims["exp"])

    def _person(self, claims: Mapping[str, Any]) -> Caller:
        settings = self.settings
        user = claims.get(settings.user_claim)
        if isinstance(user, int) and not isinstance(user, bool):
            user = str(user)
        if not isinstance(user, str) or not user:
            raise invalid_token(f"claim {settings.user_claim!r} (user_claim) is missing or not a string")
        problem = id_problem(user)  # it names the person's threads: stored, so the one id rule holds
        if problem is not None:
            raise invalid_token(f"claim {settings.user_claim!r} (user_claim) {problem}")
        agents = frozenset(settings.agents) if settings.agents is not None else None
        if settings.agents_claim is not None:
            listed = _strings(claims.get(settings.agents_claim))
            agents = listed if agents is None else agents & listed
        admin = settings.admin_claim is not None and settings.admin_claim.value in _strings(
            claims.get(settings.admin_claim.claim)
        )
        return Caller(key_id=None, admin=admin, agents=agents, person=f"{claims['iss']}#{user}")

    def _forget_expired(self) -> None:
        now = time.time() - self.settings.leeway_seconds
        for token in [token for token, (_, expires) in self._verified.items() if expires <= now]:
            del self._verified[token]
        while len(self._verified) >= _CACHE_MOST:  # all still valid: drop the oldest
            del self._verified[next(iter(self._verified))]


def _key_mismatch(alg: str, key: jwt.PyJWK) -> str | None:
    """Why ``key`` may not verify ``alg`` (None: it may)."""
    data: Mapping[str, Any] = key._jwk_data
    kty = data.get("kty")
    if alg.startswith(("RS", "PS")):
        fits = kty == "RSA"
    elif alg in _CURVES:
        fits = kty == "EC" and data.get("crv") == _CURVES[alg]
    else:
        fits = kty == "OKP" and data.get("crv") in ("Ed25519", "Ed448")
    if not fits:
        return f"algorithm {alg!r} does not fit the type of the key it names"
    if data.get("alg") not in (None, alg):
        return f"the key it names is for {data.get('alg')!r}, not {alg!r}"
    return None


def _strings(value: Any) -> frozenset[str]:
    """A claim as a set of strings: a list of them, or one space-separated string (as ``scope`` is)."""
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list):
        return frozenset(item for item in value if isinstance(item, str))
    return frozenset()


def _reason(error: jwt.PyJWTError, settings: JwtConfig) -> str:
    """What failed, in words (PyJWT's message for the rare cases not named here)."""
    if isinstance(error, jwt.ExpiredSignatureError):
        return "it has expired (exp)"
    if isinstance(error, jwt.ImmatureSignatureError):
        return "it is not valid yet (nbf or iat in the future)"
    if isinstance(error, jwt.InvalidAudienceError):
        return f"wrong audience (aud): expected {settings.audience!r}"
    if isinstance(error, jwt.InvalidIssuerError):
        return f"wrong issuer (iss): expected {settings.issuer!r}"
    if isinstance(error, jwt.InvalidSignatureError):
        return "the signature does not verify"
    if isinstance(error, jwt.MissingRequiredClaimError):
        return f"claim {error.claim!r} is missing"
    if isinstance(error, jwt.DecodeError):
        return "it is not a well-formed JWT"
    return str(error)[:200]
