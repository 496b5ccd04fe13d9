#!/usr/bin/env bash
# Install chatgate into .venv and start it. With no --config (and no $CHATGATE_CONFIG) it serves one
# agent on the built-in echo model: no API key needed. Extra arguments go to `chatgate serve`.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e .
exec .venv/bin/chatgate serve "$@"
