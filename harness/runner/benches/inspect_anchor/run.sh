#!/bin/sh
# The inspect_ai anchor of docs/performance.md: inspect_ai 0.3.285 with its mockllm model on the
# lean cell's shape (anchor.py). Makes a throwaway virtual environment (VENV, default
# /tmp/inspect-anchor-venv) with `pip install inspect-ai==0.3.285` when it has none, then prints:
#   - start-up: `import inspect_ai` and a whole `python anchor.py 1` process (median of 3);
#   - per sample: (t(N) - t(1)) / (N - 1) of the eval call alone, wall and CPU, with inspect's
#     realtime log (its default) and without it (median of 3 each).
# Usage: harness/runner/benches/inspect_anchor/run.sh [N]   (N defaults to 100)
set -eu
here=$(cd "$(dirname "$0")" && pwd)
venv=${VENV:-/tmp/inspect-anchor-venv}
n=${1:-100}
if [ ! -x "$venv/bin/python" ] || ! "$venv/bin/python" -c 'import inspect_ai' 2>/dev/null; then
    python3 -m venv "$venv"
    "$venv/bin/pip" install -q inspect-ai==0.3.285
fi
py=$venv/bin/python
cd "$here"
now() { date +%s%N; }
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "inspect_ai $("$py" -c 'import inspect_ai; print(inspect_ai.__version__)')"
for _ in 1 2 3; do t=$(now); "$py" -c 'import inspect_ai' ; echo $(($(now) - t)); done |
    median | awk '{printf "import inspect_ai: %.0f ms (median of 3)\n", $1 / 1e6}'
for _ in 1 2 3; do t=$(now); "$py" anchor.py 1 >/dev/null; echo $(($(now) - t)); done |
    median | awk '{printf "one sample, whole process: %.0f ms (median of 3)\n", $1 / 1e6}'
for flag in "" --no-realtime; do
    for _ in 1 2 3; do
        one=$("$py" anchor.py 1 $flag | tail -1)
        many=$("$py" anchor.py "$n" $flag | tail -1)
        "$py" -c "
import json, sys
a, b = json.loads(sys.argv[1]), json.loads(sys.argv[2])
n = b['samples']
print((b['eval_s'] - a['eval_s']) / (n - 1) * 1000, (b['eval_cpu_s'] - a['eval_cpu_s']) / (n - 1) * 1000)
" "$one" "$many"
    done | sort -n | awk -v f="${flag:-realtime log}" '{w[NR]=$1; c[NR]=$2} END {
        printf "per sample (%s): %.1f ms wall, %.1f ms CPU (the median run of 3; wall of each: %.1f %.1f %.1f ms)\n", f, w[2], c[2], w[1], w[2], w[3]}'
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
