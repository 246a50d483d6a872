#!/usr/bin/env python3
"""A policy that folds, as a process: when a turn ends, the turn before it is folded (archived
and replaced by a short result of its own words), so the context keeps the turn in progress and
the one before it whole; standard library only. The protocol is docs/policy-protocol.md.

    foldbench run --policy 'exec:python3 examples/policies/fold_last_turn.py'
    foldbench replay tests/fixtures/real-sessions --policy 'exec:python3 examples/policies/fold_last_turn.py'

It sends every message of its view (folds change the view itself, so `plan` has nothing to
drop), and learns from `spliced` whether each fold was made. It speaks protocol 2: one process
serves session after session, its state made anew at each `open`.
"""
import json
import sys

LIVE = ("plain", "cleared")


def result(turn, messages):
    """The fold's text: the user's request and the closing answer of the turn."""
    user = next((m["text"] for m in messages if m["role"] == "user" and m["kind"] == "plain"), "")
    closing = [m["text"] for m in messages if m["role"] == "assistant" and not m.get("tool_calls")]
    calls = sum(len(m.get("tool_calls", [])) for m in messages)
    answer = closing[-1] if closing else "(no closing message)"
    return f"[turn {turn} folded: {calls} tool calls]\nUser: {user[:500]}\nAnswer: {answer[:1000]}"


def main():
    view, store, folded = [], {}, []
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "open":  # a new session: nothing of the last one is kept
            view, store, folded = [], {}, []
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
            ans = {"type": "open"}
        elif kind == "plan":
            ans = {"type": "send", "messages": [[0, len(view)]]}
        elif kind == "card":
            ans = {"type": "card", "card": None}
        elif kind == "end_turn":
            prev = req["turn"] - 1
            old = [m for m in view if m["turn"] == prev and m["kind"] in LIVE]
            splices = []
            if prev >= 1 and old and prev not in folded:
                splices.append({"from": prev, "to": prev, "text": result(prev, old)})
            ans = {"type": "splices", "splices": splices}
        elif kind == "spliced":
            if req["applied"]:
                folded.append(req["from"])
            ans = {"type": "ok"}
        else:
            ans = {"type": "ok"}
        ans["re"] = req["id"]
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
