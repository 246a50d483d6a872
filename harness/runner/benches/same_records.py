#!/usr/bin/env python3
"""Whether two run folders hold the same records apart from times.

Usage: harness/runner/benches/same_records.py RUN_A RUN_B

Compares what `foldbench run` wrote in each: `cells.jsonl` and `requests.jsonl` line by line
(paired by cell id and request index), and every cell's files (`events.jsonl` line by line,
`transcript.jsonl`, `diff.patch` and the archives byte for byte). Times are left out as
tests/determinism.rs leaves them out: every key ending in `_ms`, and a tool call's `cached`
(whether this cell ran a command or took another cell's result of it, a matter of which was
scheduled first). Prints the number of records, files and request rows compared and each
difference; exits 0 when there is none, 1 otherwise. Used to show that a change to the runner
leaves the default matrix's 330 records as they were (docs/performance.md).
"""

import json
import os
import sys


def timeless(v):
    if isinstance(v, dict):
        return {
            k: timeless(x)
            for k, x in v.items()
            if not k.endswith("_ms") and k != "cached"
        }
    if isinstance(v, list):
        return [timeless(x) for x in v]
    return v


def jsonl(path):
    with open(path, encoding="utf-8") as f:
        return [timeless(json.loads(line)) for line in f if line.strip()]


def files(root):
    out = {}
    for here, _dirs, names in os.walk(root):
        for n in names:
            p = os.path.join(here, n)
            out[os.path.relpath(p, root)] = p
    return out


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__.strip().splitlines()[2])
    a, b = sys.argv[1], sys.argv[2]
    problems = []

    def by(rows, key):
        got = {}
        for r in rows:
            k = key(r)
            if k in got:
                problems.append(f"{k} recorded twice")
            got[k] = r
        return got

    cells = [by(jsonl(os.path.join(d, "cells.jsonl")), lambda r: r["id"]) for d in (a, b)]
    for only, d in ((cells[0].keys() - cells[1].keys(), a), (cells[1].keys() - cells[0].keys(), b)):
        for k in sorted(only):
            problems.append(f"{k}: only in {d}")
    for k in sorted(cells[0].keys() & cells[1].keys()):
        if cells[0][k] != cells[1][k]:
            problems.append(f"{k}: the records differ")

    reqs = [
        by(jsonl(os.path.join(d, "requests.jsonl")), lambda r: (r["cell"], r.get("agent"), r["index"]))
        for d in (a, b)
    ]
    if reqs[0] != reqs[1]:
        differ = sorted(
            {k[0] for k in reqs[0].keys() ^ reqs[1].keys()}
            | {k[0] for k in reqs[0].keys() & reqs[1].keys() if reqs[0][k] != reqs[1][k]}
        )
        problems.append(f"requests.jsonl differs for {len(differ)} cells: {differ[:5]}")

    fa, fb = files(os.path.join(a, "cells")), files(os.path.join(b, "cells"))
    for rel in sorted(fa.keys() ^ fb.keys()):
        problems.append(f"cells/{rel}: only in one run")
    for rel in sorted(fa.keys() & fb.keys()):
        if rel.endswith("events.jsonl"):
            same = jsonl(fa[rel]) == jsonl(fb[rel])
        else:
            with open(fa[rel], "rb") as x, open(fb[rel], "rb") as y:
                same = x.read() == y.read()
        if not same:
            problems.append(f"cells/{rel} differs")

    for p in problems:
        print(p)
    print(
        f"{len(cells[0])} records, {len(reqs[0])} request rows, {len(fa)} cell files compared: "
        + ("the same apart from times" if not problems else f"{len(problems)} differences")
    )
    sys.exit(1 if problems else 0)


if __name__ == "__main__":
    main()
