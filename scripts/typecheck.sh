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
# Every module of app/ and adapters/ must be in the layout (a new folder is linked like any entry above).
laid_out=$(find -L "$root" -name '*.py' | wc -l)
present=$(find app adapters -name '*.py' -not -path '*/__pycache__/*' | wc -l)
[ "$laid_out" -eq "$present" ] || { echo "typecheck: $laid_out of $present modules laid out" >&2; exit 1; }
exec .venv/bin/mypy "$@"
