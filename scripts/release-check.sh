#!/usr/bin/env bash
# The release check (scripts/test.sh runs it): build the sdist, and the wheel from it, into dist/, `twine check`
# them, install the wheel into a clean virtual environment, then from that install alone:
# `chatgate --version` (and CHANGELOG.md has a section for that version), `chatgate check-config` on
# every example config (docs/examples/**/*.toml, the config in deploy/kubernetes/configmap.yaml and the
# whole configs among the docs' TOML blocks: see scripts/example_configs.py), and `chatgate serve` on
# loopback streaming one useChat and one AG-UI answer from the built-in model and serving the chat page's
# script, stopped by its PID.
#
# The clean venv holds only the wheel's declared dependencies: it is cached outside the clone, keyed by
# the wheel's Requires-Dist lines and the Python version, and the wheel itself is reinstalled every run.
# Needs .venv with the test extra (build, twine, setuptools, pyyaml). Takes ~15 s once the venv is cached.
set -euo pipefail
cd "$(dirname "$0")/.."
root="$PWD"
python="$root/.venv/bin/python"
work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ]; then kill "$server_pid" 2>/dev/null || true; fi
    rm -rf "$work"
}
trap cleanup EXIT
say() { echo "release-check: $*"; }
# Run a command with its output kept for when it fails (pip is chatty about its index settings).
quietly() { "$@" >"$work/step.log" 2>&1 || { cat "$work/step.log" >&2; return 1; }; }

rm -rf dist
# No isolation: the test extra already holds setuptools>=69, so the build needs no registry.
quietly "$python" -m build --no-isolation --outdir dist .  # the sdist, then the wheel built from it
"$python" -m twine --no-color check --strict dist/*
wheel="$(ls dist/*.whl)"
say "built $(cd dist && ls | tr '\n' ' ')"

requires="$("$python" - "$wheel" <<'PY'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as wheel:
    (name,) = [n for n in wheel.namelist() if n.endswith(".dist-info/METADATA")]
    lines = wheel.read(name).decode().splitlines()
print("\n".join(sorted(line for line in lines if line.startswith("Requires-Dist:") and "extra ==" not in line)))
PY
)"
key="$( (python3 --version; echo "$requires") | sha256sum | cut -c1-16)"
venv="${XDG_CACHE_HOME:-$HOME/.cache}/chatgate/release-venv-$key"
if [ ! -f "$venv/.complete" ]; then
    say "creating the clean venv $venv (once per dependency set)"
    rm -rf "$venv"
    python3 -m venv "$venv"
    quietly "$venv/bin/python" -m pip install --upgrade pip
    quietly "$venv/bin/python" -m pip install "$wheel"
    touch "$venv/.complete"
fi
quietly "$venv/bin/python" -m pip install --force-reinstall --no-deps "$wheel"
"$venv/bin/python" -m pip check >/dev/null
cd "$work"  # nothing of the clone is importable from here: only the installed wheel runs
chatgate="$venv/bin/chatgate"
expected="$("$python" -c "import tomllib; print(tomllib.load(open('$root/pyproject.toml', 'rb'))['project']['version'])")"
[ "$("$chatgate" --version)" = "chatgate $expected" ] || { say "chatgate --version is not $expected" >&2; exit 1; }
[ "$("$venv/bin/python" -c 'import chatgate; print(chatgate.__version__)')" = "$expected" ]
grep -q "^## \[$expected\] - " "$root/CHANGELOG.md" || { say "CHANGELOG.md has no section for $expected" >&2; exit 1; }
say "installed: $("$chatgate" --version)"

# Every example config (scripts/example_configs.py): the files under docs/examples, the Kubernetes
# ConfigMap's, and every ```toml block of the README and docs/ that is a whole config.
"$python" "$root/scripts/example_configs.py" "$work/examples" >"$work/examples.list"
(
    source "$work/examples/env"  # a value for every ${env:NAME} they read
    while IFS=$'\t' read -r config label; do
        if ! "$chatgate" check-config "$config" >"$work/check.out" 2>&1; then
            say "$label is not a valid config:" >&2
            cat "$work/check.out" >&2
            exit 1
        fi
        sed "s|^$config|$label|" "$work/check.out"
    done <"$work/examples.list"
)

# Serve the built-in model on a free loopback port, stream once through each protocol, stop by PID.
port="$("$venv/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
"$chatgate" serve --host 127.0.0.1 --port "$port" --log-level warning >"$work/serve.log" 2>&1 &
server_pid=$!
for _ in $(seq 100); do
    if "$venv/bin/python" -c "import urllib.request; urllib.request.urlopen('http://127.0.0.1:$port/healthz', timeout=1)" 2>/dev/null; then
        break
    fi
    kill -0 "$server_pid" 2>/dev/null || { cat "$work/serve.log" >&2; exit 1; }
    sleep 0.1
done
"$venv/bin/python" - "$port" <<'PY'
import json, sys, urllib.request

base = f"http://127.0.0.1:{sys.argv[1]}"


def stream(path: str, body: dict) -> list[dict]:
    request = urllib.request.Request(base + path, json.dumps(body).encode(), {"content-type": "application/json"})
    with urllib.request.urlopen(request, timeout=30) as response:
        text = response.read().decode()
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: {")]


said = {"type": "text", "text": "hello from the release check"}
chat = stream("/api/chat", {"id": "release-1", "trigger": "submit-message",
                            "messages": [{"id": "u1", "role": "user", "parts": [said]}]})
text = "".join(frame.get("delta", "") for frame in chat if frame["type"] == "text-delta")
assert chat[-1]["type"] == "finish" and "hello from the release check" in text, chat
agui = stream("/ag-ui", {"threadId": "t1", "runId": "r1", "state": {}, "tools": [], "context": [],
                         "forwardedProps": {}, "messages": [{"id": "u1", "role": "user", "content": "hi there"}]})
assert agui[-1]["type"] == "RUN_FINISHED" and any(f["type"] == "TEXT_MESSAGE_CONTENT" for f in agui), agui
with urllib.request.urlopen(base + "/static/chat.js", timeout=10) as script:  # the chat page's package data
    assert script.status == 200 and len(script.read()) > 100_000
print(f"release-check: served and streamed from the wheel: useChat {len(chat)} frames, AG-UI {len(agui)} frames,"
      " the chat page's script")
PY
kill "$server_pid"
wait "$server_pid" || true
server_pid=""
say "ok"
