#!/usr/bin/env bash
# The outputs of two revisions, compared times aside: a change that should not change behaviour
# (a restructuring, reworded errors) shows here that it did not.
#
#   tests/same-output.sh BASE [NEW]     BASE, NEW: git revisions (NEW left out: the work tree as it is)
#   FOLDBENCH_BASE_BIN=PATH FOLDBENCH_NEW_BIN=PATH tests/same-output.sh     binaries built already
#   SAME_OUTPUT_QUICK=1 ...             the `ci` profile in place of the default run (seconds, not minutes)
#
# Both binaries run on the same inputs, in the base's tree: (1) the default run (`foldbench run`,
# foldbench.yaml's default profile); (2) `replay` and `analyze` on tests/fixtures/real-sessions,
# in each format they print; (3) the proxy's run folder, as tests/proxy-e2e.py drives it under
# none, trim and fold. A run folder is compared file by file: JSON and JSON Lines without their
# times (every key ending in `_ms`, a tool call's `cached`), the loopback port replaced, the
# proxy state's `seen` (a set) sorted, records keyed by cell id and request rows by cell and
# index (cells finish in any order); other files byte for byte. Printed output is compared
# line by line. The base runs twice: what differs between its own two runs is unstable today,
# reported and left out, never taken for a change. Exit 0: the same; 1: differences (listed);
# 2: a run failed.
set -euo pipefail
root=$(git rev-parse --show-toplevel)
work=$(mktemp -d "${TMPDIR:-/tmp}/same-output.XXXXXX")
cleanup() {
  for t in base new; do git -C "$root" worktree remove --force "$work/$t" 2>/dev/null || true; done
}
trap cleanup EXIT
export FOLDBENCH_REQUIRE_SANDBOX="${FOLDBENCH_REQUIRE_SANDBOX:-1}" COLUMNS=120 TZ=UTC

build() { # REV NAME: builds REV in a worktree of its own; prints the binary's path
  git -C "$root" worktree add --quiet --detach "$work/$2" "$1" >&2
  (cd "$work/$2" && CARGO_TARGET_DIR="$work/target-$2" cargo build --quiet -p foldbench >&2)
  echo "$work/target-$2/debug/foldbench"
}
if [ -n "${FOLDBENCH_BASE_BIN:-}" ]; then base_bin=$FOLDBENCH_BASE_BIN inputs=$root
else base_bin=$(build "${1:?usage: tests/same-output.sh BASE [NEW]}" base) inputs=$work/base; fi
if [ -n "${FOLDBENCH_NEW_BIN:-}" ]; then new_bin=$FOLDBENCH_NEW_BIN
elif [ -n "${2:-}" ]; then new_bin=$(build "$2" new)
else
  (cd "$root" && CARGO_TARGET_DIR="$work/target-tree" cargo build --quiet -p foldbench)
  new_bin=$work/target-tree/debug/foldbench
fi

outputs() { # BIN OUT: the three checks' outputs under OUT
  local bin=$1 out=$2 profile=()
  mkdir -p "$out"
  [ -n "${SAME_OUTPUT_QUICK:-}" ] && profile=(--profile ci)
  (cd "$inputs" && "$bin" run "${profile[@]}" --out "$out/run" >"$out/run.log" 2>&1) \
    || { cat "$out/run.log"; exit 2; }
  for f in json table md csv; do
    for c in replay analyze; do
      (cd "$inputs" && "$bin" $c tests/fixtures/real-sessions --format $f >"$out/$c.$f" 2>/dev/null) || exit 2
    done
  done
  for p in none trim fold; do
    (cd "$inputs" && python3 tests/proxy-e2e.py "$bin" "$out/proxy-$p" "$p" \
      >"$out/proxy-$p.upstream" 2>"$out/proxy-$p.log") || exit 2
  done
}
outputs "$base_bin" "$work/a"
outputs "$base_bin" "$work/b"
outputs "$new_bin" "$work/n"

python3 - "$work" <<'PY'
import hashlib, json, pathlib, re, sys
work = pathlib.Path(sys.argv[1])
port = re.compile(r"127\.0\.0\.1:[0-9]+")

def timeless(v, key=None):
    if isinstance(v, dict):
        return {k: timeless(x, k) for k, x in v.items() if not (k.endswith("_ms") or k == "cached")}
    if isinstance(v, list):
        out = [timeless(x) for x in v]
        return sorted(out, key=json.dumps) if key == "seen" else out
    return port.sub("127.0.0.1:PORT", v) if isinstance(v, str) else v

def keyed(run):
    """Every record of a run folder and every line of a printed output, by a key of its own."""
    out = {}
    for f in sorted(p for p in run.rglob("*") if p.is_file()):
        rel = f.relative_to(run).as_posix()
        if f.name == "run.lock" or rel.endswith(".log"):
            continue
        if f.parent == run:  # printed output (replay, analyze, what the proxy's upstream got): line by line
            for i, line in enumerate(f.read_text().split("\n")):
                out[f"{rel}:{i + 1}"] = port.sub("127.0.0.1:PORT", line)
        elif f.suffix == ".jsonl":
            for i, line in enumerate(l for l in f.read_text().splitlines() if l.strip()):
                d = json.loads(line)
                k = d.get("id") if rel.endswith("/cells.jsonl") else (
                    f"{d.get('cell')}#{d.get('index')}#{d.get('purpose')}#{d.get('turn')}"
                    if rel.endswith("/requests.jsonl") else i)
                out[f"{rel}:{k}"] = json.dumps(timeless(d)).replace(str(run), "RUN")
        elif f.suffix == ".json":
            out[rel] = json.dumps(timeless(json.loads(f.read_text()))).replace(str(run), "RUN")
        else:
            out[rel] = "sha256:" + hashlib.sha256(f.read_bytes()).hexdigest()
    return out

a, b, n = (keyed(work / x) for x in "abn")
unstable = {k for k in a.keys() | b.keys() if a.get(k) != b.get(k)}
for k in sorted(unstable):
    print(f"unstable in the base itself, left out: {k}")
diff = [k for k in sorted(a.keys() | n.keys()) if k not in unstable and a.get(k) != n.get(k)]
for k in diff[:40]:
    print(f"DIFFERS {k}\n  base: {str(a.get(k))[:300]}\n  new:  {str(n.get(k))[:300]}")
if diff:
    print(f"{len(diff)} difference(s) of {len(a)} compared")
    sys.exit(1)
print(f"same: {len(a) - len(unstable)} records and lines of the default run, replay, analyze and "
      f"the proxy, times aside ({len(unstable)} unstable in the base itself)")
PY
