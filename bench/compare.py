"""chatgate side by side with its floors and its peers: server CPU per streamed token, requests per second
per busy core, time to first token, peak memory. Run through ``bench/run``, which installs the peers.

    .venv/bin/python bench/compare.py [--quick] [--rounds 5] [--json PATH] [--only builtin relay-burst ...]
        [--skip-peers] [--variants thread keys ...]

Four scenarios, each a set of servers and of *variants* (one measured thing: a server, a route, a
request body, the bytes that mark one token, its floor):

- ``builtin``: chatgate's ``builtin:echo``; pydantic-ai's adapters over a FunctionModel; the AI SDK's
  Node server over its mock model; the floor replays chatgate's exact frames (bare ASGI).
- ``relay-burst`` / ``relay-paced``: a fake OpenAI upstream (its own process) streams 200 tokens at once
  or one every ``PACED_MS``; chatgate, pydantic-ai's OpenAIChatModel and the AI SDK's
  openai-compatible provider relay it; the floor forwards the upstream's bytes (bare ASGI + httpx). A
  second floor, the translating proxy, does the least an AG-UI relay must (parse each chunk, send one
  frame per token) on the same stack; it is measured against the byte proxy, not a target.

- ``versions``: the same relay burst, chatgate's default one-agent config served by two versions side by
  side, another revision (``--base``, default ``aba826a``: versions.py installs it under ``bench/.base/``)
  and the working tree; each route's "vs floor" is the working tree against that revision, the figure
  issue 39 asks to keep within 1.05x.

A fifth, ``context``, is no server: bench/context_cpu.py's per-turn accounting of the context budget on a
200-message thread, in this process, each row against issue 31's target of 0.2 ms CPU per turn.

chatgate is measured in every scenario in each setup of ``setups.py``, both protocols: stateless, with
keys and limits, on a server-held thread (SQLite; PostgreSQL), and with all of it and Redis; each
against the scenario's floor. PostgreSQL and Redis are real servers this benchmark starts (only for a
scenario that needs them) and stops; their own CPU is not counted, only chatgate's.

Every reply is 200 tokens; CPU is the server process's own (all its threads), read from /proc before
and after a batch; the load comes from ``--clients`` processes (bench/load.py, raw sockets, one
connection per request) with ``--concurrency`` requests in flight in all. Batches of all variants
alternate over the rounds; medians are reported. A new chatgate setup is one entry in ``setups.SETUPS``;
another peer is one ``servers`` entry and one ``Variant`` in ``scenarios()``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import context_cpu
from floor_app import save_capture
from harness import BENCH_DIR, ServerProcess, cpu_seconds
from relay_cpu import chatgate_config
from scale import peak_rss_mib
from setups import SETUPS, STATELESS, Services, Setup, ag_ui_body, setup_config, use_chat_body
from stream_cpu import CONFIG as BUILTIN_CONFIG
from stream_cpu import capture, user_text
from versions import BASE_REVISION, install

from chatgate.config import load_config
from chatgate.web.app import create_app

TOKENS = 200
PACED_MS = 20.0
CONTEXT_MESSAGES = 200
CONTEXT_TARGET_US = 200.0
"""Issue 31: the per-turn accounting for a 200-message thread stays at or under 0.2 ms CPU."""
PEERS_PYTHON = BENCH_DIR / ".venv-peers" / "bin" / "python"
NODE_SERVER = BENCH_DIR / "node" / "server.mjs"
AG_UI_MARKER = "TEXT_MESSAGE_CONTENT"
UI_STREAM_MARKER = '"text-delta"'
NAME_WIDTH = 46
PEER_SERVERS = frozenset({"pydantic-ai", "ai-sdk"})


@dataclass
class Variant:
    """One measured thing; ``floor`` and ``peers`` name other variants of the same scenario."""

    name: str
    server: str
    path: str
    body: bytes
    marker: str
    floor: str | None = None
    peers: tuple[str, ...] = ()
    headers: dict[str, str] = field(default_factory=dict)
    cpu_us_per_token: list[float] = field(default_factory=list)
    requests_per_core_second: list[float] = field(default_factory=list)
    first_token_s: list[float] = field(default_factory=list)


@dataclass
class Env:
    """What starting a server may need: the scenario's upstream URL ("" without one) and its services."""

    upstream: str
    services: Services


