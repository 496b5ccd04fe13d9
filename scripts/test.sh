#!/usr/bin/env bash
# Install everything the tests need (Python packages into .venv, the real Node UI clients into
# tests/clients/node_modules, Redis, PostgreSQL and Chromium from Debian's packages), then run the
# linters, the type checker and the whole test suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-system-packages.sh
python3 -m venv .venv
.venv/bin/python -m pip install --quiet --upgrade pip
.venv/bin/python -m pip install --quiet -e '.[test]'
(cd tests/clients && npm ci --no-audit --no-fund --loglevel=error)
(cd tests/clients/page && npm ci --no-audit --no-fund --loglevel=error)  # the chat page's build and axe-core
.venv/bin/ruff check .
.venv/bin/ruff format --check .
bash scripts/typecheck.sh
.venv/bin/python -m pytest "$@"
