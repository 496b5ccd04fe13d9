"""The container files agree with the service: no Docker engine runs here, so their contract is checked."""

from pathlib import Path

import yaml

from chatgate.config import load_config

ROOT = Path(__file__).parent.parent


def test_compose_mounts_one_config_where_chatgate_reads_it_and_checks_health() -> None:
    service = yaml.safe_load((ROOT / "docker-compose.yml").read_text())["services"]["chatgate"]
    config_path = service["environment"]["CHATGATE_CONFIG"]
    (mount,) = service["volumes"]
    source, target, mode = mount.rsplit(":", 2)
    assert (target, mode) == (config_path, "ro")
    assert source.endswith("docs/examples/chatgate.toml}")
    assert load_config(ROOT / "docs" / "examples" / "chatgate.toml").default_agent == "assistant"
    assert "/healthz" in " ".join(service["healthcheck"]["test"])
    assert service["environment"]["OLLAMA_HOST"] == "http://ollama:11434"


def test_the_image_serves_on_all_interfaces_with_a_healthcheck() -> None:
    dockerfile = (ROOT / "Dockerfile").read_text()
    assert 'CMD ["chatgate", "serve", "--host", "0.0.0.0", "--port", "8000"]' in dockerfile
    assert "HEALTHCHECK" in dockerfile and "/healthz" in dockerfile
    assert "USER chatgate" in dockerfile
