#!/usr/bin/env bash
# Rebuild the chat page's bundle, app/static/chat.js, from its source in tests/clients/page
# (esbuild, with the `ai` package pinned in that folder's lock file). Commit the result with the source.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/npm-ci.sh tests/clients/page
cd tests/clients/page
node build.mjs "$@"
