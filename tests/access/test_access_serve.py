"""``chatgate serve`` and exposure: a non-loopback --host needs keys or an explicit allow_unauthenticated."""

import re
from pathlib import Path

import httpx
import pytest
import yaml

from chatgate.config import load_config
from chatgate.serve.cli import exposure_refusal, main
from tests.conftest import ChatgateProcess, make_config

AGENTS = {"bot": {"model": "builtin:echo"}}
KEY = "serve-secret-0123456789"


@pytest.mark.parametrize("host", ["0.0.0.0", "::", "192.168.1.10", "example.com"])
def test_a_non_loopback_host_without_keys_is_refused(host: str) -> None:
    refusal = exposure_refusal(make_config(AGENTS), host, {})
    assert refusal is not None and f"refusing to serve on {host} without API keys" in refusal


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "::1", "127.0.0.2"])
def test_loopback_needs_no_keys(host: str) -> None:
    assert exposure_refusal(make_config(AGENTS), host, {}) is None


def test_keys_or_an_explicit_allowance_permit_any_host() -> None:
    assert exposure_refusal(make_config(AGENTS, keys=[{"id": "k", "key": KEY}]), "0.0.0.0", {}) is None
    allowed = make_config(AGENTS, server={"allow_unauthenticated": True})
    assert exposure_refusal(allowed, "0.0.0.0", {}) is None
    env = "CHATGATE_ALLOW_UNAUTHENTICATED"
    assert exposure_refusal(make_config(AGENTS), "0.0.0.0", {env: "true"}) is None
    assert exposure_refusal(allowed, "0.0.0.0", {env: "false"}) is not None  # the variable decides when set
    assert "must be true or false" in str(exposure_refusal(make_config(AGENTS), "0.0.0.0", {env: "yes"}))


def test_serve_exits_before_binding_and_says_why(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("CHATGATE_ALLOW_UNAUTHENTICATED", raising=False)
    path = tmp_path / "c.toml"
    path.write_text('[agents.bot]\nmodel = "builtin:echo"\n')
    assert main(["serve", "--host", "0.0.0.0", "--config", str(path)]) == 2
    assert "allow_unauthenticated = true" in capsys.readouterr().err


def test_the_installed_command_serves_on_all_interfaces_with_keys(
    chatgate_process: ChatgateProcess, tmp_path: Path
) -> None:
    path = tmp_path / "c.toml"
    path.write_text(f'[agents.bot]\nmodel = "builtin:echo"\n\n[[keys]]\nid = "web"\nkey = "{KEY}"\n')
    url, process = chatgate_process("--host", "0.0.0.0", "--config", str(path))
    assert httpx.get(f"{url}/agents").status_code == 401
    assert httpx.get(f"{url}/agents", headers={"x-api-key": KEY}).status_code == 200
    process.kill()
    process.wait()
    log = next(tmp_path.glob("chatgate-*.log")).read_text()
    assert "API keys required (1 key(s): web)" in log
    assert KEY not in log


def test_the_docker_files_say_explicitly_whether_no_keys_is_allowed() -> None:
    root = Path(__file__).parent.parent.parent
    env = "CHATGATE_ALLOW_UNAUTHENTICATED"
    example = load_config(root / "docs" / "examples" / "chatgate.toml")
    image = re.findall(rf"^ENV {env}=(\w+)$", (root / "Dockerfile").read_text(), re.MULTILINE)
    assert image == ["false"]  # the image alone refuses a config without keys, saying why
    assert exposure_refusal(example, "0.0.0.0", {env: image[0]}) is not None
    compose = yaml.safe_load((root / "docker-compose.yml").read_text())["services"]["chatgate"]["environment"]
    assert compose[env] == "true"  # the local try-out serves the example config
    assert exposure_refusal(example, "0.0.0.0", {env: compose[env]}) is None
