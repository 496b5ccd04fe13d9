"""Sign-in tokens from a real OpenID provider (npm oidc-provider on loopback): who gets in, and every attack refused.

Each attack is one test; each asserts the 401 ``invalid_token`` with its ``WWW-Authenticate`` challenge and
the reason named, and that nothing ran for it (no thread stored). The JWKS tests count the fetches the
provider itself received.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import secrets
import time
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest
import redis
from cryptography.hazmat.primitives import serialization
from jwt.algorithms import RSAAlgorithm

from chatgate.config import Config
from chatgate.errors import ConfigError
from chatgate.web.app import create_app
from tests.conftest import LiveServer, make_config
from tests.oidc_provider import OpenIDProvider, running_oidc_provider

WEB_KEY = "web-secret-0123456789"
AGENTS = {
    "assistant": {"model": "builtin:echo", "default": True},
    "other": {"model": "builtin:echo"},
    "internal": {"model": "builtin:echo"},
}
USER = {"id": "u1", "role": "user", "content": "hi"}


def token_config(issuer: str, **jwt: Any) -> Config:
    settings = {"issuer": issuer, "audience": "chatgate", "agents": ["assistant", "other"], **jwt}
    return make_config(AGENTS, keys=[{"id": "web", "key": WEB_KEY, "agents": ["assistant"]}], auth={"jwt": settings})


class Chatgate:
    """A live chatgate whose app the test can look into (the verifier's counts)."""

    def __init__(self, config: Config) -> None:
        self.app = create_app(config)
        self.server = LiveServer(self.app)
        self.server.start()
        self.url = self.server.url

    def run(self, token: str, agent: str = "assistant", **headers: str) -> httpx.Response:
        body = {"threadId": "t", "runId": "r", "messages": [USER]}
        return httpx.post(
            f"{self.url}/agents/{agent}/ag-ui", json=body, headers={"authorization": f"Bearer {token}", **headers}
        )

    @property
    def verifications(self) -> int:
        return int(self.app.services.access._tokens.verifications)


@pytest.fixture
def chatgate_for() -> Iterator[Callable[[Config], Chatgate]]:
    started: list[Chatgate] = []

    def start(config: Config) -> Chatgate:
        started.append(Chatgate(config))
        return started[-1]

    yield start
    for chatgate in started:
        chatgate.server.stop()


@pytest.fixture
def gate(oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]) -> Chatgate:
    return chatgate_for(token_config(oidc_provider.issuer, agents_claim="chatgate_agents"))


def b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def unsigned(header: dict[str, Any], claims: dict[str, Any]) -> str:
    return f"{b64(json.dumps(header).encode())}.{b64(json.dumps(claims).encode())}"


def claims(issuer: str, **changes: Any) -> dict[str, Any]:
    now = int(time.time())
    return {"iss": issuer, "aud": "chatgate", "sub": "mallory", "iat": now, "exp": now + 300, **changes}


def rsa_kid(provider: OpenIDProvider) -> str:
    return next(key["kid"] for key in provider.jwks()["keys"] if key["kty"] == "RSA")


# --- who gets in --------------------------------------------------------------------------------------


def test_a_real_token_is_a_person_and_a_static_key_still_works(gate: Chatgate, oidc_provider: OpenIDProvider) -> None:
    token = oidc_provider.token("alice")
    assert gate.run(token).status_code == 200
    assert gate.run(WEB_KEY).status_code == 200
    assert gate.run(WEB_KEY, agent="other").status_code == 403  # the key's own agents still apply
    listed = httpx.get(f"{gate.url}/agents", headers={"authorization": f"Bearer {token}"}).json()
    assert sorted(agent["name"] for agent in listed["agents"]) == ["assistant", "other"]


def test_a_token_is_verified_once_for_all_its_requests(gate: Chatgate, oidc_provider: OpenIDProvider) -> None:
    token = oidc_provider.token("alice")
    for _ in range(5):
        assert gate.run(token).status_code == 200
    assert gate.verifications == 1


