"""The app's own CPU per streamed event, in process: chatgate's ASGI app driven directly, no socket.

    .venv/bin/python bench/app_cpu.py [--model builtin|relay|canned] [--rounds 7] [--requests 200] [--pace-ms 0]
        [--setup "thread+keys+Redis"] [--against stateless|SETUP] [--tokens 200] [--leak-guard off|redact|stop]
        [--reply prose|words]

The socket benchmarks (stream_cpu.py, relay_cpu.py) count uvicorn and the kernel too, and their noise
(about ±10% a round on a shared machine) hides a change of a few percent. Here the benchmark calls the
app itself, as uvicorn would, on uvloop, with a ``send`` that only notes the end of the body, and reads
this process's CPU time (``time.process_time``) around each batch of sequential requests. What is
left is the app's work: routing, decoding, the run, the encoder and ``EventStreamResponse``.

``--model builtin``: builtin:echo answers with a 200-token reply (stream_cpu.py's request).
``--model relay``: the agent relays a fake OpenAI upstream (fake_openai.py in its own process, so its
CPU is not counted; the httpx client reading it is, as in chatgate). Its figures move with how the
upstream's bytes happen to be split into reads, so they are noisy. ``--model canned``: the same relay,
but the upstream's reply comes from inside the process (an ``httpx.MockTransport`` handing over the
fake upstream's frames, one read per frame, as a paced upstream does): no socket, no httpcore, the
same reads every time, so what is measured is chatgate's chain per token, from the read to the
encoded frame. ``--tokens N`` (canned only) makes the reply N tokens long: with a short reply the figures are what a
request costs beside its tokens (the store's and Redis's trips, the access checks), reported per request
too. ``--leak-guard MODE`` (canned only) gives the agent a 150-word prompt (``setups.LEAK_GUARD_PROMPT``) and
makes the reply English prose that shares many words with the prompt but never 8 in a row
(``PROSE``), so partial matches open and close all the time; it serves that agent twice, without the
guard (routes ``AG-UI``, ``useChat``) and with it in ``MODE`` (``AG-UI+g``, ``useChat+g``), batches
alternating. Compare µs/request: the guard merges held words into fewer events, so µs/event is not
comparable, and the reply has ``--tokens`` tokens either way. ``--reply words`` makes the reply the fake
upstream's ``wordNNN `` tokens instead (as in ``./bench/run``): an answer that shares no word with the
prompt, so no run is ever open.
``--setup`` names one of ``setups.py``'s setups (keys and limits, a stored thread on
SQLite or PostgreSQL, Redis), started as ``compare.py`` starts it; the default is the stateless agent.
``--against`` serves a second setup in the same process (its routes end in ``~``: ``AG-UI~``), batches of
both alternating, and prints each route's µs/request against it: a capability's ratio in one run
(``--setup traced --against stateless``, ``--setup "person+usage+budget+Redis" --against keys+Redis``).
The AG-UI and useChat batches alternate; the median per route is reported. A benchmark,
not a test. To compare two versions of the code, run the same command with each version's
interpreter, alternating.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import AsyncExitStack, contextmanager
from pathlib import Path
from typing import Any

import httpx
import uvloop
from fake_openai import reply_frames
from harness import running
from load import UNIQUE
from relay_cpu import USER_TEXT, chatgate_config
from setups import SETUPS, STATELESS, Services, setup_config, use_chat_body, with_leak_guard
from setups import ag_ui_body as setup_ag_ui_body
from stream_cpu import CONFIG, ag_ui_body, drive, user_text, vercel_ai_body

import chatgate.web.app
import chatgate.web.lifespan
from chatgate.config import load_config
from chatgate.web.app import create_app

TOKENS = 200
AGAINST = "~"
"""The suffix of the routes of ``--against``'s setup."""

