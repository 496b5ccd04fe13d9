"""``[[keys]]`` and the access settings of ``[server]`` in the config file: each mistake named by its key path."""

import hashlib
from typing import Any

import pytest

from chatgate.config import Config, KeyConfig
from chatgate.errors import ConfigError
from tests.conftest import make_config

AGENTS = {"support": {"model": "builtin:echo", "default": True}, "internal": {"model": "builtin:echo"}}
SECRET = "a-secret-of-enough-length"


def keys(*entries: dict[str, Any]) -> Config:
    return make_config(AGENTS, keys=list(entries))


def problems(*entries: dict[str, Any]) -> str:
    with pytest.raises(ConfigError) as error:
        keys(*entries)
    return str(error.value)


def test_a_key_and_its_defaults() -> None:
    (key,) = keys({"id": "web", "key": SECRET}).keys
    assert key == KeyConfig(id="web", key=SECRET)
    assert (key.agents, key.rpm, key.max_concurrent_streams, key.admin, key.trusted_user_header) == (
        None,
        None,
        None,
        False,
        False,
    )
    assert key.digest == hashlib.sha256(SECRET.encode()).digest()
    by_digest = keys({"id": "web", "sha256": hashlib.sha256(SECRET.encode()).hexdigest().upper()}).keys[0]
    assert by_digest.digest == key.digest


def test_exactly_one_of_key_or_sha256() -> None:
    assert "keys.0: give exactly one of key or sha256" in problems({"id": "web"})
    both = problems({"id": "web", "key": SECRET, "sha256": "0" * 64})
    assert "give exactly one of key or sha256" in both
    assert SECRET not in both


def test_weak_or_malformed_secrets_are_refused_without_echoing_them() -> None:
    short = problems({"id": "web", "key": "short"})
    assert "keys.0.key:" in short and "'short'" not in short
    assert "keys.0.sha256:" in problems({"id": "web", "sha256": "abc"})


def test_agents_must_exist() -> None:
    assert "keys.0.agents: no agent named 'billing' (key 'web')" in problems(
        {"id": "web", "key": SECRET, "agents": ["support", "billing"]}
    )


def test_ids_are_unique_and_secrets_distinct() -> None:
    assert "keys: key ids must be unique: 'web'" in problems(
        {"id": "web", "key": SECRET}, {"id": "web", "key": SECRET + "2"}
    )
    same = problems({"id": "a", "key": SECRET}, {"id": "b", "sha256": hashlib.sha256(SECRET.encode()).hexdigest()})
    assert "keys.1: key 'b' has the same secret as key 'a'" in same


@pytest.mark.parametrize("field", ["rpm", "max_concurrent_streams"])
def test_limits_are_positive(field: str) -> None:
    assert f"keys.0.{field}:" in problems({"id": "web", "key": SECRET, field: 0})


def test_server_limits_are_strict_positive_integers() -> None:
    for name in ("max_messages", "max_parts_per_message", "max_text_chars"):
        with pytest.raises(ConfigError, match=rf"server\.{name}:"):
            make_config(AGENTS, server={name: 0})
    config = make_config(AGENTS)
    assert (config.server.allow_unauthenticated, config.server.cors_origins) == (False, ())
