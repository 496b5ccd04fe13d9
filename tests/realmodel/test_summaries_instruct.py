"""``strategy = "summarize"`` (issue 31) on an instruction-tuned model (issue 43): summaries keep the facts.

SmolLM2-135M-Instruct writes the thread's summaries from chatgate's fixed prompt (a transcript, then the
instruction). A person writes to a shop's support about a late parcel (a name, an order number, a city,
the item); the window is small, so the oldest turns are folded into a summary within a few turns. The
summary the model then receives keeps the facts: each names at least one of them, asserted loosely
because a 135M model paraphrases and another CPU may pick other words. Measured greedy on three numeric
paths (the default, ``CHATGATE_LLAMA_FLASH_ATTENTION=off``, ``CHATGATE_LLAMA_THREADS=2``), each summary
kept the order number, two of three the city too: "The details of your order 4417 are still missing ...".
On a conversation that changes subject every turn (a name, then fun facts) this model's summaries keep
only the topics ("a fun fact about the sea, a name of a cat"): it is good for a first chat, not for
summaries a thread depends on. Its sampling is docs/examples/local-model.toml's ``repeat_penalty``, which
the summary call shares: without it the summaries looped on one phrase.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import httpx
import pytest

from chatgate.context import SUMMARY_INSTRUCTION, SUMMARY_REQUEST
from tests.realmodel.conftest import llama_config
from tests.realmodel.llama import LlamaServer
from tests.threads.replay_flows import events_of

# 8 turns and a summary: about 17 s idle, several times that on a loaded machine.
pytestmark = [pytest.mark.realmodel, pytest.mark.timeout(600)]

FACTS = ("Ottoline", "4417", "Lisbon", "teapot")
TURNS = [
    "Hi, my name is Ottoline. My order 4417 has not arrived.",
    "Order 4417 was sent to Lisbon two weeks ago.",
    "The parcel for order 4417 was a blue teapot.",
    "Can you check where order 4417 is now?",
    "Should I wait longer for the teapot or ask for a refund?",
    "How long does a parcel to Lisbon usually take?",
    "Is there a phone number I can call about order 4417?",
    "Thank you. What should I do next about my order?",
]
WINDOW = 384
"""Tokens: the turns (about 60 each, with 32-token answers) fill it by the sixth; a summary may take 48."""
SAMPLING = {"repeat_penalty": 1.1}
"""docs/examples/local-model.toml's llama.cpp sampling, which the summary call shares with the agent."""


def _turn(url: str, thread: str, turn: int, text: str) -> list[dict[str, Any]]:
    message = {"id": f"u{turn}", "role": "user", "content": text}
    body = {"threadId": thread, "runId": f"r{turn}", "messages": [message]}
    response = httpx.post(f"{url}/agents/bot/ag-ui", json=body, timeout=120)
    assert response.status_code == 200, response.text
    return events_of(response.content)


def _summary_in(prompt: str) -> str:
    """The summary a ChatML prompt carries: the assistant turn after ``SUMMARY_REQUEST``."""
    after = prompt.split(SUMMARY_REQUEST, 1)[1]
    return after.split("<|im_start|>assistant\n", 1)[1].split("<|im_end|>", 1)[0]


def test_summaries_keep_the_facts_of_the_turns_they_fold_in(serve: Any, smollm2: LlamaServer, tmp_path: Path) -> None:
    config = llama_config(
        smollm2,
        "openai",
        max_tokens=32,
        extra=SAMPLING,
        model="llama:smollm2",
        system_prompt="You are the support assistant of a small shop. Answer briefly.",
        store={"url": f"sqlite:///{tmp_path / 'threads.db'}"},
        conversations="server",
        context={"window": WINDOW, "strategy": "summarize"},
    )
    url = serve(config)
    before = len(smollm2.prompts())
    for turn, text in enumerate(TURNS, 1):
        assert _turn(url, "facts", turn, text)[-1]["type"] == "RUN_FINISHED"
    prompts = smollm2.prompts()[before:]
    written = [prompt for prompt in prompts if SUMMARY_INSTRUCTION in prompt]
    carried = {_summary_in(prompt) for prompt in prompts if SUMMARY_REQUEST in prompt}
    summary = httpx.get(f"{url}/agents/bot/threads/facts", timeout=10).json()["summary"]
    assert written and carried and summary is not None and summary["model"] == "llama:smollm2"
    assert "Ottoline" in written[0]  # the first transcript it summarized held the facts
    kept = {text: [fact for fact in FACTS if fact.casefold() in text.casefold()] for text in carried}
    assert all(len(facts) >= 1 for facts in kept.values()), kept