PROSE_TEXT = (
    "Thanks for your message! The tent you ordered can be returned if it is unused and still in the box. "
    "You will pay the shipping for the return, but if the product is faulty we cover it. Our sleeping bags "
    "come in three sizes, and the stoves work with most gas canisters. If you have a question about the "
    "delivery of your hiking boots, I can pass it to a person on our team who will answer within a day. "
    "Is there anything else I can help you with today?"
)
PROSE = PROSE_TEXT.split()


async def request(app: Any, path: str, body: bytes, headers: dict[str, str]) -> int:
    """One request through the app; returns the SSE events its body held."""
    events = 0
    if UNIQUE in body:
        body = body.replace(UNIQUE, uuid.uuid4().hex.encode())

    def count(message: dict[str, Any]) -> None:
        nonlocal events
        if message["type"] == "http.response.body":
            events += message.get("body", b"").count(b"\n\n")

    await drive(app, path, body, count, headers)
    return events


Route = tuple[Any, str, bytes, dict[str, str]]
"""An app, the path and body of its request, and the headers it carries."""


async def measure(routes: dict[str, Route], args: argparse.Namespace) -> None:
    """Warm up, then alternate batches of each route for ``args.rounds`` rounds; print the medians."""
    per_event: dict[str, list[float]] = {name: [] for name in routes}
    per_request: dict[str, list[float]] = {name: [] for name in routes}
    async with AsyncExitStack() as stack:
        for app in {id(route[0]): route[0] for route in routes.values()}.values():
            await stack.enter_async_context(app.router.lifespan_context(app))
        for name, (app, path, body, headers) in routes.items():
            events = await request(app, path, body, headers)
            least = args.tokens // 2 if args.leak_guard else args.tokens  # the guard merges held words
            assert events > least, f"{name}: {events} events; the reply did not come through whole"
            for _ in range(args.warmup):
                await request(app, path, body, headers)
        for number in range(args.rounds):
            names = list(routes)
            names = names[number % len(names) :] + names[: number % len(names)]
            for name in names:
                app, path, body, headers = routes[name]
                before = time.process_time()
                events = 0
                for _ in range(args.requests):
                    events += await request(app, path, body, headers)
                used = time.process_time() - before
                per_event[name].append(used / events * 1e6)
                per_request[name].append(used / args.requests * 1e6)
            print(f"round {number + 1}: " + "  ".join(f"{n} {v[-1]:.3f}" for n, v in per_event.items()), flush=True)
    print(f"\n{'route':<10} {'app CPU µs/event':>17}   (median of {args.rounds} rounds; min, max)   µs/request")
    for name, values in per_event.items():
        median = statistics.median(values)
        print(
            f"{name:<10} {median:17.3f}   ({min(values):.3f}, {max(values):.3f})"
            f"   {statistics.median(per_request[name]):10.0f}"
        )
    if args.against is not None:  # each route of --setup against the same route of --against, per request
        print(f"\n{args.setup or 'stateless'} against {args.against}, µs/request:")
        for name in [n for n in routes if not n.endswith(AGAINST)]:
            base = statistics.median(per_request[name + AGAINST])
            tested = statistics.median(per_request[name])
            print(f"{name:<10} {base:8.0f} -> {tested:8.0f}   ({tested / base:.3f}x)")


def use_canned_upstream(tokens: int, words: list[str] | None = None) -> None:
    """Give chatgate an upstream client whose every answer is the fake upstream's reply, from memory."""
    frames = reply_frames(tokens, words)

    async def body() -> AsyncIterator[bytes]:
        for frame in frames:
            yield frame

    def answer(request: httpx.Request) -> httpx.Response:
        return httpx.Response(200, headers={"content-type": "text/event-stream"}, content=body())

    def client() -> httpx.AsyncClient:
        return httpx.AsyncClient(transport=httpx.MockTransport(answer), timeout=httpx.Timeout(10.0, read=None))

    # The lifespan opens the upstream client (app/web/lifespan.py); before it had its own module, the app did.
    opener = chatgate.web.lifespan if hasattr(chatgate.web.lifespan, "upstream_client") else chatgate.web.app
    opener.upstream_client = client  # type: ignore[attr-defined]


