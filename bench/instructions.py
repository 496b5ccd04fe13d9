"""Instructions per request of the app in process, counted by callgrind: a figure the machine's load cannot move.

    .venv/bin/python bench/instructions.py [--base aba826a] [--pairs 20] [--tokens 200]
    .venv/bin/python bench/instructions.py --setup fallbacks   # the working tree, without and with a setup

CPU time on a shared 2-core machine moves by 10% and more from one batch to the next; the number of
instructions the app runs for a request does not. For the working tree and for ``--base`` (installed by
versions.py), this runs app_cpu.py's canned relay (the fake upstream's reply from memory, no socket) in
its own process under ``valgrind --tool=callgrind`` with instrumentation off while Python starts and
warms up, on for ``--pairs`` AG-UI and useChat requests, and prints instructions per request and the
ratio. The collector is set as ``chatgate serve`` sets it. Instructions are not time (no cache misses,
no system calls' cost), so this ranks changes to the Python path; ``compare.py --only versions``
measures CPU time. Needs valgrind (Debian package ``valgrind``).

With ``--setup LABEL`` it compares the working tree with itself: the stateless agent, then the same
agent in one of setups.py's setups that needs no service (``leak guard``, ``fallbacks``): what a
capability switched on costs per request, to a fraction of a percent.
"""

from __future__ import annotations

import argparse
import gc
import importlib
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent


def child(bench: str, tokens: int, pairs: int, flag: Path, setup: str = "") -> None:
    """In the measured process: warm up, say so, wait for the counting to start, run the pairs."""
    sys.path.insert(0, bench)
    app_cpu = importlib.import_module("app_cpu")
    from relay_cpu import USER_TEXT, chatgate_config
    from stream_cpu import ag_ui_body, vercel_ai_body

    try:
        create_app = importlib.import_module("chatgate.web.app").create_app
    except ModuleNotFoundError:  # revisions before app/ was grouped by concept
        create_app = importlib.import_module("chatgate.server").create_app
    from chatgate.config import load_config

    app_cpu.use_canned_upstream(tokens)
    config = Path(tempfile.mkdtemp()) / "chatgate.toml"
    config.write_text(_configured(chatgate_config("http://upstream.invalid"), setup))
    app = create_app(load_config(config))
    routes = [("/ag-ui", ag_ui_body(USER_TEXT)), ("/api/chat", vercel_ai_body(USER_TEXT))]

    async def run() -> None:
        async with app.router.lifespan_context(app):
            for _ in range(5):
                for path, body in routes:
                    await app_cpu.request(app, path, body, {})
            gc.collect()
            gc.freeze()
            young, middle, _ = gc.get_threshold()
            gc.set_threshold(young, middle, 1000)
            flag.write_text("ready")
            while flag.read_text() != "go":
                time.sleep(0.1)
            for _ in range(pairs):
                for path, body in routes:
                    await app_cpu.request(app, path, body, {})
            flag.write_text("done")
            while flag.read_text() != "off":
                time.sleep(0.1)

    import uvloop

    uvloop.run(run())


def _configured(base: str, label: str) -> str:
    """``base`` in the setup named ``label`` ("": as it is)."""
    if not label:
        return base
    from setups import SETUPS, setup_config

    setup = next(setup for setup in SETUPS if setup.label == label)
    assert setup.store is None and not (setup.redis or setup.traced), f"{label!r} needs a service"
    return setup_config(base, setup, None, Path())  # type: ignore[arg-type]  # no service is asked for


def count(python: Path, bench: Path, tokens: int, pairs: int, setup: str = "") -> int:
    """Instructions the app at ``bench``'s revision ran for ``pairs`` request pairs."""
    with tempfile.TemporaryDirectory() as tmp:
        flag, out = Path(tmp) / "flag", Path(tmp) / "callgrind.out"
        flag.write_text("")
        command = ["valgrind", "--tool=callgrind", "--instr-atstart=no", "--cache-sim=no"]
        command += [f"--callgrind-out-file={out}", str(python), __file__, "--child", str(bench)]
        command += ["--tokens", str(tokens), "--pairs", str(pairs), "--flag", str(flag), "--setup", setup]
        process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for wanted, then, switch in (("ready", "go", "on"), ("done", "off", "off")):
            while flag.read_text() != wanted:
                if process.poll() is not None:
                    raise RuntimeError(f"{python}: the measured process exited with {process.returncode}")
                time.sleep(0.5)
            subprocess.run(["callgrind_control", "-i", switch, str(process.pid)], check=True, capture_output=True)
            flag.write_text(then)
        process.wait()
        totals = subprocess.run(["callgrind_annotate", str(out)], capture_output=True, text=True, check=True).stdout
        line = next(line for line in totals.splitlines() if "PROGRAM TOTALS" in line)
        return int(line.split()[0].replace(",", ""))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--base", default=None, help="the revision to compare with (default versions.BASE_REVISION)")
    parser.add_argument("--pairs", type=int, default=20, help="AG-UI and useChat request pairs counted")
    parser.add_argument("--tokens", type=int, default=200, help="the canned reply's length")
    parser.add_argument("--setup", default="", help="compare the working tree without and with this setup")
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--flag", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        child(args.child, args.tokens, args.pairs, args.flag, args.setup)
        return
    if args.setup:
        compare_setup(args.setup, args.tokens, args.pairs)
        return
    from versions import BASE_REVISION, install

    base = install(args.base or BASE_REVISION)
    requests = 2 * args.pairs
    figures = {}
    for name, python, bench in (
        (base.revision, base.python, base.root / "bench"),
        ("working tree", Path(sys.executable), BENCH),
    ):
        figures[name] = count(python, bench, args.tokens, args.pairs) / requests
        print(f"{name:<14} {figures[name] / 1e6:8.3f} M instructions per request", flush=True)
    print(f"ratio          {figures['working tree'] / figures[base.revision]:8.3f}x")


def compare_setup(label: str, tokens: int, pairs: int) -> None:
    """The working tree's instructions per request, stateless and in the setup ``label``, and their ratio."""
    figures = []
    for name in ("", label):
        figures.append(count(Path(sys.executable), BENCH, tokens, pairs, name) / (2 * pairs))
        print(f"{name or 'stateless':<14} {figures[-1] / 1e6:8.3f} M instructions per request", flush=True)
    print(f"ratio          {figures[1] / figures[0]:8.3f}x")


if __name__ == "__main__":
    main()