def test_agents_claim_narrows_agents_and_admin_claim_makes_an_admin(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    gate = chatgate_for(
        token_config(
            oidc_provider.issuer,
            agents_claim="chatgate_agents",
            admin_claim={"claim": "roles", "value": "chatgate-admin"},
        )
    )
    alice, bob = oidc_provider.token("alice"), oidc_provider.token("bob")
    assert gate.run(alice, agent="other").status_code == 200
    refused = gate.run(bob, agent="other")  # bob's token lists only "assistant"
    assert refused.status_code == 403 and refused.json()["error"]["code"] == "agent_not_allowed"
    assert gate.run(alice, agent="internal").status_code == 403  # in alice's claim, not in [auth.jwt] agents
    metrics = f"{gate.url}/metrics"
    assert httpx.get(metrics, headers={"authorization": f"Bearer {bob}"}).status_code == 200
    assert httpx.get(metrics, headers={"authorization": f"Bearer {alice}"}).status_code == 403


def test_limits_are_per_person(oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]) -> None:
    gate = chatgate_for(token_config(oidc_provider.issuer, rpm=2))
    alice, bob = oidc_provider.token("alice"), oidc_provider.token("bob")
    assert [gate.run(alice).status_code for _ in range(2)] == [200, 200]
    refused = gate.run(alice)
    assert refused.status_code == 429
    assert refused.json()["error"]["message"].startswith(f"person '{oidc_provider.issuer}#alice' made 2 requests")
    assert gate.run(oidc_provider.token("alice")).status_code == 429  # a new token of the same person: same count
    assert gate.run(bob).status_code == 200


def test_limits_are_per_person_across_two_replicas_through_redis(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate], redis_url: str
) -> None:
    redis.Redis.from_url(redis_url).flushdb()
    config = make_config(
        AGENTS,
        server={"redis_url": redis_url},
        auth={"jwt": {"issuer": oidc_provider.issuer, "audience": "chatgate", "rpm": 2}},
    )
    one, two = chatgate_for(config), chatgate_for(config)
    alice, bob = oidc_provider.token("alice"), oidc_provider.token("bob")
    assert [one.run(alice).status_code, two.run(alice).status_code, one.run(alice).status_code] == [200, 200, 429]
    assert two.run(bob).status_code == 200


