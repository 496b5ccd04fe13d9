#!/usr/bin/env bash
# The upstream client's CPU, chatgate's transport against httpx, httpx2 and aiohttp (bench/transport_cpu.py).
# aiohttp and httpx2 go into their own environment, bench/.venv-clients, so chatgate's stays as shipped.
set -euo pipefail
cd "$(dirname "$0")/.."
if [ ! -f bench/.venv-clients/.installed ]; then
  python3 -m venv bench/.venv-clients
  bench/.venv-clients/bin/python -m pip install -q 'aiohttp>=3.11,<4' 'httpx2>=2.16,<3' 'uvloop>=0.21'
  touch bench/.venv-clients/.installed
fi
ulimit -n "$(ulimit -Hn)"
exec .venv/bin/python bench/transport_cpu.py "$@"
