"""The environment's proxies: read with httpx's rules (without its private helpers) and honoured."""

import pytest

from chatgate.providers.client import upstream_client
from chatgate.providers.proxies import environment_proxies
from tests.providers.fakes import FakeUpstream, Reply, openai_chunk

OK = Reply([openai_chunk({"content": "ok"}), b"data: [DONE]\n\n"])
PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")


@pytest.fixture
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> pytest.MonkeyPatch:
    for name in PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    return monkeypatch


def test_proxies_and_no_proxy_become_httpx_mounts(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("HTTP_PROXY", "proxy.internal:3128")
    clean_environment.setenv("HTTPS_PROXY", "http://proxy.internal:3129")
    clean_environment.setenv("NO_PROXY", "localhost, 10.0.0.1,::1,example.com,http://direct.internal")
    assert environment_proxies() == {
        "http://": "http://proxy.internal:3128",
        "https://": "http://proxy.internal:3129",
        "all://localhost": None,
        "all://10.0.0.1": None,
        "all://[::1]": None,
        "all://*example.com": None,
        "http://direct.internal": None,
    }


def test_no_proxy_star_turns_every_proxy_off(clean_environment: pytest.MonkeyPatch) -> None:
    clean_environment.setenv("ALL_PROXY", "http://proxy.internal:3128")
    clean_environment.setenv("NO_PROXY", "example.com,*")
    assert environment_proxies() == {}


async def test_the_upstream_client_honours_the_environments_proxy(clean_environment: pytest.MonkeyPatch) -> None:
    async with FakeUpstream(OK) as proxy:
        clean_environment.setenv("HTTP_PROXY", proxy.url)
        async with upstream_client() as client:
            (await client.post("http://model.invalid/v1/chat/completions", json={})).raise_for_status()
    assert proxy.requests[0].path == "http://model.invalid/v1/chat/completions"  # absolute form: proxied
    assert len(proxy.requests) == 1
