#!/usr/bin/env bash
# The real trace backend the telemetry tests (tests/test_telemetry.py) send spans to: Arize Phoenix
# (PyPI `arize-phoenix`) in a virtual environment of its own, so its many dependencies never mix with
# chatgate's. Created once per machine, cached outside the clone keyed by version; later runs do nothing.
# With --path it prints the `phoenix` executable's path (and fails when it is not installed: the tests
# never install it themselves, an install inside pytest would outrun its timeouts).
set -euo pipefail
PHOENIX_VERSION=20.26.1
cache="${XDG_CACHE_HOME:-$HOME/.cache}/chatgate"
venv="$cache/phoenix-$PHOENIX_VERSION"
phoenix="$venv/bin/phoenix"
if [ "${1:-}" = "--path" ]; then
    [ -x "$phoenix" ] || { echo "install-phoenix: not installed; run scripts/install-phoenix.sh" >&2; exit 1; }
    echo "$phoenix"
    exit 0
fi
if [ -x "$phoenix" ] && [ -f "$venv/.complete" ]; then
    exit 0
fi
echo "install-phoenix: installing arize-phoenix $PHOENIX_VERSION into $venv (once)" >&2
rm -rf "$venv"
python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "arize-phoenix==$PHOENIX_VERSION"
touch "$venv/.complete"
