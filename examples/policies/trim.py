#!/usr/bin/env python3
"""`trim` as a policy process: the tool results of turns before the last `keep` are dropped (or,
with mode=placeholder, replaced by `[output cleared]`) on every request, as the built-in `trim`
does; standard library only. The protocol is docs/policy-protocol.md.

    foldbench run --policy 'exec:python3 examples/policies/trim.py keep=1 mode=placeholder'

It speaks protocol 2: one process serves session after session, each opened (`open`) and
closed (`close`) in turn.
"""
import json
import sys

PLACEHOLDER = "[output cleared]"


def pack(items):
    """Positions in a row become ranges [from, to): the answer stays short."""
    out = []
    for x in items:
        if isinstance(x, int) and out and isinstance(out[-1], list) and out[-1][1] == x:
            out[-1][1] = x + 1
        else:
            out.append([x, x + 1] if isinstance(x, int) else x)
    return out


def plan(view, turn, prefix, keep, placeholder, trigger):
    if trigger is not None and prefix + sum(m["tokens"] for m in view) <= trigger:
        return {"type": "send", "messages": [[0, len(view)]], "action": None}
    oldest = max(turn - keep, 0)
    out, trimmed = [], 0
    for i, m in enumerate(view):
        calls = m["role"] == "assistant" and m.get("tool_calls")
        if m["turn"] >= oldest or not (m["role"] == "tool" or calls):
            out.append(i)
        elif m["role"] == "tool":
            trimmed += 1
            if placeholder:
                out.append({"like": i, "text": PLACEHOLDER, "cleared": True})
        elif placeholder:
            out.append(i)
        elif m["text"]:
            out.append({"like": i, "drop_tool_calls": True})
    action = f"trimmed {trimmed} tool results" if trimmed else None
    return {"type": "send", "messages": pack(out), "action": action}


def main():
    args = dict(a.split("=", 1) for a in sys.argv[1:])
    keep = int(args.get("keep", 0))
    placeholder = args.get("mode", "drop") == "placeholder"
    trigger = int(args["trigger_tokens"]) if "trigger_tokens" in args else None
    view, store = [], {}
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "open":  # a new session: nothing of the last one is kept
            view, store = [], {}
        ctx = req.get("context")
        if ctx is not None:
            del view[ctx["keep"]:]
            for m in ctx["append"]:
                m = store[m["ref"]] if "ref" in m else m
                store[m["id"]] = m
                view.append(m)
        if kind == "hello":
            ans = {"type": "hello", "protocol": min(req.get("protocol", 1), 2)}
        elif kind == "open":
            ans = {"type": "open", "tools": []}
        elif kind == "plan":
            ans = plan(view, req["turn"], req["prefix_tokens"], keep, placeholder, trigger)
        elif kind == "card":
            ans = {"type": "card", "card": None}
        elif kind == "end_turn":
            ans = {"type": "splices", "splices": []}
        else:  # compacted, spliced, close: nothing to do
            ans = {"type": "ok"}
        ans["re"] = req["id"]
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
