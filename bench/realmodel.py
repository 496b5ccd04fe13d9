"""What chatgate adds on a real model server: time to the first and the last token, direct and through it.

    ./bench/run --realmodel [--rounds 30] [--max-tokens 16] [--json PATH]

llama.cpp's ``llama-server`` with Gemma 3 270M (the cached build of scripts/install-llama-server.sh,
started as the ``realmodel`` tests start it, on one thread so a core stays free for chatgate and this
client) answers the same short prompt, greedily, ``--max-tokens`` tokens long, three ways: direct
(``/v1/chat/completions``), and through ``chatgate serve`` (its own process, bench/serve.py) as useChat
and as AG-UI. Each round sends one request each way, one after another, in an order that rotates every
round; the prompt is the same every time, so llama-server's prompt cache gives every way the same start.
Times run from sending the request to reading the first and the last content token in the client.
Reported: median and p90 per way, and the median of each round's difference to the direct request.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import httpx

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.harness import ROOT, ServerProcess
from tests.realmodel.llama import running_llama_server

PROMPT = "The capital of France is"
WAYS = ("direct", "usechat", "ag-ui")

IsToken = Callable[[dict[str, Any]], bool]
IS_TOKEN: dict[str, IsToken] = {
    "direct": lambda c: bool(c.get("choices") and (c["choices"][0].get("delta") or {}).get("content")),
    "usechat": lambda c: c.get("type") == "text-delta",
    "ag-ui": lambda c: c.get("type") == "TEXT_MESSAGE_CONTENT",
}


def config(llama_url: str, max_tokens: int) -> str:
    """A chatgate config relaying to ``llama_url`` with no system prompt: the model gets the same prompt."""
    return f"""
[providers.llama]
kind = "openai"
base_url = "{llama_url}/v1"
retries = 0

[agents.bot]
model = "llama:gemma"
default = true

[agents.bot.model_settings]
max_tokens = {max_tokens}
temperature = 0

[agents.bot.model_settings.extra_body.chat_template_kwargs]
enable_thinking = false
"""


def request(way: str, llama_url: str, chatgate_url: str, max_tokens: int) -> tuple[str, dict[str, Any]]:
    """The URL and JSON body of one request ``way``."""
    if way == "direct":
        body = {
            "model": "llama:gemma",
            "messages": [{"role": "user", "content": PROMPT}],
            "stream": True,
            "stream_options": {"include_usage": True},
            "max_tokens": max_tokens,
            "temperature": 0,
            "chat_template_kwargs": {"enable_thinking": False},
        }
        return f"{llama_url}/v1/chat/completions", body
    if way == "usechat":
        message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": PROMPT}]}
        return f"{chatgate_url}/api/chat", {"id": "c1", "trigger": "submit-message", "messages": [message]}
    run = {"threadId": "t", "runId": "r", "tools": [], "context": [], "forwardedProps": {}}
    return f"{chatgate_url}/ag-ui", {**run, "messages": [{"id": "u1", "role": "user", "content": PROMPT}]}


def timed(client: httpx.Client, way: str, url: str, body: dict[str, Any]) -> tuple[float, float, int]:
    """Seconds to the first and the last content token, and how many tokens came."""
    is_token = IS_TOKEN[way]
    first = last = 0.0
    tokens = 0
    start = time.perf_counter()
    with client.stream("POST", url, json=body) as response:
        response.raise_for_status()
        for line in response.iter_lines():
            if not line.startswith("data: {"):
                continue
            if is_token(json.loads(line[6:])):
                last = time.perf_counter() - start
                first = first or last
                tokens += 1
    return first, last, tokens


def p90(values: list[float]) -> float:
    return statistics.quantiles(values, n=10)[-1]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=30)
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--warmup", type=int, default=3)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args()
    times: dict[str, list[tuple[float, float]]] = {way: [] for way in WAYS}
    tokens: dict[str, set[int]] = {way: set() for way in WAYS}
    with tempfile.TemporaryDirectory() as tmp, running_llama_server() as llama:
        config_path = Path(tmp) / "chatgate.toml"
        config_path.write_text(config(llama.url, args.max_tokens))
        chatgate = ServerProcess("chatgate", str(config_path))
        try:
            with httpx.Client(timeout=120) as client:
                for round_number in range(args.warmup + args.rounds):
                    shift = round_number % len(WAYS)
                    for way in WAYS[shift:] + WAYS[:shift]:
                        url, body = request(way, llama.url, chatgate.url, args.max_tokens)
                        first, last, count = timed(client, way, url, body)
                        if round_number >= args.warmup:
                            times[way].append((first, last))
                            tokens[way].add(count)
        finally:
            chatgate.stop()
    result: dict[str, Any] = {"rounds": args.rounds, "max_tokens": args.max_tokens, "ways": {}}
    direct = times["direct"]
    print(f"{args.rounds} rounds, {args.max_tokens} tokens, llama-server on 1 thread (times in ms)")
    print(f"{'way':8} {'first p50':>10} {'first p90':>10} {'last p50':>9} {'last p90':>9} {'added first p50':>16}")
    for way in WAYS:
        firsts = [first * 1000 for first, _ in times[way]]
        lasts = [last * 1000 for _, last in times[way]]
        added = [(mine[0] - theirs[0]) * 1000 for mine, theirs in zip(times[way], direct, strict=True)]
        row = {
            "first_median_ms": statistics.median(firsts),
            "first_p90_ms": p90(firsts),
            "last_median_ms": statistics.median(lasts),
            "last_p90_ms": p90(lasts),
            "added_first_median_ms": statistics.median(added),
            "added_last_median_ms": statistics.median(
                (mine[1] - theirs[1]) * 1000 for mine, theirs in zip(times[way], direct, strict=True)
            ),
            "tokens": sorted(tokens[way]),
        }
        result["ways"][way] = row
        print(
            f"{way:8} {row['first_median_ms']:10.2f} {row['first_p90_ms']:10.2f} {row['last_median_ms']:9.2f}"
            f" {row['last_p90_ms']:9.2f} {row['added_first_median_ms']:16.2f}"
        )
    path = args.json or ROOT / "bench" / "results" / f"realmodel-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=2))
    print(f"written to {path}")


if __name__ == "__main__":
    main()
