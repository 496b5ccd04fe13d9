"""``window = "auto"``: asking the model server how many tokens a request may hold.

- **llama.cpp** (``kind = "openai"`` pointing at ``llama-server``): ``GET /props`` (beside ``/v1``);
  ``default_generation_settings.n_ctx`` is the context of one slot, which is what one request gets.
- **Ollama**: the window is the ``num_ctx`` the request runs with: the agent's
  ``model_settings.num_ctx``, else the model's own ``num_ctx`` parameter (``POST /api/show``), else
  Ollama's default of 4096 (never more than the model's trained ``*.context_length``).

Any other server cannot tell (an OpenAI-compatible API without ``/props`` answers 404): the agent
then runs without a budget, with a warning in the log, and asks again later.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from chatgate.config import OLLAMA_DEFAULT_HOST, ProviderConfig
from chatgate.context.budget import WindowProbe

__all__ = ["OLLAMA_DEFAULT_NUM_CTX", "window_probe"]

OLLAMA_DEFAULT_NUM_CTX = 4096
"""The context Ollama gives a model when neither the request nor the model sets ``num_ctx``."""


def window_probe(
    provider: ProviderConfig, model: str, settings: Mapping[str, Any], client: httpx.AsyncClient
) -> WindowProbe | None:
    """How to ask the provider's server for its window, or None when its kind cannot tell."""
    headers = dict(provider.headers)
    if provider.api_key and provider.kind != "anthropic":
        headers.setdefault("authorization", f"Bearer {provider.api_key}")
    timeout = httpx.Timeout(provider.timeouts.connect, read=provider.timeouts.idle)
    if provider.kind == "openai" and provider.base_url:
        root = provider.base_url.rstrip("/").removesuffix("/v1")

        async def llama_cpp() -> int | None:
            response = await client.get(f"{root}/props", headers=headers, timeout=timeout)
            response.raise_for_status()
            n_ctx = (response.json().get("default_generation_settings") or {}).get("n_ctx")
            return n_ctx if isinstance(n_ctx, int) else None

        return llama_cpp
    if provider.kind == "ollama":
        base = (provider.base_url or OLLAMA_DEFAULT_HOST).rstrip("/")
        configured = settings.get("num_ctx")

        async def ollama() -> int | None:
            if isinstance(configured, int):
                return configured
            response = await client.post(f"{base}/api/show", json={"model": model}, headers=headers, timeout=timeout)
            response.raise_for_status()
            return _ollama_window(response.json())

        return ollama
    return None


def _ollama_window(shown: Any) -> int | None:
    """The ``num_ctx`` an ``/api/show`` answer implies."""
    if not isinstance(shown, dict):
        return None
    for line in str(shown.get("parameters") or "").splitlines():
        name, _, value = line.strip().partition(" ")
        if name == "num_ctx" and value.strip().isdigit():
            return int(value.strip())
    info = shown.get("model_info") or {}
    trained = [v for k, v in info.items() if k.endswith(".context_length") and isinstance(v, int)]
    return min([OLLAMA_DEFAULT_NUM_CTX, *trained])
