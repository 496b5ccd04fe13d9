"""A stdio tap in front of a real MCP server: passes every byte through, and counts its tool calls.

``python count_calls.py LOG -- COMMAND...`` starts COMMAND and relays stdin and stdout unchanged; each
``tools/call`` request that reaches the server appends its tool name and arguments to LOG, one JSON
line each, so a test counts what actually ran on the server.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading


def main() -> int:
    log_path, separator, *command = sys.argv[1:]
    assert separator == "--", "usage: count_calls.py LOG -- COMMAND..."
    child = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert child.stdin is not None and child.stdout is not None
    server_in, server_out = child.stdin, child.stdout

    def downstream() -> None:
        for line in iter(server_out.readline, b""):
            sys.stdout.buffer.write(line)
            sys.stdout.buffer.flush()

    threading.Thread(target=downstream, daemon=True).start()
    for line in iter(sys.stdin.buffer.readline, b""):
        try:
            message = json.loads(line)
        except ValueError:
            message = None
        if isinstance(message, dict) and message.get("method") == "tools/call":
            params = message.get("params") or {}
            with open(log_path, "a", encoding="utf-8") as log:
                log.write(json.dumps({"tool": params.get("name"), "arguments": params.get("arguments")}) + "\n")
        server_in.write(line)
        server_in.flush()
    server_in.close()
    return child.wait()


if __name__ == "__main__":
    sys.exit(main())
