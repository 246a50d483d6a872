#!/bin/sh
# Whole-process figures of the lean cell (benches/lean/lean.yaml: two user turns, four file
# reads, an in-process check), for docs/performance.md:
#
#   - start-up: `foldbench --version`, and a run of one lean cell (arguments parsed, task loaded,
#     run folder opened, the cell run, its records written, the summary printed);
#   - per cell: a run of N lean cells (`--seeds 1-N`, policy `none`), its wall time divided by N,
#     with the run folder on disk (the default: every record file synced) and in /dev/shm.
#
# Usage: harness/runner/benches/lean_process.sh [FOLDBENCH] [N]
#   FOLDBENCH defaults to target/release/foldbench (build it with
#   `cargo build --release -p foldbench`), N to 300. Prints medians of 5 (start-up) and 3
#   (runs) and the load average.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
repo=$(cd "$here/../../.." && pwd)
bin=${1:-$repo/target/release/foldbench}
n=${2:-300}
task=$here/lean/lean.yaml
scratch=$(mktemp -d)
trap 'rm -rf "$scratch" /dev/shm/foldbench-lean-out-$$' EXIT

now() { date +%s%N; }
# Median of the numbers on standard input.
median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }
ms() { awk -v ns="$1" 'BEGIN {printf "%.1f", ns / 1e6}'; }

echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
for _ in 1 2 3 4 5; do
    t=$(now); "$bin" --version >/dev/null; echo $(($(now) - t))
done | median | { read -r v; echo "foldbench --version: $(ms "$v") ms (median of 5)"; }

for i in 1 2 3 4 5; do
    t=$(now)
    "$bin" run --tasks "$task" --policy none --seeds 1 --out "$scratch/one$i" >/dev/null 2>&1
    echo $(($(now) - t))
done | median | { read -r v; echo "one lean cell, whole process: $(ms "$v") ms (median of 5)"; }

for place in disk shm; do
    for i in 1 2 3; do
        if [ "$place" = disk ]; then out=$scratch/many$i; else out=/dev/shm/foldbench-lean-out-$$/many$i; fi
        t=$(now)
        "$bin" run --tasks "$task" --policy none --seeds "1-$n" --out "$out" >/dev/null 2>&1
        echo $(($(now) - t))
    done | median | {
        read -r v
        echo "$n lean cells, run folder on $place: $(ms "$v") ms, $(awk -v ns="$v" -v n="$n" 'BEGIN {printf "%.2f", ns / 1e6 / n}') ms per cell (median of 3)"
    }
done
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
