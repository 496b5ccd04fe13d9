#!/usr/bin/env bash
# `npm ci` in a folder, unless its node_modules was installed from the package-lock.json it has now:
#   bash scripts/npm-ci.sh tests/clients
# The lock's digest is kept inside node_modules once npm ci succeeds, so deleting node_modules, or a
# changed lock (a pull, a branch switch), installs again; an unchanged one costs nothing (npm ci alone
# takes 2-6 s even when nothing changed, as it always deletes node_modules first).
set -euo pipefail
cd "$1"
stamp=node_modules/.chatgate-lock.sha256
digest="$(sha256sum package-lock.json | cut -d' ' -f1)"
if [ "$(cat "$stamp" 2>/dev/null)" = "$digest" ]; then
    exit 0
fi
npm ci --no-audit --no-fund --loglevel=error
echo "$digest" >"$stamp"
