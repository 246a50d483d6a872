#!/usr/bin/env python3
"""The no-op policy as a process: every message, as appended (the built-in `none`). The
protocol's own cost is this against `none` (docs/performance.md); docs/policy-protocol.md.
It speaks protocol 2: one process serves session after session, each opened and closed."""
import json
import sys

view, store = [], {}
for line in sys.stdin:
    req = json.loads(line)
    if req["type"] == "open":  # a new session: nothing of the last one is kept
        view, store = [], {}
    ctx = req.get("context")
    if ctx is not None:
        del view[ctx["keep"]:]
        for m in ctx["append"]:
            m = store[m["ref"]] if "ref" in m else m
            store[m["id"]] = m
            view.append(m)
    answers = {
        "hello": {"type": "hello", "protocol": min(req.get("protocol", 1), 2)},
        "open": {"type": "open"},
        "plan": {"type": "send", "messages": [[0, len(view)]]},
        "card": {"type": "card", "card": None},
        "end_turn": {"type": "splices", "splices": []},
    }
    ans = answers.get(req["type"], {"type": "ok"})
    ans["re"] = req["id"]
    sys.stdout.write(json.dumps(ans) + "\n")
    sys.stdout.flush()
