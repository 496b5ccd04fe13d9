#!/usr/bin/env bash
# Install and build the React apps the browser tests drive, with Vite: tests/clients/usechat (useChat
# on ai 5, 6 and 7) and tests/clients/copilotkit (CopilotChat and its Node runtime). npm ci runs only
# when an app's lock file changed (scripts/npm-ci.sh); a build is skipped when the app's sources and
# lock file are unchanged (each build.mjs keeps a stamp).
set -euo pipefail
cd "$(dirname "$0")/.."
for app in usechat copilotkit; do
  bash scripts/npm-ci.sh "tests/clients/$app"
  (cd "tests/clients/$app" && node build.mjs)
done
