#!/usr/bin/env bash
# Install chatgate into .venv if needed, and start it. With no --config (and no $CHATGATE_CONFIG) it serves
# one agent on the built-in echo model: no API key needed. Extra arguments go to `chatgate serve`.
#
# The install is editable, so code changes need no reinstall. It runs again only when .venv is missing,
# or pyproject.toml or the Python version changed: a stamp in .venv holds the hash of both.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.chatgate-install-stamp
want="$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), sys.version.split()[0])')"
if [ ! -x .venv/bin/chatgate ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "serve.sh: installing chatgate into .venv" >&2
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e .
    printf '%s\n' "$want" >"$stamp"
fi
exec .venv/bin/chatgate serve "$@"
