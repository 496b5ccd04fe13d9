#!/usr/bin/env bash
# Install the real MCP servers the tests start (tests/mcp/real_servers.py):
# - @modelcontextprotocol/server-everything from npm, into tests/mcp/node_modules (pinned by package-lock.json);
# - mcp-server-time from PyPI, into its own venv tests/mcp/.venv-time: it pins its own `mcp` SDK, which must
#   not mix with chatgate's. The venv is kept between runs and rebuilt only when the pinned version changes.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/npm-ci.sh tests/mcp
cd tests/mcp
TIME_SERVER="mcp-server-time==2026.10.19"
if [ "$(cat .venv-time/.installed 2>/dev/null)" != "$TIME_SERVER" ]; then
  rm -rf .venv-time
  python3 -m venv .venv-time
  .venv-time/bin/python -m pip install --quiet "$TIME_SERVER"
  echo "$TIME_SERVER" > .venv-time/.installed
fi