@dataclass
class Scenario:
    name: str
    upstream_pace_ms: float | None  # None: no upstream
    servers: dict[str, Callable[[Env], ServerProcess]]
    variants: list[Variant]


def scenarios(tmp: Path) -> list[Scenario]:
    """The servers and variants measured. A new chatgate setup is one entry in setups.SETUPS."""
    text = user_text()  # builtin:echo answers it with exactly TOKENS words
    ag_ui, use_chat = ag_ui_body(text), use_chat_body(text)
    builtin_config = tmp / "builtin.toml"
    builtin_config.write_text(BUILTIN_CONFIG)
    captures = capture_floors(builtin_config, ag_ui, use_chat, tmp)

    def pydantic_ai(source: str) -> ServerProcess:
        return ServerProcess(
            "pydantic-ai", source, [str(PEERS_PYTHON), str(BENCH_DIR / "serve.py"), "pydantic-ai", source]
        )

    def ai_sdk(source: str) -> ServerProcess:
        return ServerProcess("ai-sdk", source, ["node", str(NODE_SERVER), source])

    peer_variants = [
        Variant("pydantic-ai AGUIAdapter", "pydantic-ai", "/ag-ui", ag_ui, AG_UI_MARKER),
        Variant("pydantic-ai VercelAIAdapter", "pydantic-ai", "/api/chat", use_chat, UI_STREAM_MARKER),
        Variant("AI SDK Node server", "ai-sdk", "/api/chat", use_chat, UI_STREAM_MARKER),
    ]
    builtin_floors = ("floor (AG-UI bytes)", "floor (useChat bytes)")
    builtin = Scenario(
        "builtin",
        None,
        {
            **chatgate_servers("builtin", lambda _: BUILTIN_CONFIG, tmp),
            "floor-ag-ui": lambda _: ServerProcess("floor", str(captures["ag-ui"])),
            "floor-use-chat": lambda _: ServerProcess("floor", str(captures["use-chat"])),
            # The same bytes with one send per event: what any server writing each event as it is made pays.
            "floor-ag-ui-events": lambda _: ServerProcess("floor-per-event", str(captures["ag-ui"])),
            "floor-use-chat-events": lambda _: ServerProcess("floor-per-event", str(captures["use-chat"])),
            "pydantic-ai": lambda _: pydantic_ai("function"),
            "ai-sdk": lambda _: ai_sdk("mock"),
        },
        [
            Variant(builtin_floors[0], "floor-ag-ui", "/ag-ui", ag_ui, AG_UI_MARKER),
            Variant(builtin_floors[1], "floor-use-chat", "/api/chat", use_chat, UI_STREAM_MARKER),
            Variant("floor, send per event (AG-UI)", "floor-ag-ui-events", "/ag-ui", ag_ui, AG_UI_MARKER),
            Variant(
                "floor, send per event (useChat)", "floor-use-chat-events", "/api/chat", use_chat, UI_STREAM_MARKER
            ),
            *chatgate_variants(text, *builtin_floors, builtin=True),
            *peer_variants,
        ],
    )
    relay: list[Scenario] = []
    for name, pace in (("relay-burst", 0.0), ("relay-paced", PACED_MS)):
        relay.append(
            Scenario(
                name,
                pace,
                {
                    **chatgate_servers(name, lambda env: chatgate_config(env.upstream), tmp),
                    "proxy": lambda env: ServerProcess("proxy", env.upstream + "/v1/chat/completions"),
                    "translator": lambda env: ServerProcess("translator", env.upstream + "/v1/chat/completions"),
                    "pydantic-ai": lambda env: pydantic_ai(env.upstream),
                    "ai-sdk": lambda env: ai_sdk(env.upstream),
                },
                [
                    Variant("floor (byte proxy)", "proxy", "/v1/chat/completions", ag_ui, '"content":"word'),
                    Variant(
                        "floor (translating proxy)", "translator", "/ag-ui", ag_ui, AG_UI_MARKER, "floor (byte proxy)"
                    ),
                    *chatgate_variants(text, "floor (byte proxy)", "floor (byte proxy)"),
                    *[Variant(v.name, v.server, v.path, v.body, v.marker) for v in peer_variants],
                ],
            )
        )
    return [builtin, *relay]


