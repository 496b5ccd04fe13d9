"""A real OpenID provider on loopback: npm ``oidc-provider`` run by tests/oidc/server.mjs, stopped by PID.

``scripts/test.sh`` installs it (``npm ci`` in tests/oidc). The provider issues real JWT access tokens for
audience ``chatgate`` to its clients ``alice`` and ``bob`` (client credentials) and ``page`` (authorization
code + PKCE); the script's test-only routes count JWKS fetches, rotate the signing keys and sign made-up
claims with the provider's own private key (for expired, not-yet-valid, wrong-issuer tokens).
"""

from __future__ import annotations

import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from tests.processes import stop_process
from tests.servers import _free_port, _wait_for_port

__all__ = ["OpenIDProvider", "running_oidc_provider"]

OIDC_DIR = Path(__file__).parent / "oidc"


@dataclass
class OpenIDProvider:
    """The running provider: its issuer URL, and helpers for the tests."""

    issuer: str

    def token(self, client: str = "alice", resource: str = "urn:chatgate") -> str:
        """A real access token of ``client`` (client credentials) for ``resource`` (audience ``chatgate``)."""
        response = httpx.post(
            f"{self.issuer}/token",
            data={
                "grant_type": "client_credentials",
                "client_id": client,
                "client_secret": f"{client}-secret-0123456789",
                "resource": resource,
                "scope": "api",
            },
        )
        response.raise_for_status()
        return str(response.json()["access_token"])

    def sign(self, claims: dict[str, Any], alg: str = "RS256", kid: str | None = None) -> str:
        """``claims`` signed with the provider's current private key for ``alg`` (and its kid, or ``kid``)."""
        response = httpx.post(f"{self.issuer}/test/sign", json={"claims": claims, "alg": alg, "kid": kid})
        response.raise_for_status()
        return str(response.json()["token"])

    def jwks_fetches(self) -> int:
        """How many times anyone fetched the provider's JWKS."""
        return int(httpx.get(f"{self.issuer}/test/stats").json()["jwks_fetches"])

    def rotate(self) -> list[str]:
        """New signing keys; the old ones leave the JWKS. Returns the new kids."""
        response = httpx.post(f"{self.issuer}/test/rotate")
        response.raise_for_status()
        return list(response.json()["kids"])

    def jwks(self) -> dict[str, Any]:
        """The provider's current public JWKS."""
        return dict(httpx.get(f"{self.issuer}/jwks").json())


@contextmanager
def running_oidc_provider(page_redirects: tuple[str, ...] = ()) -> Iterator[OpenIDProvider]:
    """Start tests/oidc/server.mjs on a free loopback port; yields the provider; stops it by PID.

    ``page_redirects``: the addresses the public client ``page`` may send a signed-in browser back to (the
    chat page's, the useChat app's).
    """
    if not (OIDC_DIR / "node_modules" / "oidc-provider").is_dir():
        raise RuntimeError("tests/oidc/node_modules is missing: run scripts/test.sh, which installs oidc-provider")
    port = _free_port()
    environ = {**os.environ, "OIDC_PAGE_REDIRECTS": ",".join(page_redirects)}
    process = subprocess.Popen(
        ["node", str(OIDC_DIR / "server.mjs"), str(port)],
        env=environ,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        _wait_for_port(port, process, "oidc-provider")
        yield OpenIDProvider(f"http://127.0.0.1:{port}")
    finally:
        stop_process(process)
