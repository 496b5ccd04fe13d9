"""The container files agree with the service: no Docker engine runs here, so their contract is checked."""

import fnmatch
import sys
import tomllib
from pathlib import Path

import pytest
import yaml

from chatgate.config import load_config

ROOT = Path(__file__).parent.parent


def compose() -> dict[str, dict[str, dict[str, object]]]:
    loaded: dict[str, dict[str, dict[str, object]]] = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    return loaded


def test_compose_mounts_a_config_folder_where_chatgate_reads_it_and_checks_health() -> None:
    service = compose()["services"]["chatgate"]
    environment = service["environment"]
    assert isinstance(environment, dict)
    (mount,) = service["volumes"]  # type: ignore[misc]
    source, target, mode = mount.rsplit(":", 2)
    assert (target, mode) == ("/config", "ro")  # a folder: ${file:} prompts and tool modules come along
    assert environment["CHATGATE_CONFIG"] == "/config/chatgate.toml"
    assert source == "${CHATGATE_CONFIG_DIR:-./docs/examples}"
    assert load_config(ROOT / "docs" / "examples" / "chatgate.toml").default_agent == "assistant"
    assert "/healthz" in " ".join(service["healthcheck"]["test"])  # type: ignore[index]
    assert environment["OLLAMA_HOST"] == "http://ollama:11434"


def test_ollama_is_opt_in_and_its_image_pinned() -> None:
    ollama = compose()["services"]["ollama"]
    assert ollama["profiles"] == ["ollama"]  # a first `docker compose up` pulls no gigabytes
    image = str(ollama["image"])
    name, _, tag = image.partition(":")
    assert name == "ollama/ollama"
    assert tag and tag[0].isdigit() and tag != "latest"


def test_the_build_context_leaves_out_the_virtualenv_node_modules_git_and_caches() -> None:
    patterns = [
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]

    def ignored(path: str) -> bool:
        parts = path.split("/")
        prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
        return any(fnmatch.fnmatch(prefix, pattern) for prefix in prefixes for pattern in patterns)

    for path in [
        ".venv/lib/python3.12/site-packages/x.py",
        "tests/clients/node_modules/ai/package.json",
        ".git/HEAD",
        "app/__pycache__/server.cpython-312.pyc",
        ".mypy_cache/3.12/x.json",
        ".ruff_cache/x",
        ".pytest_cache/v",
        "chatgate.egg-info/PKG-INFO",
    ]:
        assert ignored(path), path
    for path in ["pyproject.toml", "README.md", "LICENSE", "app/web/app.py", "adapters/ag_ui/encode.py"]:
        assert not ignored(path), path  # what the Dockerfile copies


def test_the_image_serves_on_all_interfaces_with_a_healthcheck() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["chatgate", "serve", "--host", "0.0.0.0", "--port", "8000"]' in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert "USER chatgate" in dockerfile


def test_the_image_runs_the_python_the_tests_run_on() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    (base,) = [line.split()[1] for line in dockerfile.splitlines() if line.startswith("FROM ")]
    tested = f"{sys.version_info.major}.{sys.version_info.minor}"
    assert base == f"python:{tested}-slim"
    assert tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["python_version"] == tested
    assert "COPY pyproject.toml README.md LICENSE ./" in dockerfile  # the license ships in the wheel


def test_compose_publishes_the_keyless_example_on_this_machine_only() -> None:
    service = compose()["services"]["chatgate"]
    assert service["environment"]["CHATGATE_ALLOW_UNAUTHENTICATED"] == "true"  # type: ignore[index]
    assert service["ports"] == ["127.0.0.1:8000:8000"]


def test_the_replicas_profile_runs_two_replicas_on_one_postgres_and_one_redis(monkeypatch: pytest.MonkeyPatch) -> None:
    services = compose()["services"]
    replicas = [services["chatgate-a"], services["chatgate-b"]]
    for name in ("chatgate-a", "chatgate-b", "postgres", "redis"):
        assert services[name]["profiles"] == ["replicas"]  # a plain `docker compose up` starts none of them
    ports = {port for replica in replicas for port in replica["ports"]}  # type: ignore[attr-defined]
    assert len(ports) == 2
    for replica in replicas:
        assert replica["volumes"] == ["./docs/examples/replicas:/config:ro"]
        assert replica["environment"]["CHATGATE_CONFIG"] == "/config/chatgate.toml"  # type: ignore[index]
        assert set(replica["depends_on"]) == {"postgres", "redis"}  # type: ignore[arg-type]
        assert "/readyz" in " ".join(replica["healthcheck"]["test"])  # type: ignore[index]
    for name, image in (("postgres", "postgres"), ("redis", "redis")):
        repository, _, tag = str(services[name]["image"]).partition(":")
        assert repository == image and tag[:1].isdigit()  # pinned, never latest
    password = services["postgres"]["environment"]["POSTGRES_PASSWORD"]  # type: ignore[index]
    assert replicas[0]["environment"]["POSTGRES_PASSWORD"] == password  # type: ignore[index]
    # The replicas' config: threads in that PostgreSQL, run logs and limits in that Redis.
    monkeypatch.setenv("POSTGRES_PASSWORD", "secret")
    config = load_config(ROOT / "docs" / "examples" / "replicas" / "chatgate.toml")
    assert config.server.redis_url == "redis://redis:6379/0"
    assert config.store_url == "postgresql://chatgate:secret@postgres:5432/chatgate"
    assert all(agent.conversations == "server" for agent in config.agents.values())


def test_every_chatgate_service_may_hold_two_sockets_for_each_of_ten_thousand_streams() -> None:
    services = compose()["services"]
    for name in ("chatgate", "chatgate-a", "chatgate-b"):
        assert services[name]["ulimits"] == {"nofile": 65536}
