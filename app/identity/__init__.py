"""Sign-in tokens: people signed in with an OpenID provider call with its access tokens (``[auth.jwt]``).

``keys.py`` holds the issuer's signing keys (its JWKS, fetched once and refreshed on an unknown ``kid`` at
most once per ``jwks_refresh_seconds``); ``tokens.py`` verifies a token against them and turns it into the
``Caller`` of a person, cached until the token expires. The access layer (app/access/gate.py) asks it only
for bearer values that are not configured keys; everything after access sees just the ``Caller``.
"""

from __future__ import annotations

from chatgate.identity.keys import IssuerKeys
from chatgate.identity.page import SIGN_IN_PATH, issuer_origin, sign_in_settings
from chatgate.identity.tokens import TokenVerifier, invalid_token

__all__ = [
    "SIGN_IN_PATH",
    "IssuerKeys",
    "TokenVerifier",
    "invalid_token",
    "issuer_origin",
    "sign_in_settings",
]
