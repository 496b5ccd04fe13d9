#!/usr/bin/env bash
# mypy (strict) over the `chatgate` package as it installs: app/ is `chatgate`, adapters/ is
# `chatgate.adapters`. The layout is rebuilt from symlinks each run, so new modules are always seen.
set -euo pipefail
cd "$(dirname "$0")/.."
root=.venv/typecheck/chatgate
rm -rf .venv/typecheck
mkdir -p "$root"
for entry in app/*; do
    [ "$(basename "$entry")" = __pycache__ ] || ln -s "$PWD/$entry" "$root/"
done
ln -s "$PWD/adapters" "$root/adapters"
exec .venv/bin/mypy "$@"