def versions(base: str, tmp: Path) -> Scenario:
    """The relay burst on the default one-agent config: revision ``base`` and the working tree, both routes.

    The revision is installed (versions.py) only when the scenario runs: its server's start does it.
    """
    text = user_text()
    ag_ui, use_chat = ag_ui_body(text), use_chat_body(text)

    def start(revision: str | None) -> Callable[[Env], ServerProcess]:
        def begin(env: Env) -> ServerProcess:
            config = tmp / f"versions-{revision or 'tree'}.toml"
            config.write_text(chatgate_config(env.upstream))
            if revision is None:
                return ServerProcess("chatgate", str(config))
            return ServerProcess("chatgate", str(config), install(revision).serve_command(config))

        return begin

    variants = []
    for route, path, body, marker in (
        ("AG-UI", "/ag-ui", ag_ui, AG_UI_MARKER),
        ("useChat", "/api/chat", use_chat, UI_STREAM_MARKER),
    ):
        then = f"chatgate {route} @ {base}"
        variants += [
            Variant(then, "chatgate-base", path, body, marker),
            Variant(f"chatgate {route} (working tree)", "chatgate", path, body, marker, then),
        ]
    return Scenario("versions", 0.0, {"chatgate-base": start(base), "chatgate": start(None)}, variants)


def chatgate_servers(
    scenario: str, base_config: Callable[[Env], str], tmp: Path
) -> dict[str, Callable[[Env], ServerProcess]]:
    """One chatgate server per setup, its config built when it starts (from the scenario's base config)."""

    def starter(setup: Setup) -> Callable[[Env], ServerProcess]:
        def start(env: Env) -> ServerProcess:
            config = tmp / f"{scenario}-{setup.server}.toml"
            sqlite_file = tmp / f"{scenario}-{setup.server}.db"
            config.write_text(setup_config(base_config(env), setup, env.services, sqlite_file))
            return ServerProcess("chatgate", str(config))

        return start

    return {setup.server: starter(setup) for setup in SETUPS if not (setup.leak_guard and scenario == "builtin")}


def chatgate_variants(text: str, ag_ui_floor: str, use_chat_floor: str, *, builtin: bool = False) -> list[Variant]:
    """chatgate's variants, both protocols for every setup; only the stateless ones are compared with the peers.

    The leak guard's setup is left out of ``builtin``: builtin:echo quotes the prompt it guards.
    """
    variants = []
    routes = (
        ("AG-UI", "/ag-ui", ag_ui_body, AG_UI_MARKER, ag_ui_floor, "pydantic-ai AGUIAdapter"),
        ("useChat", "/api/chat", use_chat_body, UI_STREAM_MARKER, use_chat_floor, "pydantic-ai VercelAIAdapter"),
    )
    for setup in SETUPS:
        if builtin and setup.leak_guard:
            continue
        suffix = f", {setup.label}" if setup.label else ""
        for route, path, body, marker, floor, peer in routes:
            peers = (peer, "AI SDK Node server") if setup == STATELESS else ()
            variants.append(
                Variant(
                    f"chatgate {route}{suffix}",
                    setup.server,
                    path,
                    body(text, setup.thread),
                    marker,
                    floor,
                    peers,
                    setup.headers(),
                )
            )
    return variants


