#!/usr/bin/env bash
# Install and build the React apps the browser tests drive (tests/clients/usechat: useChat on ai 5, 6
# and 7) with Vite. npm ci runs only when node_modules is missing or older than the lock file; the
# build is skipped when the app's sources and lock file are unchanged (build.mjs keeps a stamp).
set -euo pipefail
cd "$(dirname "$0")/../tests/clients/usechat"
if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
node build.mjs
