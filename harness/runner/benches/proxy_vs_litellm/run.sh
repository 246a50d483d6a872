#!/bin/sh
# foldbench's proxy and LiteLLM's side by side, on the same load, in one run (docs/performance.md,
# "The proxy against LiteLLM"). Installs LiteLLM's proxy, pinned (litellm[proxy]==1.108.7), into a
# virtual environment of its own (LITELLM_VENV, default ${TMPDIR:-/tmp}/foldbench-litellm-1.108.7)
# unless that one already holds the version; builds the release binary unless FOLDBENCH_BIN names
# one; then runs load.py (standard library only): 50 conversations × 20 requests growing to about
# 100,000 tokens, back to back and paced, straight to a loopback upstream and through
# `foldbench proxy --policy none`, `--policy fold` and LiteLLM. It prints each pass's median and
# p99, what each proxy adds to them, its CPU time per request, and the ratios foldbench / LiteLLM.
# No network is used after the install (LITELLM_LOCAL_MODEL_COST_MAP=True).
#
# Usage: harness/runner/benches/proxy_vs_litellm/run.sh [--quick] [load.py's options]
#   --quick: 10 conversations × 10 requests, the upstream's time 250 ms (about a minute, plus
#   LiteLLM's start). `python3 load.py --help` lists the rest.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../../../.." && pwd)
version=1.108.7
venv=${LITELLM_VENV:-${TMPDIR:-/tmp}/foldbench-litellm-$version}
has_it() {
    "$venv/bin/python" -c "import importlib.metadata as m, sys; sys.exit(m.version('litellm') != '$version')" 2>/dev/null
}
if ! has_it; then
    echo "installing litellm[proxy]==$version into $venv" >&2
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q "litellm[proxy]==$version"
    has_it || { echo "$venv: litellm $version did not install" >&2; exit 1; }
fi
if [ -n "${FOLDBENCH_BIN:-}" ]; then
    bin=$FOLDBENCH_BIN
else
    (cd "$root" && cargo build --release -q -p foldbench)
    bin=$root/target/release/foldbench
fi
exec python3 "$here/load.py" --foldbench "$bin" --litellm "$venv/bin/litellm" "$@"
