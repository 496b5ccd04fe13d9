"""Server CPU per relayed token: chatgate in front of an OpenAI-compatible upstream, against a bare proxy.

    .venv/bin/python bench/relay_cpu.py [--rounds 5] [--requests 30] [--pace-ms 1 0]

A fake upstream (fake_openai.py, its own process) streams a 200-token Chat Completions reply, one
token every ``--pace-ms``: 1 ms first, so each token reaches the relay on its own as a real model's
do, then 0, a burst, where the per-token work shows with less event-loop wake-up around it. chatgate
relays it to the client over AG-UI and over useChat (agent model ``fake:bench``, provider ``fake`` of
kind ``openai``); the floor is a bare ASGI proxy (floor_app.py) that forwards the upstream's bytes
with httpx, one send per chunk read. Each runs in its own uvicorn process with the same settings;
only the relaying server's CPU time is counted, per relayed token, alternating batches over several
rounds and reporting the median. A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from harness import Target, cpu_source, report, run_rounds, running
from serve import UVICORN_SETTINGS
from stream_cpu import SYSTEM_PROMPT, ag_ui_body, vercel_ai_body

TOKENS = 200
USER_TEXT = "Tell me a long story."


def chatgate_config(upstream_url: str) -> str:
    return f"""
[providers.fake]
kind = "openai"
base_url = "{upstream_url}/v1"
api_key = "bench"

[agents.bench]
model = "fake:bench"
system_prompt = "{SYSTEM_PROMPT}"
default = true
"""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=30, help="requests per batch")
    parser.add_argument("--warmup", type=int, default=5, help="requests per server before measuring")
    parser.add_argument("--max-seconds", type=float, default=10.0, help="time limit of one batch")
    parser.add_argument(
        "--pace-ms", type=float, nargs="+", default=[1.0, 0.0], help="upstream delay before each token (0: burst)"
    )
    args = parser.parse_args()
    print(f"upstream: {TOKENS} tokens; CPU from {cpu_source()}; uvicorn {UVICORN_SETTINGS}")
    for pace_ms in args.pace_ms:
        print(f"\n== upstream pace: {'burst (no delay)' if not pace_ms else f'one token every {pace_ms:g} ms'}")
        measure_relay(pace_ms, args)


def measure_relay(pace_ms: float, args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory() as tmp, running("upstream", f"{TOKENS},{pace_ms}") as upstream:
        config_file = Path(tmp) / "chatgate.toml"
        config_file.write_text(chatgate_config(upstream.url))
        with (
            running("chatgate", str(config_file)) as chatgate,
            running("proxy", upstream.url + "/v1/chat/completions") as proxy,
        ):
            floor = Target("floor (byte proxy)", proxy, "/v1/chat/completions", ag_ui_body(USER_TEXT), TOKENS)
            ag_ui = Target("chatgate AG-UI", chatgate, "/ag-ui", ag_ui_body(USER_TEXT), TOKENS, floor)
            vercel = Target("chatgate useChat", chatgate, "/api/chat", vercel_ai_body(USER_TEXT), TOKENS, floor)
            targets = [floor, ag_ui, vercel]
            try:
                for target, marker in (
                    (floor, b'"content":"word'),
                    (ag_ui, b'"TEXT_MESSAGE_CONTENT"'),
                    (vercel, b'"text-delta"'),
                ):
                    body, reads = target.sample()
                    tokens = body.count(marker)
                    assert tokens == TOKENS, (
                        f"{target.label}: {tokens} tokens relayed, expected {TOKENS}: {body[-300:]!r}"
                    )
                    print(
                        f"{target.label:<20} POST {target.path:<22} {tokens} tokens, {len(body)} bytes, "
                        f"{reads} client reads"
                    )
                print()
                run_rounds(
                    targets,
                    rounds=args.rounds,
                    requests=args.requests,
                    warmup=args.warmup,
                    max_seconds=args.max_seconds,
                )
                report(targets, unit="token")
            finally:
                for target in targets:
                    target.close()


if __name__ == "__main__":
    main()