@contextmanager
def config_for(args: argparse.Namespace) -> Iterator[tuple[Path, str]]:
    """The config file for ``args.model`` (starting the fake upstream for ``relay``) and the user text."""
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "chatgate.toml"
        if args.model == "builtin":
            config_file.write_text(CONFIG)
            yield config_file, user_text()
            return
        if args.model == "canned":
            guarded = args.leak_guard is not None
            use_canned_upstream(args.tokens, PROSE if guarded and args.reply == "prose" else None)
            config = chatgate_config("http://upstream.invalid")
            if guarded:  # the same agent twice: "bench" without the guard, "guarded" with it
                config = with_leak_guard(config, "off")
                twin = config[config.index("[agents.bench]") :].replace("[agents.bench]", "[agents.guarded]")
                twin = twin.replace("default = true\n", "").replace('"off"', f'"{args.leak_guard}"')
                config += twin
            config_file.write_text(config)
            yield config_file, USER_TEXT
            return
        with running("upstream", f"{TOKENS},{args.pace_ms}") as upstream:
            config_file.write_text(chatgate_config(upstream.url))
            yield config_file, USER_TEXT


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", choices=["builtin", "relay", "canned"], default="builtin")
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--requests", type=int, default=200, help="requests per batch")
    parser.add_argument("--warmup", type=int, default=20, help="requests per route before measuring")
    parser.add_argument("--pace-ms", type=float, default=0.0, help="relay: upstream delay before each token")
    parser.add_argument("--tokens", type=int, default=TOKENS, help="canned: the reply's length in tokens")
    parser.add_argument("--leak-guard", choices=["off", "redact", "stop"], help="canned: a long prompt, this mode")
    parser.add_argument("--reply", choices=["prose", "words"], default="prose", help="--leak-guard: the answer")
    parser.add_argument("--setup", choices=[s.label for s in SETUPS if s.label], help="setups.py's setup")
    parser.add_argument(
        "--against",
        choices=["stateless", *[s.label for s in SETUPS if s.label]],
        help="also serve this setup (routes ending in ~), batches alternating, and print the ratios",
    )
    args = parser.parse_args()
    if (args.tokens != TOKENS or args.leak_guard) and args.model != "canned":
        parser.error("--tokens and --leak-guard are for --model canned")
    if args.against is not None and args.leak_guard:
        parser.error("--against is not for --leak-guard (which compares two agents itself)")
    setup = next((s for s in SETUPS if s.label == args.setup), STATELESS)
    services = Services()
    try:
        with config_for(args) as (config_file, text):
            base = config_file.read_text()
            routes: dict[str, Route] = {}
            tested = [(setup, "")]
            if args.against is not None:
                tested.append((next((s for s in SETUPS if s.label == args.against), STATELESS), AGAINST))
            for number, (each, suffix) in enumerate(tested):
                file = config_file.with_name(f"setup{number}.toml")
                file.write_text(setup_config(base, each, services, config_file.with_name(f"setup{number}.sqlite")))
                app = create_app(load_config(file))
                headers = each.headers()
                ag_ui = setup_ag_ui_body(text, each.thread) if each.thread else ag_ui_body(text)
                use_chat = use_chat_body(text, each.thread) if each.thread else vercel_ai_body(text)
                routes[f"AG-UI{suffix}"] = (app, "/ag-ui", ag_ui, headers)
                if args.leak_guard:  # each protocol on both agents, batches alternating
                    routes["AG-UI+g"] = (app, "/agents/guarded/ag-ui", ag_ui, headers)
                routes[f"useChat{suffix}"] = (app, "/api/chat", use_chat, headers)
                if args.leak_guard:
                    routes["useChat+g"] = (app, "/agents/guarded/chat", use_chat, headers)
            uvloop.run(measure(routes, args))
    finally:
        services.close()


if __name__ == "__main__":
    main()
