#!/usr/bin/env bash
# The boundary-judgement comparison of docs/judge.md: SmolLM2-135M-Instruct and Gemma 3 270M,
# each in both answer modes (`tool`, and `text` with the grammar), beside the baselines, on the
# items built from the task suite and the labelled real sessions.
#
#   tests/judge-comparison.sh DATA_DIR      record (local models; at STEP=5, 95 items: 25–31 min per
#                                           model and mode on one core; STEP=1, 474 items: ~9.5 h)
#   tests/judge-comparison.sh --replay      the table again from the committed cassettes (offline)
#
# Settings (environment): OUT (default results/judge), STEP (every STEP-th item of the full
# dataset, from the first; default 5; 1 = every item), FOLDBENCH (the binary; default
# target/release/foldbench), FOLDBENCH_LLM_THREADS (default 1), RESUME (1: keep OUT's items and
# the cassettes already recorded, ask only the exchanges they lack, add to runs.txt — an interrupted recording goes on where it
# stopped; default: record afresh), JUDGE_MODELS (the models to run, default "smollm2 gemma3"; two
# instances with their own PORT and OUT run side by side). Writes OUT: items.jsonl (the
# selected items), cassettes/<alias>-<mode>/ (every exchange; compacted: the request is left out,
# its sha256 is the file's key and items.jsonl regenerates it), records.jsonl and table.md (the
# replayed comparison), runs.txt (each live run's command, time and `uptime` load).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-results/judge}"
BIN="${FOLDBENCH:-target/release/foldbench}"
STEP="${STEP:-5}"
export FOLDBENCH_LLM_THREADS="${FOLDBENCH_LLM_THREADS:-1}"
# The request-shaping flags: the live runs and every replay must use the same ones (they are part
# of what the model is shown, hence of the cassette keys).
# (Tool outputs are cut to 300 characters when the items are built, which keeps items.jsonl small.)
SHAPE=(--max-context 2048)
# Not part of the keys: how the live runs ask.
ASK=(--max-answer-tokens 64 --jobs 1 --timeout 900 --retries 1)
ALL_MODELS=(smollm2:smollm2-135m-instruct gemma3:gemma-3-270m)
MODELS=()
for m in "${ALL_MODELS[@]}"; do
    case " ${JUDGE_MODELS:-smollm2 gemma3} " in *" ${m%%:*} "*) MODELS+=("$m") ;; esac
done
MODES=(tool text)

log() { echo "judge-comparison: $*" >&2; }

replay() {
    local args=()
    for m in "${MODELS[@]}"; do
        for mode in "${MODES[@]}"; do
            args+=(--model "replay:$OUT/cassettes/${m#*:}-$mode")
        done
    done
    "$BIN" judge run --dataset "$OUT/items.jsonl" "${SHAPE[@]}" "${args[@]}" \
        -o "$OUT/records.jsonl" --format md >"$OUT/table.md"
    log "table: $OUT/table.md, records: $OUT/records.jsonl"
}

# Drops each cassette file's request (kept: version, key, model, epoch, response).
compact() {
    python3 - "$1" <<'PY'
import json, pathlib, sys
for f in sorted(pathlib.Path(sys.argv[1]).glob("*.json")):
    if f.name == "answer.json":
        continue
    d = json.loads(f.read_text())
    keep = {k: d[k] for k in ("version", "key", "model", "epoch", "response") if k in d}
    f.write_text(json.dumps(keep, sort_keys=True, separators=(",", ":")) + "\n")
PY
}

if [ "${1:-}" = "--replay" ]; then
    replay
    exit 0
fi
DATA="${1:?usage: tests/judge-comparison.sh DATA_DIR | --replay}"
mkdir -p "$OUT" target/judge
if [ "${RESUME:-0}" = 1 ] && [ -s "$OUT/items.jsonl" ]; then
    # The items the cassettes were recorded on: a new build is not byte-identical (the task items
    # hold the tasks' own outputs, test timings included), so a resumed recording keeps them.
    log "resuming on the $(wc -l <"$OUT/items.jsonl") items of $OUT/items.jsonl"
else
    "$BIN" judge build --from tasks --from "$DATA" --max-tool-output 300 -o "target/judge/all-$$.jsonl" \
        --format md >&2
    awk -v step="$STEP" 'NR % step == 1' "target/judge/all-$$.jsonl" >"$OUT/items.jsonl"
    log "$(wc -l <"$OUT/items.jsonl") of $(wc -l <"target/judge/all-$$.jsonl") items (every ${STEP}th from the first)"
    rm -f "target/judge/all-$$.jsonl"
fi
[ "${RESUME:-0}" = 1 ] || : >"$OUT/runs.txt"
for m in "${MODELS[@]}"; do
    key="${m%%:*}" alias="${m#*:}"
    settings="$(FOLDBENCH_LLM_MODELS="$key" bash tests/local-model.sh start)"
    url="$(sed -n 's/^OPENAI_BASE_URL=//p' <<<"$settings")"
    for mode in "${MODES[@]}"; do
        dir="$OUT/cassettes/$alias-$mode"
        flags=(--answer "$mode")
        if [ "${RESUME:-0}" = 1 ]; then
            flags+=(--resume)
        else
            rm -rf "$dir"
        fi
        [ "$mode" = text ] && flags+=(--grammar)
        cmd=("$BIN" judge run --dataset "$OUT/items.jsonl" "${SHAPE[@]}" "${ASK[@]}" "${flags[@]}"
            --model "openai:$alias" --record "$dir" -o "target/judge/live-$alias-$mode.jsonl" --format md)
        start=$(date +%s)
        load0="$(uptime)"
        OPENAI_BASE_URL="$url" "${cmd[@]}" >"target/judge/live-$alias-$mode.md" || true
        {
            echo "${cmd[*]}"
            echo "  $(($(date +%s) - start)) s; load before: ${load0##*load average: }; after: $(uptime | sed 's/.*load average: //')"
        } >>"$OUT/runs.txt"
        compact "$dir"
    done
    FOLDBENCH_LLM_MODELS="$key" bash tests/local-model.sh stop
done
replay