def matches(word: str, name: str) -> bool:
    """Whether ``--variants`` ``word`` picks the variant ``name``: a part of it, or all of it after ``=``."""
    if word.startswith("="):
        return word[1:].lower() == name.lower()
    return word.lower() in name.lower()


def select(scenario: Scenario, args: argparse.Namespace) -> Scenario:
    """The scenario with only the variants asked for (and the floors they need), and only their servers."""
    wanted = [
        v
        for v in scenario.variants
        if not (args.skip_peers and v.server in PEER_SERVERS)
        and (not args.variants or any(matches(word, v.name) for word in args.variants))
    ]
    names = {v.name for v in wanted} | {v.floor for v in wanted if v.floor}
    variants = [v for v in scenario.variants if v.name in names]
    for v in variants:
        v.peers = tuple(peer for peer in v.peers if peer in names)
    servers = {name: start for name, start in scenario.servers.items() if any(v.server == name for v in variants)}
    return Scenario(scenario.name, scenario.upstream_pace_ms, servers, variants)


def capture_floors(config: Path, ag_ui: bytes, use_chat: bytes, tmp: Path) -> dict[str, Path]:
    """chatgate's exact frames for each route, for the replaying floor."""
    app = create_app(load_config(config))
    paths = {}
    for name, path, body in (("ag-ui", "/ag-ui", ag_ui), ("use-chat", "/api/chat", use_chat)):
        headers, chunks = asyncio.run(capture(app, path, body, {}))
        paths[name] = tmp / f"{name}.json"
        save_capture(paths[name], headers, chunks)
    return paths


