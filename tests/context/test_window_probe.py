"""``window = "auto"``: what each model server is asked, over real HTTP, and what its answer means."""

from __future__ import annotations

import json
from typing import Any

from chatgate.config import ProviderConfig
from chatgate.context.probe import OLLAMA_DEFAULT_NUM_CTX, window_probe
from chatgate.providers.client import upstream_client
from tests.providers.fakes import FakeUpstream, Reply


def shown(payload: dict[str, Any]) -> Reply:
    return Reply([json.dumps(payload).encode()], headers={"content-type": "application/json"})


async def ask(kind: str, url: str, settings: dict[str, Any] | None = None) -> int | None:
    async with upstream_client() as client:
        probe = window_probe(ProviderConfig(kind=kind, base_url=url), "gemma3:270m", settings or {}, client)  # type: ignore[arg-type]
        assert probe is not None
        return await probe()


async def test_ollama_models_own_num_ctx() -> None:
    answer = shown({"parameters": 'stop "<end_of_turn>"\nnum_ctx 2048\ntemperature 1', "model_info": {}})
    async with FakeUpstream(answer) as fake:
        assert await ask("ollama", fake.url) == 2048
    assert fake.requests[0].path == "/api/show" and fake.requests[0].body == {"model": "gemma3:270m"}


async def test_ollama_default_capped_by_the_trained_length() -> None:
    async with FakeUpstream(shown({"model_info": {"gemma3.context_length": 32768}})) as fake:
        assert await ask("ollama", fake.url) == OLLAMA_DEFAULT_NUM_CTX
    async with FakeUpstream(shown({"model_info": {"tiny.context_length": 1024}})) as fake:
        assert await ask("ollama", fake.url) == 1024


async def test_ollama_num_ctx_in_model_settings_needs_no_request() -> None:
    async with FakeUpstream(shown({})) as fake:
        assert await ask("ollama", fake.url, {"num_ctx": 8192}) == 8192
    assert fake.requests == []


async def test_llama_cpp_props_beside_v1() -> None:
    async with FakeUpstream(shown({"default_generation_settings": {"n_ctx": 1024}, "total_slots": 4})) as fake:
        assert await ask("openai", f"{fake.url}/v1") == 1024
    assert fake.requests[0].method == "GET" and fake.requests[0].path == "/props"
