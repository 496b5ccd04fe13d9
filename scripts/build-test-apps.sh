#!/usr/bin/env bash
# Install and build the React apps the browser tests drive, with Vite: tests/clients/usechat (useChat
# on ai 5, 6 and 7) and tests/clients/copilotkit (CopilotChat and its Node runtime). npm ci runs only
# when an app's node_modules is missing or older than its lock file; a build is skipped when the app's
# sources and lock file are unchanged (each build.mjs keeps a stamp).
set -euo pipefail
cd "$(dirname "$0")/../tests/clients"
for app in usechat copilotkit; do
  (
    cd "$app"
    if [ ! -d node_modules ] || [ package-lock.json -nt node_modules ]; then
      npm ci --no-audit --no-fund --loglevel=error
    fi
    node build.mjs
  )
done
