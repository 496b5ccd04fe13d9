"""The Kubernetes manifests in deploy/kubernetes: valid against the Kubernetes schemas, and agreeing with
the service (its probe routes, its config, its shutdown grace, the image's user)."""

import copy
import re
import tomllib
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx
import kubernetes_validate
import pytest
import yaml

from chatgate.config import Config, parse_config

ROOT = Path(__file__).parent.parent
MANIFESTS = ROOT / "deploy" / "kubernetes"
VERSIONS = ["1.30.0", kubernetes_validate.latest_version()]  # the oldest Kubernetes still commonly run, the newest
KEY = "k8s-test-key-0123456789"
SECRETS = {"CHATGATE_API_KEY": KEY, "OPENAI_API_KEY": "sk-test"}  # what the Secret fills in


def manifests() -> dict[str, dict[str, Any]]:
    found: dict[str, dict[str, Any]] = {}
    for path in sorted(MANIFESTS.glob("*.yaml")):
        for document in yaml.safe_load_all(path.read_text()):
            found[document["kind"]] = document
    return found


def container() -> dict[str, Any]:
    (only,) = manifests()["Deployment"]["spec"]["template"]["spec"]["containers"]
    return dict(only)


def configmap_config(environ: dict[str, str]) -> Config:
    text = manifests()["ConfigMap"]["data"]["chatgate.toml"]
    return parse_config(tomllib.loads(text), base_dir=MANIFESTS, environ=environ)


@pytest.mark.parametrize("version", VERSIONS)
def test_every_manifest_is_valid_against_the_kubernetes_schemas(version: str) -> None:
    kinds = manifests()
    assert set(kinds) == {"ConfigMap", "Deployment", "Service", "HorizontalPodAutoscaler"}
    for manifest in kinds.values():
        kubernetes_validate.validate(manifest, version, strict=True)


def test_the_validator_refuses_a_broken_manifest() -> None:
    broken = copy.deepcopy(manifests()["Deployment"])
    broken["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["pathh"] = "/readyz"
    with pytest.raises(kubernetes_validate.ValidationError):
        kubernetes_validate.validate(broken, VERSIONS[-1], strict=True)


def test_the_grace_period_covers_prestop_and_the_configured_drain() -> None:
    pod = manifests()["Deployment"]["spec"]["template"]["spec"]
    assert pod["terminationGracePeriodSeconds"] == 30
    pre_stop = container()["lifecycle"]["preStop"]["exec"]["command"]
    assert pre_stop[0] == "sleep"
    config = configmap_config(SECRETS)
    assert config.server.shutdown_grace_seconds == 25
    # Two seconds are left to end what still runs at the deadline in protocol, before the SIGKILL.
    assert int(pre_stop[1]) + config.server.shutdown_grace_seconds + 2 <= pod["terminationGracePeriodSeconds"]


def test_secrets_come_from_a_secret_by_reference_and_fill_every_env_of_the_config() -> None:
    env = {entry["name"]: entry for entry in container()["env"]}
    assert env["CHATGATE_CONFIG"]["value"] == "/config/chatgate.toml"
    assert container()["volumeMounts"][0]["mountPath"] == "/config"
    text = manifests()["ConfigMap"]["data"]["chatgate.toml"]
    used = set(re.findall(r"^[^#\n]*\$\{env:([A-Z_]+)\}", text, re.MULTILINE))
    assert used == {"CHATGATE_API_KEY"}
    assert used | {"OPENAI_API_KEY"} == set(SECRETS)  # the openai: model reads OPENAI_API_KEY
    for name in SECRETS:
        assert set(env[name]) == {"name", "valueFrom"}, name  # never a literal value
        assert env[name]["valueFrom"]["secretKeyRef"]["name"] == "chatgate"


def test_the_service_hpa_and_image_user_match_the_deployment() -> None:
    kinds = manifests()
    deployment = kinds["Deployment"]
    labels = deployment["spec"]["template"]["metadata"]["labels"]
    assert kinds["Service"]["spec"]["selector"] == labels == deployment["spec"]["selector"]["matchLabels"]
    (port,) = container()["ports"]
    assert kinds["Service"]["spec"]["ports"][0]["targetPort"] == port["name"]
    assert container()["args"][-1] == str(port["containerPort"])
    assert kinds["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]["name"] == deployment["metadata"]["name"]
    assert container()["resources"]["requests"]["cpu"] and container()["resources"]["limits"]["memory"]
    uid = deployment["spec"]["template"]["spec"]["securityContext"]["runAsUser"]
    assert f"--uid {uid}" in (ROOT / "Dockerfile").read_text()


def test_the_probes_answer_on_the_configmap_s_config(
    serve: Callable[[Config], str], monkeypatch: pytest.MonkeyPatch
) -> None:
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    config = configmap_config(SECRETS)
    url = serve(config)
    probes = {name: container()[name]["httpGet"]["path"] for name in ("livenessProbe", "readinessProbe")}
    assert probes == {"livenessProbe": "/healthz", "readinessProbe": "/readyz"}
    for path in probes.values():  # open without a key, as a kubelet calls them
        assert httpx.get(url + path).status_code == 200
    assert httpx.get(url + "/agents").status_code == 401  # everything else needs the Secret's key
    agents = httpx.get(url + "/agents", headers={"authorization": f"Bearer {KEY}"}).json()["agents"]
    assert [agent["name"] for agent in agents] == ["assistant"]
