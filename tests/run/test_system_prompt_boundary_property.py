"""The boundary as a property: in ``server`` mode, no client system or developer text reaches any provider.

Hypothesis generates whole request bodies in both protocols: system and developer messages at any
position, repeated, with ids shared with other messages, their text split over several parts, carried
in part types a system message should not have (reasoning, files, tool calls, data), next to user,
assistant, reasoning and tool turns. Every piece of system-voice text holds ``MARK``, a character no
other text is drawn from. Each body is decoded, put through the policy, and turned into the request
body each provider kind (openai, anthropic, ollama) would send upstream; ``MARK`` must appear in none.
"""

import json
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from chatgate.adapters.ag_ui import protocol as ag_ui
from chatgate.adapters.vercel_ai import protocol as vercel_ai
from chatgate.config import AgentConfig, Config, ProviderConfig
from chatgate.errors import RequestError
from chatgate.providers import build_provider
from chatgate.providers.http import HTTPProvider
from chatgate.run.runner import build_model_request
from tests.run.test_system_prompt_boundary import agent

MARK = "\u2603"  # never drawn for any other text
KINDS = ["openai", "anthropic", "ollama"]
OPERATOR_PROMPT = "You are the operator's agent."
EXAMPLES = settings(max_examples=300, deadline=None, database=None, suppress_health_check=[HealthCheck.too_slow])

plain = st.text(alphabet=st.characters(codec="ascii", exclude_categories=("Cc",)), max_size=20)
anything = st.text(alphabet=st.characters(exclude_categories=("Cs",), exclude_characters=MARK), max_size=20)
marked = st.builds(lambda before, after: before + MARK + after, anything, anything)
ids = st.sampled_from(["m1", "m2", "m3", "", "system", "instructions"])
call_ids = st.sampled_from(["c1", "c2"])


# --- AG-UI -------------------------------------------------------------------------------------------

ag_ui_system = st.fixed_dictionaries(
    {"id": ids, "role": st.sampled_from(["system", "developer"]), "content": marked},
    optional={"name": marked},
)
ag_ui_other = st.one_of(
    st.fixed_dictionaries(
        {
            "id": ids,
            "role": st.just("user"),
            "content": st.one_of(plain, st.lists(st.builds(lambda t: {"type": "text", "text": t}, plain), max_size=3)),
        }
    ),
    st.fixed_dictionaries(
        {"id": ids, "role": st.just("assistant")},
        optional={
            "content": plain,
            "toolCalls": st.lists(
                st.builds(
                    lambda call_id, name, value: {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": name, "arguments": json.dumps({"q": value})},
                    },
                    call_ids,
                    st.sampled_from(["lookup", "search"]),
                    plain,
                ),
                max_size=2,
            ),
        },
    ),
    st.fixed_dictionaries({"id": ids, "role": st.just("tool"), "toolCallId": call_ids, "content": plain}),
    st.fixed_dictionaries({"id": ids, "role": st.just("reasoning"), "content": plain}),
)


@st.composite
def ag_ui_bodies(draw: st.DrawFn) -> dict[str, Any]:
    messages = draw(st.lists(ag_ui_other, max_size=6))
    for system in draw(st.lists(ag_ui_system, min_size=1, max_size=4)):
        messages.insert(draw(st.integers(0, len(messages))), system)
    return {"threadId": "t", "runId": "r", "messages": messages, "tools": [], "context": [], "forwardedProps": {}}


# --- useChat -----------------------------------------------------------------------------------------


def text_part(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


system_parts = st.one_of(
    st.builds(text_part, marked),
    st.builds(lambda t: {"type": "reasoning", "text": t}, marked),
    st.builds(lambda t: {"type": "file", "mediaType": "text/plain", "url": f"https://x.example/{t}"}, marked),
    st.builds(
        lambda t, call_id: {
            "type": "tool-lookup",
            "toolCallId": call_id,
            "state": "output-available",
            "input": {"q": t},
            "output": t,
        },
        marked,
        call_ids,
    ),
    st.builds(lambda t: {"type": "data-note", "data": {"text": t}}, marked),
    st.just({"type": "step-start"}),
)
vercel_system = st.fixed_dictionaries(
    {"id": ids, "role": st.just("system"), "parts": st.lists(system_parts, min_size=1, max_size=4)}
)
assistant_parts = st.one_of(
    st.builds(text_part, plain),
    st.builds(lambda t: {"type": "reasoning", "text": t}, plain),
    st.builds(
        lambda t, call_id: {
            "type": "tool-lookup",
            "toolCallId": call_id,
            "state": "output-available",
            "input": {"q": t},
            "output": t,
        },
        plain,
        call_ids,
    ),
    st.just({"type": "step-start"}),
)
vercel_other = st.one_of(
    st.fixed_dictionaries(
        {"id": ids, "role": st.just("user"), "parts": st.lists(st.builds(text_part, plain), min_size=1, max_size=3)}
    ),
    st.fixed_dictionaries({"id": ids, "role": st.just("assistant"), "parts": st.lists(assistant_parts, max_size=4)}),
)


@st.composite
def vercel_bodies(draw: st.DrawFn) -> dict[str, Any]:
    messages = draw(st.lists(vercel_other, max_size=6))
    for system in draw(st.lists(vercel_system, min_size=1, max_size=4)):
        messages.insert(draw(st.integers(0, len(messages))), system)
    return {"id": "chat", "trigger": "submit-message", "messages": messages}


# --- the property ------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def providers() -> Iterator[list[HTTPProvider]]:
    """One real provider of each kind; nothing is ever sent, only their request bodies are built."""
    tables = {kind: ProviderConfig(kind=kind, base_url="http://127.0.0.1:9", api_key="k") for kind in KINDS}
    client = httpx.AsyncClient()
    config = Config(providers=tables)
    built = [build_provider(AgentConfig(model=f"{kind}:m"), config, client) for kind in KINDS]
    yield [provider for provider in built if isinstance(provider, HTTPProvider)]


def assert_no_client_system_text_upstream(protocol: Any, body: dict[str, Any], providers: list[HTTPProvider]) -> None:
    try:
        run_input = protocol.decode(json.dumps(body).encode())
    except RequestError:
        return  # refused: nothing reaches a model
    request = build_model_request(agent("server"), run_input)
    for provider in providers:
        sent = json.dumps(provider.request_body(request), ensure_ascii=False)
        assert len(providers) == len(KINDS)
        assert MARK not in sent, f"{provider.name}: client system text reached the upstream body: {sent}"
        assert OPERATOR_PROMPT in sent, f"{provider.name}: the operator's prompt is missing"


@EXAMPLES
@given(body=ag_ui_bodies())
def test_ag_ui_no_client_system_text_reaches_any_provider(body: dict[str, Any], providers: list[HTTPProvider]) -> None:
    assert_no_client_system_text_upstream(ag_ui, body, providers)


@EXAMPLES
@given(body=vercel_bodies())
def test_usechat_no_client_system_text_reaches_any_provider(
    body: dict[str, Any], providers: list[HTTPProvider]
) -> None:
    assert_no_client_system_text_upstream(vercel_ai, body, providers)