def test_a_persons_streams_beyond_max_concurrent_streams_are_refused_and_another_persons_are_not(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    agents = {**AGENTS, "slow": {"model": "builtin:echo", "model_settings": {"delay": 0.2}}}
    jwt = {"issuer": oidc_provider.issuer, "audience": "chatgate", "max_concurrent_streams": 1}
    gate = chatgate_for(make_config(agents, auth={"jwt": jwt}))
    alice, bob = oidc_provider.token("alice"), oidc_provider.token("bob")
    long = {"id": "u1", "role": "user", "content": " ".join(["word"] * 100)}  # 20 s of words: open all along
    body = {"threadId": "t", "runId": "r", "messages": [long]}
    headers = {"authorization": f"Bearer {alice}"}
    with httpx.stream("POST", f"{gate.url}/agents/slow/ag-ui", json=body, headers=headers, timeout=30) as held:
        assert held.status_code == 200
        lines = held.iter_lines()  # kept: a dropped iterator would close the stream
        assert "RUN_STARTED" in next(lines)
        refused = gate.run(alice)  # another agent, the same person: their one stream is taken
        bob_answered = gate.run(bob).status_code  # another person's stream is their own
    assert refused.status_code == 429, refused.text
    error = refused.json()["error"]
    assert error["code"] == "too_many_streams" and f"person '{oidc_provider.issuer}#alice'" in error["message"]
    assert bob_answered == 200


def test_exp_nbf_and_iat_within_leeway_are_accepted_and_just_beyond_it_refused(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    gate = chatgate_for(token_config(oidc_provider.issuer, leeway_seconds=30))
    now = int(time.time())
    issuer = oidc_provider.issuer
    within = [
        claims(issuer, iat=now - 310, exp=now - 10),  # expired 10 s ago
        claims(issuer, nbf=now + 10, exp=now + 300),  # valid in 10 s
        claims(issuer, iat=now + 10, exp=now + 300),  # issued 10 s from now (a clock ahead)
    ]
    beyond = [
        (claims(issuer, iat=now - 360, exp=now - 60), "expired"),
        (claims(issuer, nbf=now + 60, exp=now + 300), "not valid yet"),
        (claims(issuer, iat=now + 60, exp=now + 300), "not valid yet"),
    ]
    assert [gate.run(oidc_provider.sign(token)).status_code for token in within] == [200, 200, 200]
    for token, reason in beyond:
        refused = gate.run(oidc_provider.sign(token))
        assert refused.status_code == 401 and reason in refused.json()["error"]["message"], refused.text
    assert gate.verifications == 6


def test_a_token_may_not_name_a_user_header(gate: Chatgate, oidc_provider: OpenIDProvider) -> None:
    response = gate.run(oidc_provider.token("alice"), **{"x-chatgate-user": "bob"})
    assert response.status_code == 403 and response.json()["error"]["code"] == "user_header_not_allowed"


# --- the user claim: who owns the threads ------------------------------------------------------------


@pytest.fixture
def stored_gate(oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate], store_url: str) -> Chatgate:
    """The gate with stored threads on SQLite and PostgreSQL: a person's name reaches the store."""
    agents = {"assistant": {"model": "builtin:echo", "default": True, "conversations": "server"}}
    jwt = {"issuer": oidc_provider.issuer, "audience": "chatgate"}
    return chatgate_for(make_config(agents, auth={"jwt": jwt}, store={"url": store_url}))


def threads_of(gate: Chatgate, token: str) -> httpx.Response:
    return httpx.get(f"{gate.url}/agents/assistant/threads", headers={"authorization": f"Bearer {token}"})


@pytest.mark.parametrize("user", ["nul\x00user", "new\nline", "tab\tuser", "sep\u2028user", "del\x7f", "x" * 201])
def test_a_user_claim_that_is_no_id_is_401_on_every_route(
    stored_gate: Chatgate, oidc_provider: OpenIDProvider, user: str
) -> None:
    token = oidc_provider.sign(claims(oidc_provider.issuer, sub=user))
    for response in (stored_gate.run(token), threads_of(stored_gate, token)):
        assert response.status_code == 401, response.text
        error = response.json()["error"]
        assert error["code"] == "invalid_token" and "claim 'sub' (user_claim)" in error["message"], error
    assert threads_of(stored_gate, oidc_provider.token("alice")).json()["threads"] == []  # nothing was stored


def test_an_integer_sub_is_the_person_named_by_its_digits(stored_gate: Chatgate, oidc_provider: OpenIDProvider) -> None:
    number = oidc_provider.sign(claims(oidc_provider.issuer, sub=1234567))
    assert stored_gate.run(number).status_code == 200
    digits = oidc_provider.sign(claims(oidc_provider.issuer, sub="1234567"))
    (thread,) = threads_of(stored_gate, digits).json()["threads"]  # the same person's thread
    assert thread["id"] == "t"
    assert threads_of(stored_gate, oidc_provider.token("alice")).json()["threads"] == []


@pytest.mark.parametrize("sub", [True, 12.5, {"id": 1}, ["a"], None, ""])
def test_a_sub_of_another_type_is_401(gate: Chatgate, oidc_provider: OpenIDProvider, sub: Any) -> None:
    response = gate.run(oidc_provider.sign(claims(oidc_provider.issuer, sub=sub)))
    assert response.status_code == 401, response.text
    assert "claim 'sub' (user_claim) is missing or not a string" in response.json()["error"]["message"]


def test_another_user_claim_ignores_the_type_of_sub(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    gate = chatgate_for(token_config(oidc_provider.issuer, user_claim="email"))
    token = oidc_provider.sign(claims(oidc_provider.issuer, sub=42.5, email="ann@example.com"))
    assert gate.run(token).status_code == 200


# --- attacks: each refused with 401 invalid_token ------------------------------------------------------


def expired(provider: OpenIDProvider) -> str:
    now = int(time.time())
    return provider.sign(claims(provider.issuer, iat=now - 900, exp=now - 300))


def not_yet_valid(provider: OpenIDProvider) -> str:
    now = int(time.time())
    return provider.sign(claims(provider.issuer, nbf=now + 300, exp=now + 900))


def issued_in_the_future(provider: OpenIDProvider) -> str:
    now = int(time.time())
    return provider.sign(claims(provider.issuer, iat=now + 300, exp=now + 900))


def wrong_audience(provider: OpenIDProvider) -> str:
    return provider.token("alice", resource="urn:other")  # a real token, for another API


def wrong_issuer(provider: OpenIDProvider) -> str:
    return provider.sign(claims("http://127.0.0.1:1/evil"))  # the provider's own key, another iss


def alg_none(provider: OpenIDProvider) -> str:
    return unsigned({"alg": "none", "typ": "JWT", "kid": rsa_kid(provider)}, claims(provider.issuer)) + "."


def hs256_with_the_public_key(provider: OpenIDProvider) -> str:
    jwk = next(key for key in provider.jwks()["keys"] if key["kty"] == "RSA")
    public_key = RSAAlgorithm.from_jwk(json.dumps(jwk))
    pem = public_key.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)  # type: ignore[union-attr]
    signing_input = unsigned({"alg": "HS256", "typ": "JWT", "kid": jwk["kid"]}, claims(provider.issuer))
    return f"{signing_input}.{b64(hmac.new(pem, signing_input.encode(), hashlib.sha256).digest())}"


def tampered_payload(provider: OpenIDProvider) -> str:
    header, payload, signature = provider.token("alice").split(".")
    changed = json.loads(base64.urlsafe_b64decode(payload + "=="))
    changed["sub"] = "bob"
    return f"{header}.{b64(json.dumps(changed).encode())}.{signature}"


def unknown_kid(provider: OpenIDProvider) -> str:
    return provider.sign(claims(provider.issuer), kid="made-up-" + secrets.token_hex(4))


def alg_not_fitting_the_key(provider: OpenIDProvider) -> str:
    return provider.sign(claims(provider.issuer), alg="ES256", kid=rsa_kid(provider))  # an EC signature, RSA kid


def no_expiry(provider: OpenIDProvider) -> str:
    without = claims(provider.issuer)
    del without["exp"]
    return provider.sign(without)


def not_a_jwt(provider: OpenIDProvider) -> str:
    return "not-a-key-and-not-a-token"


@pytest.mark.parametrize(
    "token",
    [
        "a.b.c",
        "e30.e30.",  # {} . {}
        b64(b'{"alg":["RS256"]}') + ".e30.c2ln",
        b64(b'{"alg":"RS256","kid":7}') + ".e30.c2ln",
        b64(b"[1,2]") + ".e30.c2ln",
        b64(b'{"alg":"RS256"}') + "." + "A" * 50_000 + ".c2ln",
        b64(b'{"alg":"RS256","kid":"' + b"k" * 5000 + b'"}') + ".e30.c2ln",
    ],
)
def test_malformed_tokens_are_401_never_500(gate: Chatgate, token: str) -> None:
    response = gate.run(token)
    assert response.status_code == 401, response.text
    assert response.json()["error"]["code"] == "invalid_token"


def test_a_token_of_latin1_bytes_is_401(gate: Chatgate) -> None:
    body = {"threadId": "t", "runId": "r", "messages": [USER]}
    headers = {"authorization": b"Bearer \xe9t\xe9.\xe9t\xe9.x"}
    response = httpx.post(f"{gate.url}/agents/assistant/ag-ui", json=body, headers=headers)
    assert response.status_code == 401 and response.json()["error"]["code"] == "invalid_token"


ATTACKS: dict[str, tuple[Callable[[OpenIDProvider], str], str]] = {
    "expired": (expired, "expired"),
    "not_yet_valid": (not_yet_valid, "not valid yet"),
    "issued_in_the_future": (issued_in_the_future, "not valid yet"),
    "wrong_audience": (wrong_audience, "wrong audience"),
    "wrong_issuer": (wrong_issuer, "wrong issuer"),
    "alg_none": (alg_none, "'none' is not allowed"),
    "hs256_with_the_public_key": (hs256_with_the_public_key, "'HS256' is not allowed"),
    "tampered_payload": (tampered_payload, "signature does not verify"),
    "unknown_kid": (unknown_kid, "unknown signing key"),
    "alg_not_fitting_the_key": (alg_not_fitting_the_key, "does not fit the type of the key"),
    "no_expiry": (no_expiry, "'exp' is missing"),
    "not_a_jwt": (not_a_jwt, "neither a configured API key nor a well-formed JWT"),
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_an_attack_is_refused(
    attack: str, gate: Chatgate, oidc_provider: OpenIDProvider, caplog: pytest.LogCaptureFixture
) -> None:
    make, reason = ATTACKS[attack]
    token = make(oidc_provider)
    with caplog.at_level(logging.INFO, logger="chatgate"):
        response = gate.run(token)
    assert response.status_code == 401, response.text
    assert response.headers["www-authenticate"] == 'Bearer realm="chatgate", error="invalid_token"'
    error = response.json()["error"]
    assert error["code"] == "invalid_token" and reason in error["message"], error
    longest = max(token.split("."), key=len)
    assert longest not in response.text and longest not in caplog.text
    assert reason in caplog.text  # the refusal is logged, by its reason
    assert gate.run(oidc_provider.token("alice")).status_code == 200  # and the gate still lets people in


# --- the issuer's keys ----------------------------------------------------------------------------------


def test_a_flood_of_unknown_kids_fetches_the_jwks_once(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    gate = chatgate_for(token_config(oidc_provider.issuer, jwks_refresh_seconds=300))
    before = oidc_provider.jwks_fetches()
    assert gate.run(oidc_provider.token("alice")).status_code == 200
    flood = [gate.run(unknown_kid(oidc_provider)) for _ in range(40)]
    assert [response.status_code for response in flood] == [401] * 40
    assert oidc_provider.jwks_fetches() - before == 1


def test_a_rotated_key_is_fetched_and_the_retired_one_refused(
    chatgate_for: Callable[[Config], Chatgate],
) -> None:
    with running_oidc_provider() as provider:  # its own provider: rotating must not touch the session's
        gate = chatgate_for(token_config(provider.issuer, jwks_refresh_seconds=0.2))
        first = provider.token("alice")
        signed_before = provider.sign(claims(provider.issuer))
        assert gate.run(first).status_code == 200
        provider.rotate()
        time.sleep(0.3)  # past jwks_refresh_seconds, so the new kid may fetch the JWKS again
        assert gate.run(provider.token("bob")).status_code == 200
        assert provider.jwks_fetches() == 2
        retired = gate.run(signed_before)  # never verified before, and its key left the JWKS
        assert retired.status_code == 401 and "unknown signing key" in retired.json()["error"]["message"]


def test_a_provider_outage_stops_no_token_signed_by_a_known_key(
    chatgate_for: Callable[[Config], Chatgate],
) -> None:
    with running_oidc_provider() as provider:
        gate = chatgate_for(token_config(provider.issuer, jwks_refresh_seconds=0))
        first, second = provider.token("alice"), provider.token("bob")
        assert gate.run(first).status_code == 200
    # The provider is gone; bob's token was never seen, but its key was fetched with alice's.
    assert gate.run(second).status_code == 200
    assert gate.verifications == 2
    garbage = gate.run(unsigned({"alg": "RS256", "kid": "gone"}, claims(provider.issuer)) + ".c2ln")
    assert garbage.status_code == 401


def test_no_keys_at_all_is_a_503_not_a_pass(chatgate_for: Callable[[Config], Chatgate]) -> None:
    gate = chatgate_for(token_config("http://127.0.0.1:1", jwks_refresh_seconds=300))
    forged = unsigned({"alg": "RS256", "kid": "k"}, claims("http://127.0.0.1:1")) + ".c2ln"
    response = gate.run(forged)
    assert response.status_code == 503 and response.json()["error"]["code"] == "identity_unavailable"


# --- the config ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("jwt", "problem"),
    [
        ({"algorithms": ["none"]}, "'none' is refused"),
        ({"algorithms": ["RS256", "HS256"]}, "'HS256' is refused"),
        ({"algorithms": ["XS1"]}, "unknown algorithm"),
        ({"audience": None}, "audience"),
        ({"agents": ["nope"]}, "auth.jwt.agents: no agent named 'nope'"),
        ({"issuer": "id.example.com"}, "auth.jwt.issuer"),
    ],
)
def test_config_check_refuses(jwt: dict[str, Any], problem: str) -> None:
    settings = {"issuer": "https://id.example.com/", "audience": "chatgate", **jwt}
    settings = {name: value for name, value in settings.items() if value is not None}
    with pytest.raises(ConfigError) as refused:
        make_config(AGENTS, auth={"jwt": settings})
    assert problem in str(refused.value)


def test_cors_star_is_refused_with_tokens() -> None:
    with pytest.raises(ConfigError, match=r"cors_origins"):
        make_config(
            AGENTS,
            auth={"jwt": {"issuer": "https://id.example.com/", "audience": "chatgate"}},
            server={"cors_origins": ["*"]},
        )


def test_without_page_client_id_the_page_signs_nobody_in(gate: Chatgate) -> None:
    response = httpx.get(f"{gate.url}/sign-in.json")
    assert response.status_code == 404 and "page_client_id" in response.json()["error"]["message"]
    assert "connect-src 'self';" in httpx.get(f"{gate.url}/").headers["content-security-policy"]


def test_a_persons_budget_from_auth_jwt_is_theirs_alone(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    # builtin:echo reports its usage; "hi" costs well over 5 tokens, so one answer spends the day's budget.
    gate = chatgate_for(token_config(oidc_provider.issuer, budget={"tokens_per_day": 5}))
    alice, bob = oidc_provider.token("alice"), oidc_provider.token("bob")
    assert gate.run(alice).status_code == 200
    refused = gate.run(alice)
    assert refused.status_code == 429 and refused.json()["error"]["code"] == "budget_exceeded"
    assert f"{oidc_provider.issuer}#alice" in refused.json()["error"]["message"]
    assert refused.headers["retry-after"].isdigit()
    assert gate.run(bob).status_code == 200  # another person's budget is untouched
    mine = httpx.get(f"{gate.url}/usage/me", headers={"authorization": f"Bearer {bob}"})
    assert mine.status_code == 200, mine.text
    assert f"{oidc_provider.issuer}#alice" not in mine.text


def test_a_trusted_key_naming_a_signed_in_person_is_not_that_person_in_usage(
    oidc_provider: OpenIDProvider, chatgate_for: Callable[[Config], Chatgate]
) -> None:
    admin = "admin-secret-0123456789"
    keys = [
        {"id": "admin", "key": admin, "admin": True},
        {"id": "web", "key": WEB_KEY, "agents": ["assistant"], "trusted_user_header": True},
    ]
    jwt = {"issuer": oidc_provider.issuer, "audience": "chatgate", "agents": ["assistant"]}
    gate = chatgate_for(make_config(AGENTS, keys=keys, auth={"jwt": jwt}))
    person = f"{oidc_provider.issuer}#alice"
    assert gate.run(oidc_provider.token("alice")).status_code == 200
    # The trusted backend names a user spelled exactly as the signed-in person, twice.
    for _ in range(2):
        assert gate.run(WEB_KEY, **{"x-chatgate-user": person}).status_code == 200
    deadline = time.monotonic() + 15
    while True:  # rows are written just after each run's last event
        usage = httpx.get(
            f"{gate.url}/usage", params={"group_by": "person"}, headers={"authorization": f"Bearer {admin}"}
        )
        rows = sorted((row["person"], row["key"], row["runs"]) for row in usage.json()["rows"] if row["key"])
        rows += [(row["person"], None, row["runs"]) for row in usage.json()["rows"] if not row["key"]]
        if sum(row[2] for row in rows) == 3:
            break
        assert time.monotonic() < deadline, rows
        time.sleep(0.02)
    assert rows == [(person, "web", 2), (person, None, 1)]  # two people, never one with 3 runs
