#!/usr/bin/env bash
# The HTML pages as a person sees them: builds foldbench, writes the pages — `report -o` of a
# small A/B run (four arms, a fold and compactions), `replay -o` of tests/fixtures/real-sessions
# (the default policies, and a sweep of trim's keep) and `judge run -o` of the judge fixtures —
# and opens each from
# file:// in headless Chromium (tests/html-check.cjs, driven by playwright-core): any console
# error, page error or network request fails it; every chart must have exactly one line per
# policy; the cost–loss frontier chart must have a point per arm, its line, a line per sweep and
# labels that do not overlap; the first table must sort and filter; a drill-down must open.
# Screenshots go to OUT/shots (OUT: the first argument, default target/html-check/out).
#
# Needs /usr/bin/chromium (Debian package `chromium`; CHROMIUM=path overrides) and node with
# playwright-core in target/html-check (installed here with npm when missing). Without Chromium
# or node it says it skipped and exits 0 — unless CI=true, where it fails.
set -euo pipefail
cd "$(dirname "$0")/.."
OUT="${1:-target/html-check/out}"
CHROMIUM="${CHROMIUM:-/usr/bin/chromium}"
PW=target/html-check

skip() {
  if [ "${CI:-}" = "true" ]; then
    echo "html-check: FAIL: $1 (CI=true: this test must run)" >&2
    exit 1
  fi
  echo "html-check: skipped: $1"
  exit 0
}
[ -x "$CHROMIUM" ] || skip "no Chromium at $CHROMIUM (apt-get install chromium)"
command -v node >/dev/null || skip "no node"
if [ ! -f "$PW/node_modules/playwright-core/package.json" ]; then
  command -v npm >/dev/null || skip "no npm to install playwright-core"
  mkdir -p "$PW"
  npm install --no-audit --no-fund --silent --prefix "$PW" playwright-core@1 >/dev/null
fi

cargo build --quiet --bin foldbench
BIN="${CARGO_TARGET_DIR:-target}/debug/foldbench"
rm -rf "$OUT"
mkdir -p "$OUT/shots"
ARMS="none,trim,compact:window=6000,fold"
"$BIN" ab --task tasks/long-session.yaml --arms "$ARMS" --runs 1 --out "$OUT/run" >"$OUT/ab.log" 2>&1 \
  || { cat "$OUT/ab.log" >&2; exit 1; }
"$BIN" report "$OUT/run" -o "$OUT/report.html" >/dev/null
"$BIN" replay tests/fixtures/real-sessions -o "$OUT/replay.html" >/dev/null
SWEEP="none,trim:keep=0,trim:keep=1,trim:keep=2,trim:keep=3,fold"
"$BIN" replay tests/fixtures/real-sessions --policy none --policy 'trim:keep=0..3' --policy fold \
  -o "$OUT/sweep.html" >/dev/null
"$BIN" judge build --from tests/fixtures/judge -o "$OUT/judge.jsonl" >/dev/null 2>&1
"$BIN" judge run --dataset "$OUT/judge.jsonl" -o "$OUT/judge.html" >/dev/null

node tests/html-check.cjs "$PW" "$CHROMIUM" "$OUT/shots" \
  "report=$OUT/report.html=$ARMS" \
  "replay=$OUT/replay.html=none,trim,compact,fold" \
  "sweep=$OUT/sweep.html=$SWEEP" \
  "judge=$OUT/judge.html"
echo "html-check: ok; screenshots in $OUT/shots"
