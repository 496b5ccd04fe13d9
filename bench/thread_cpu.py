"""Server CPU per streamed event on a stored thread (SQLite) against the same agent kept stateless.

    .venv/bin/python bench/thread_cpu.py [--rounds 5] [--requests 100] [--warmup 10]

One chatgate process serves two agents on builtin:echo with the same 200-token reply: ``plain``
(``conversations = "client"``) and ``stored`` (``conversations = "server"``, SQLite beside the config).
Every request starts a new thread (a new id), so each stored request pays the whole thread stage once:
load, commit the user turn, take the thread, one checkpoint at most, save the answer. The stateless
agent is the reference ("floor" in the report). A benchmark, not a test.
"""

from __future__ import annotations

import argparse
import itertools
import json
import tempfile
from pathlib import Path

from harness import Target, cpu_source, report, run_rounds, running
from stream_cpu import REPLY_TOKENS, SYSTEM_PROMPT, user_text

CONFIG = f"""
[agents.plain]
model = "builtin:echo"
system_prompt = "{SYSTEM_PROMPT}"

[agents.stored]
model = "builtin:echo"
system_prompt = "{SYSTEM_PROMPT}"
conversations = "server"
"""

_COUNTER = itertools.count()


class FreshThreadTarget(Target):
    """A target whose every request is on a new thread (AG-UI ``threadId`` or useChat ``id``)."""

    protocol: str = "ag-ui"

    def request(self) -> int:
        n = next(_COUNTER)
        text = user_text()
        if self.protocol == "ag-ui":
            body = {"threadId": f"t{n}", "runId": f"r{n}", "messages": [{"id": "u1", "role": "user", "content": text}]}
        else:
            message = {"id": "u1", "role": "user", "parts": [{"type": "text", "text": text}]}
            body = {"id": f"c{n}", "message": message, "trigger": "submit-message"}
            if "plain" in self.path:
                body = {"id": f"c{n}", "messages": [message], "trigger": "submit-message"}
        self.body = json.dumps(body).encode()
        return super().request()


def _target(label: str, server: object, path: str, protocol: str, events: int, floor: Target | None) -> Target:
    target = FreshThreadTarget(label, server, path, b"", events, floor)  # type: ignore[arg-type]
    target.protocol = protocol
    return target


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=5)
    parser.add_argument("--requests", type=int, default=100)
    parser.add_argument("--warmup", type=int, default=10)
    parser.add_argument("--max-seconds", type=float, default=20.0)
    args = parser.parse_args()
    print(f"reply: {REPLY_TOKENS} tokens from builtin:echo; CPU from {cpu_source()}")
    with tempfile.TemporaryDirectory() as tmp:
        config_file = Path(tmp) / "chatgate.toml"
        config_file.write_text(CONFIG)
        with running("chatgate", str(config_file)) as chatgate:
            targets: list[Target] = []
            for protocol, route, events in (("ag-ui", "ag-ui", 206), ("vercel-ai", "chat", 207)):
                plain = _target(f"plain {protocol}", chatgate, f"/agents/plain/{route}", protocol, events, None)
                stored = _target(f"stored {protocol}", chatgate, f"/agents/stored/{route}", protocol, events, plain)
                targets += [plain, stored]
            try:
                rounds = {"rounds": args.rounds, "requests": args.requests, "warmup": args.warmup}
                run_rounds(targets, max_seconds=args.max_seconds, **rounds)
                report(targets, unit="event")
            finally:
                for target in targets:
                    target.close()


if __name__ == "__main__":
    main()
