"""The session's real model server (tests/realmodel/llama.py) and chatgate configs pointed at it."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chatgate.config import Config
from tests.conftest import make_config
from tests.realmodel.llama import GEMMA, OWN_TEMPLATE, SMOLLM2, LlamaServer, running_llama_server

NO_THINKING = {"chat_template_kwargs": {"enable_thinking": False}}
GEMMA_CONTEXT = 256  # llama.cpp rounds a context up to a multiple of 256: asking for less gives this
"""The ``gemma`` server's one slot: small, so that a thread of short turns outgrows it within a few turns."""


@pytest.fixture(scope="session")
def llama() -> Iterator[LlamaServer]:
    """One ``llama-server`` with Gemma 3 270M for the whole session; a missing build is a failure.

    Its answers run to ``max_tokens`` (``ignore_eos``): the tests on it need a stream of a few tokens, or
    one still running when the client hangs up or the server is killed, whatever the model would pick.
    """
    with running_llama_server(ignore_eos=True) as server:
        yield server


CALL_OPENERS = {236820: 4.0, 13205: 4.0}
"""Gemma 3's tokens ``<`` and ``tool``, which open ``<tool_call>``, raised by 4 (a factor of ~55).

Under ``tool_choice: required`` llama.cpp's grammar still admits free text before the first
``<tool_call>``: its auto-parser puts an optional "content until the marker" ahead of the calls
(common/chat-auto-parser-generator.cpp), so whether a call comes is the greedy model's pick at two
forks, ``<`` against a word, then ``tool`` against ``|`` (the ``<|im_end|>`` it also writes). On the
tests' prompts those margins measured 0.0 to 0.6 nats, close enough for another CPU's arithmetic to
flip (the same request here moves by 0.15 between runs). Raised, every fork the grammar leaves open
up to the call's name is 2.9 nats or more apart, and the city the weather calls name (``Paris``) 3.3.
"""


@pytest.fixture(scope="session")
def calling() -> Iterator[LlamaServer]:
    """A ``llama-server`` whose model takes the call it is offered on any CPU (``CALL_OPENERS``)."""
    with running_llama_server(logit_bias=CALL_OPENERS) as server:
        assert server.tokens("<tool_call>")[:2] == list(CALL_OPENERS), "the model's tokens changed"
        yield server


def forced_call(wire: str) -> dict[str, Any]:
    """Request fields that make the model call a tool (each wire kind says it its own way)."""
    choice: Any = "required" if wire == "openai" else {"type": "any"}
    return {**NO_THINKING, "tool_choice": choice}


@pytest.fixture(scope="session")
def gemma() -> Iterator[LlamaServer]:
    """A second ``llama-server`` rendering with Gemma 3's strict chat template: one slot of 256 tokens."""
    with running_llama_server(template=GEMMA, slot_context=GEMMA_CONTEXT, slots=1) as server:
        yield server


@pytest.fixture(scope="session")
def smollm2() -> Iterator[LlamaServer]:
    """A ``llama-server`` with SmolLM2-135M-Instruct, an instruction-tuned model, on its GGUF's own template.

    One slot of 1024 tokens: its tests send one request at a time, and ask for short answers.
    """
    with running_llama_server(model=SMOLLM2, template=OWN_TEMPLATE, slots=1) as server:
        yield server


def llama_config(
    llama: LlamaServer | str,
    wire: str,
    *,
    max_tokens: int = 6,
    extra: Any = None,
    store: Any = None,
    server: Any = None,
    **agent: Any,
) -> Config:
    """One default agent ``bot`` on ``llama`` (or a URL) through ``wire`` (``openai``/``anthropic``), greedy, short."""
    url = llama if isinstance(llama, str) else llama.url
    base_url = f"{url}/v1" if wire == "openai" else url
    provider = {"kind": wire, "base_url": base_url, "retries": 0, "timeouts": {"connect": 5, "first_token": 60}}
    settings = {"max_tokens": max_tokens, "temperature": 0, "extra_body": extra if extra is not None else NO_THINKING}
    bot = {"model": "llama:gemma-3-270m", "default": True, "model_settings": settings, **agent}
    top = {"store": store} if store is not None else {}
    if server is not None:
        top["server"] = server
    return make_config({"bot": bot}, providers={"llama": provider}, **top)
