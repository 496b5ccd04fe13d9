#!/usr/bin/env bash
# Rebuild the chat page's bundle, app/static/chat.js, from its source in tests/clients/page
# (esbuild, with the `ai` package pinned in that folder's lock file). Commit the result with the source.
set -euo pipefail
cd "$(dirname "$0")/../tests/clients/page"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node build.mjs "$@"
