#!/usr/bin/env python3
"""llama.cpp's own token rates from a llama-cpp-python server log (verbose).

    python3 tests/llm-rates.py LOG [--since-line N]

Every generation llama.cpp runs prints `llama_perf_context_print` lines; this sums the
`prompt eval time` (prompt tokens the model had to compute: a prefix reused from the previous
request is not counted) and the `eval time` (generated tokens) over the log, or over the lines
after N (to measure one run: count the log's lines before it), and prints one line:

    generations=G prompt_tokens=P prompt_ms=… prompt_tok_s=… gen_tokens=T gen_ms=… gen_tok_s=… model_ms=…

`generations` exceeds the number of requests when a chat format runs several constrained
generations per request (chatml-function-calling with tools: one to choose between a message and
a function, then one per call and one to decide whether another call follows).
"""

import re
import sys

LINE = re.compile(
    r"^llama_perf_context_print:\s+(prompt eval|eval) time =\s+([\d.]+) ms /\s+(\d+) (?:tokens|runs)"
)


def main() -> int:
    if len(sys.argv) < 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    since = 0
    if len(sys.argv) == 4 and sys.argv[2] == "--since-line":
        since = int(sys.argv[3])
    totals = {"prompt eval": [0.0, 0], "eval": [0.0, 0]}
    generations = 0
    with open(sys.argv[1], encoding="utf-8", errors="replace") as f:
        for n, line in enumerate(f, 1):
            if n <= since:
                continue
            m = LINE.match(line)
            if not m:
                continue
            what, ms, count = m.group(1), float(m.group(2)), int(m.group(3))
            totals[what][0] += ms
            totals[what][1] += count
            if what == "prompt eval":
                generations += 1
    pm, pt = totals["prompt eval"]
    gm, gt = totals["eval"]

    def rate(tokens: int, ms: float) -> str:
        return f"{tokens / ms * 1000:.1f}" if ms > 0 else "-"

    print(
        f"generations={generations} prompt_tokens={pt} prompt_ms={pm:.0f} prompt_tok_s={rate(pt, pm)} "
        f"gen_tokens={gt} gen_ms={gm:.0f} gen_tok_s={rate(gt, gm)} model_ms={pm + gm:.0f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
