#!/usr/bin/env bash
# The boundary-judgement comparison of docs/judge.md: SmolLM2-135M-Instruct and Gemma 3 270M,
# each in both answer modes (`tool`, and `text` with the grammar), beside the baselines, on every
# item built from the labelled real sessions and every 5th item of the task suite.
#
#   tests/judge-comparison.sh DATA_DIR      record with the local models (a pass of 76 items: ~1.7 h
#                                           of one core for the four runs; all five ~8.9 h; measured
#                                           in docs/judge.md)
#   tests/judge-comparison.sh --replay      the table again from the committed cassettes (offline)
#
# The items come in five passes: pass K holds the items at lines K, K+5, K+10, ... of the full
# build (`judge build --from tasks --from DATA`, task items first), pass 0 those at 5, 10, ...; a
# task item is kept only in pass 1 (every 5th task item: the target is every real-session item,
# and a task item's request holds the task's own test timings, so a new build asks it again).
# items.jsonl holds the passes one after another, each a systematic sample of the whole, and the
# live runs go pass by pass (both modes of a model before its next pass), so an interrupted
# recording leaves whole passes behind and the comparison of the passes done is a fair sample.
#
# Settings (environment): OUT (default results/judge), PASSES (the passes, in order; default
# "1 2 3 4 0": every real-session item), FOLDBENCH (the binary; default target/release/foldbench),
# FOLDBENCH_LLM_THREADS (default 1), RESUME (1: keep the items of OUT/items.jsonl that are
# selected again (a new build's task items differ), keep the cassettes, ask only the exchanges
# they lack, add to runs.txt: an interrupted recording goes on where it stopped, and a recording
# of some passes grows to more; default: record afresh), JUDGE_MODELS (the models to run, default
# "smollm2 gemma3"; two instances with their own PORT run side by side, one model each, on the
# same OUT; each ends with a table of its own model, so run `--replay` once both are done).
# Writes OUT: items.jsonl (the selected items), cassettes/<alias>-<mode>/ (every exchange;
# compacted: the request is left out, its sha256 is the file's key and items.jsonl regenerates
# it), records.jsonl and table.md (the replayed comparison), runs.txt (each live run's command,
# time and `uptime` load).
set -euo pipefail
cd "$(dirname "$0")/.."

OUT="${OUT:-results/judge}"
BIN="${FOLDBENCH:-target/release/foldbench}"
PASSES="${PASSES:-1 2 3 4 0}"
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
"$BIN" judge build --from tasks --from "$DATA" --max-tool-output 300 -o "target/judge/all-$$.jsonl" \
    --format md >&2
keep=/dev/null
if [ "${RESUME:-0}" = 1 ] && [ -s "$OUT/items.jsonl" ]; then
    # The items the cassettes were recorded on: a new build is not byte-identical (the task items
    # hold the tasks' own outputs, test timings included), so a resumed recording keeps them.
    keep="$OUT/items.jsonl"
fi
# items.jsonl: the passes in order; target/judge/pass-K-PID.jsonl: each pass alone.
python3 - "target/judge/all-$$.jsonl" "$keep" "$OUT/items.jsonl" "target/judge/pass-%s-$$.jsonl" $PASSES <<'PY'
import json, os, sys
full, keep, out, per_pass, passes = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5:]
lines = open(full).read().splitlines()
items = [json.loads(l) for l in lines]
kept = {json.loads(l)["id"]: l for l in open(keep).read().splitlines()}
selected = []
for p in passes:
    chosen = [
        kept.get(item["id"], l)
        for n, (l, item) in enumerate(zip(lines, items), start=1)
        if n % 5 == int(p) % 5 and (p == "1" or item["source"] != "task")
    ]
    open(per_pass % p, "w").write("".join(l + "\n" for l in chosen))
    selected += chosen
# Replaced in one step: a second instance on the same OUT reads either file whole.
tmp = f"{out}.{os.getpid()}"
open(tmp, "w").write("".join(l + "\n" for l in selected))
os.replace(tmp, out)
print(f"judge-comparison: {len(selected)} of {len(lines)} items (passes {' '.join(passes)}; "
      f"{len(kept)} kept from the earlier items)", file=sys.stderr)
PY
rm -f "target/judge/all-$$.jsonl"
[ "${RESUME:-0}" = 1 ] || : >"$OUT/runs.txt"
for m in "${MODELS[@]}"; do
    key="${m%%:*}" alias="${m#*:}"
    settings="$(FOLDBENCH_LLM_MODELS="$key" bash tests/local-model.sh start)"
    url="$(sed -n 's/^OPENAI_BASE_URL=//p' <<<"$settings")"
    for pass in $PASSES; do
        for mode in "${MODES[@]}"; do
            dir="$OUT/cassettes/$alias-$mode"
            flags=(--answer "$mode")
            # Every pass after the first adds to the cassettes of the earlier ones.
            if [ "${RESUME:-0}" = 1 ] || [ "$pass" != "${PASSES%% *}" ]; then
                flags+=(--resume)
            else
                rm -rf "$dir"
            fi
            [ "$mode" = text ] && flags+=(--grammar)
            cmd=("$BIN" judge run --dataset "target/judge/pass-$pass-$$.jsonl" "${SHAPE[@]}" "${ASK[@]}"
                "${flags[@]}" --model "openai:$alias" --record "$dir"
                -o "target/judge/live-$alias-$mode.jsonl" --format md)
            start=$(date +%s)
            load0="$(uptime)"
            OPENAI_BASE_URL="$url" "${cmd[@]}" >"target/judge/live-$alias-$mode.md" || true
            {
                echo "pass $pass ($(wc -l <"target/judge/pass-$pass-$$.jsonl") items): ${cmd[*]}"
                echo "  $(($(date +%s) - start)) s; load before: ${load0##*load average: }; after: $(uptime | sed 's/.*load average: //')"
            } >>"$OUT/runs.txt"
            compact "$dir"
        done
    done
    FOLDBENCH_LLM_MODELS="$key" bash tests/local-model.sh stop
done
rm -f target/judge/pass-*-$$.jsonl
replay