def batch(
    server: ServerProcess, variant: Variant, tmp: Path, args: argparse.Namespace, requests: int
) -> dict[str, Any]:
    """One batch from the load processes; returns their merged result and the server CPU it cost."""
    body_file = tmp / f"body-{abs(hash(variant.body))}.json"
    body_file.write_bytes(variant.body)
    port = server.url.rsplit(":", 1)[1]
    clients = min(args.clients, args.concurrency)
    command = [sys.executable, str(BENCH_DIR / "load.py"), port, variant.path, str(body_file), variant.marker]
    headers = [f"--header={name}:{value}" for name, value in variant.headers.items()]
    before = cpu_seconds(server.pid)
    processes = [
        subprocess.Popen(
            [*command, str(args.concurrency // clients), str(requests // clients), *headers],
            stdout=subprocess.PIPE,
            text=True,
        )
        for _ in range(clients)
    ]
    results = [json.loads(process.communicate(timeout=600)[0]) for process in processes]
    used = cpu_seconds(server.pid) - before
    done = sum(r["done"] for r in results)
    failures = [f for r in results for f in r["failures"]]
    if failures or min(r["min_tokens"] for r in results) < TOKENS:
        raise RuntimeError(f"{variant.name}: failures {failures[:3]}, min tokens {[r['min_tokens'] for r in results]}")
    return {"done": done, "cpu": used, "first": [t for r in results for t in r["first_token_s"]]}


def run_scenario(scenario: Scenario, tmp: Path, args: argparse.Namespace) -> dict[str, Any]:
    upstream = None
    servers: dict[str, ServerProcess] = {}
    services = Services()  # PostgreSQL and Redis, started only if a server of this scenario needs them
    paced = bool(scenario.upstream_pace_ms)
    requests = args.paced_requests if paced else args.requests
    try:
        if scenario.upstream_pace_ms is not None:
            upstream = ServerProcess("upstream", f"{TOKENS},{scenario.upstream_pace_ms}")
        for name, start in scenario.servers.items():
            servers[name] = start(Env(upstream.url if upstream else "", services))
        for variant in scenario.variants:  # warm-up, and a check that every reply holds all the tokens
            batch(servers[variant.server], variant, tmp, args, args.clients)
        for number in range(args.rounds):
            shift = number % len(scenario.variants)
            for variant in [*scenario.variants[shift:], *scenario.variants[:shift]]:
                result = batch(servers[variant.server], variant, tmp, args, requests)
                variant.cpu_us_per_token.append(result["cpu"] / (result["done"] * TOKENS) * 1e6)
                variant.requests_per_core_second.append(result["done"] / result["cpu"])
                variant.first_token_s.extend(result["first"])
            print(
                f"  {scenario.name} round {number + 1}: "
                + "  ".join(f"{v.name} {v.cpu_us_per_token[-1]:.1f}" for v in scenario.variants),
                flush=True,
            )
        memory = {name: peak_rss_mib(server.pid) for name, server in servers.items()}
    finally:
        for server in servers.values():
            server.stop()
        if upstream is not None:
            upstream.stop()
        services.close()
    return summarise(scenario, memory)


def summarise(scenario: Scenario, memory: dict[str, float]) -> dict[str, Any]:
    medians = {v.name: statistics.median(v.cpu_us_per_token) for v in scenario.variants}
    rows = []
    for v in scenario.variants:
        firsts = sorted(v.first_token_s)
        row: dict[str, Any] = {
            "variant": v.name,
            "cpu_us_per_token": round(medians[v.name], 2),
            "cpu_us_per_token_rounds": [round(x, 2) for x in v.cpu_us_per_token],
            "requests_per_busy_core_s": round(statistics.median(v.requests_per_core_second), 1),
            "first_token_p50_ms": round(firsts[len(firsts) // 2] * 1000, 1),
            "first_token_p99_ms": round(firsts[max(0, int(len(firsts) * 0.99) - 1)] * 1000, 1),
            "server_peak_rss_mib": round(memory[v.server], 1),
        }
        if v.floor:
            row["vs_floor"] = round(medians[v.name] / medians[v.floor], 2)
            floor = next(f for f in scenario.variants if f.name == v.floor).cpu_us_per_token
            row["vs_floor_rounds"] = [round(x / y, 3) for x, y in zip(v.cpu_us_per_token, floor, strict=True)]
        if v.peers:
            row["peer_cost_ratio"] = {peer: round(medians[peer] / medians[v.name], 1) for peer in v.peers}
        rows.append(row)
    return {"scenario": scenario.name, "upstream_pace_ms": scenario.upstream_pace_ms, "rows": rows}


def print_table(result: dict[str, Any]) -> None:
    print(f"\n== {result['scenario']}")
    print(
        f"{'variant':<{NAME_WIDTH}} {'CPU µs/token':>12} {'req/s/core':>10} {'TTFT p50 ms':>11} {'p99 ms':>7}"
        f" {'peak MiB':>8}"
        "  vs floor  (rounds)      peers cost (x chatgate)"
    )
    for row in result["rows"]:
        ratio = f"{row['vs_floor']:.2f}x" if "vs_floor" in row else ""
        rounds = row.get("vs_floor_rounds")
        spread = f"({min(rounds):.2f}-{max(rounds):.2f})" if rounds else ""
        peers = ", ".join(f"{name} {x}x" for name, x in row.get("peer_cost_ratio", {}).items())
        print(
            f"{row['variant']:<{NAME_WIDTH}} {row['cpu_us_per_token']:>12.2f} {row['requests_per_busy_core_s']:>10.1f} "
            f"{row['first_token_p50_ms']:>11.1f} {row['first_token_p99_ms']:>7.1f} {row['server_peak_rss_mib']:>8.1f}"
            f"  {ratio:>8}  {spread:<13}   {peers}"
        )


def run_context(rounds: int, turns: int) -> dict[str, Any]:
    """bench/context_cpu.py's rows, in this process: CPU µs per turn, median of ``rounds``, against the target."""
    found: dict[str, list[float]] = {}
    for _ in range(rounds):
        for name, value in context_cpu.rows(CONTEXT_MESSAGES, turns).items():
            found.setdefault(name, []).append(value)
    rows = [
        {
            "variant": name,
            "cpu_us_per_turn": round(statistics.median(values), 1),
            "cpu_us_per_turn_rounds": [round(x, 1) for x in values],
            "within_target": statistics.median(values) <= CONTEXT_TARGET_US,
        }
        for name, values in found.items()
    ]
    return {"scenario": "context", "messages": CONTEXT_MESSAGES, "target_us": CONTEXT_TARGET_US, "rows": rows}


def print_context_table(result: dict[str, Any]) -> None:
    print(f"\n== context: per-turn accounting on a {result['messages']}-message thread (target <= 0.2 ms CPU)")
    print(f"{'variant':<{NAME_WIDTH}} {'CPU µs/turn':>12}  target")
    for row in result["rows"]:
        verdict = "ok" if row["within_target"] else "OVER"
        print(f"{row['variant']:<{NAME_WIDTH}} {row['cpu_us_per_turn']:>12.1f}  {verdict}")


def machine() -> dict[str, Any]:
    model = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if "model name" in line
        ),
        "?",
    )
    node = subprocess.run(["node", "--version"], capture_output=True, text=True, check=False).stdout.strip()
    return {
        "nproc": os.cpu_count(),
        "cpu": model,
        "python": platform.python_version(),
        "node": node,
        "load_average_at_start": os.getloadavg(),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="2 rounds of small batches (about 2-4 minutes)")
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=40, help="requests per batch, burst")
    parser.add_argument("--paced-requests", type=int, default=20, help="requests per batch, paced")
    parser.add_argument("--concurrency", type=int, default=10)
    parser.add_argument("--clients", type=int, default=2, help="load client processes")
    parser.add_argument(
        "--only", nargs="+", help="scenarios to run (builtin, relay-burst, relay-paced, versions, context)"
    )
    parser.add_argument("--base", default=BASE_REVISION, help="versions: the revision the working tree is read against")
    parser.add_argument(
        "--variants",
        nargs="+",
        help="measure only variants whose name holds one of these, or is one after '=' (and their floors)",
    )
    parser.add_argument("--skip-peers", action="store_true", help="leave out pydantic-ai and the AI SDK")
    parser.add_argument("--json", type=Path, help="where to write the figures (default bench/results/compare-*.json)")
    args = parser.parse_args()
    if args.quick:
        args.rounds, args.requests, args.paced_requests = 2, 20, 10
    info = machine()
    print(f"machine: {info}")
    started = time.time()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        chosen = []
        if not args.only or {"builtin", "relay-burst", "relay-paced"} & set(args.only):
            chosen += scenarios(Path(tmp))
        if not args.only or "versions" in args.only:
            chosen.append(versions(args.base, Path(tmp)))
        for scenario in chosen:
            if args.only and scenario.name not in args.only:
                continue
            scenario = select(scenario, args)
            if not scenario.variants:
                parser.error(f"--variants {' '.join(args.variants)} names no variant of {scenario.name}")
            print(f"\n{scenario.name}: {args.rounds} rounds, concurrency {args.concurrency}", flush=True)
            results.append(run_scenario(scenario, Path(tmp), args))
    if not args.only or "context" in args.only:
        print(f"\ncontext: {args.rounds} rounds, in process", flush=True)
        context = run_context(args.rounds, 500 if args.quick else 2000)
    for result in results:
        print_table(result)
    if not args.only or "context" in args.only:
        print_context_table(context)
        results.append(context)
    info["load_average_at_end"] = os.getloadavg()
    out = args.json or BENCH_DIR / "results" / f"compare-{time.strftime('%Y%m%dT%H%M%S')}.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    settings = {k: v for k, v in vars(args).items() if k != "json"}
    out.write_text(
        json.dumps(
            {"machine": info, "settings": settings, "seconds": time.time() - started, "results": results}, indent=2
        )
    )
    print(f"\nload average {info['load_average_at_start']} -> {info['load_average_at_end']}; figures in {out}")


if __name__ == "__main__":
    main()
