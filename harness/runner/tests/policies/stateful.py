#!/usr/bin/env python3
"""A policy process that remembers what the context does not give back, for the tests of
`save` and `restore` (docs/policy-protocol.md, "Saving state"). It counts its `plan` requests
and, at every third, clears every tool result in the view but the last; a result it cleared
stays cleared (remembered by its fingerprint). So what it sends depends on what it remembers,
and a process that started again would send the results it had cleared.

    python3 stateful.py [--protocol=1] [--no-save] [--forget] [--by-id] [--bad-save]

--protocol=1   speaks protocol 1 (declares saves_state in its `hello` answer)
--no-save      does not declare saves_state: it starts again after an eviction. It must never
               be sent `save` or `restore`, and answers them out of protocol if it is.
--forget       declares saves_state but ignores the state `restore` gives it.
--by-id        keys what it cleared by protocol id, which does not outlive the session.
--bad-save     declares saves_state and answers `save` with `ok`, out of protocol.
"""
import json
import sys

ARGS = sys.argv[1:]
PROTOCOL = 1 if "--protocol=1" in ARGS else 2
SAVES = "--no-save" not in ARGS
EVERY = 3
CLEARED = "[cleared by stateful.py]"


def fresh():
    return {"plans": 0, "cleared": []}


def key(m):
    # A fingerprint outlives the session; without one (no saves_state), the session's id.
    if "--by-id" in ARGS:
        return m["id"]
    return m.get("fingerprint", m["id"])


def plan(view, state):
    state["plans"] += 1
    results = [i for i, m in enumerate(view) if m["role"] == "tool"]
    if state["plans"] % EVERY == 0:
        for i in results[:-1]:
            if key(view[i]) not in state["cleared"]:
                state["cleared"].append(key(view[i]))
    items, n = [], 0
    for i, m in enumerate(view):
        if m["role"] == "tool" and key(m) in state["cleared"]:
            items.append({"like": i, "text": CLEARED, "cleared": True})
            n += 1
        else:
            items.append(i)
    return {"type": "send", "messages": items, "action": f"plan {state['plans']}, {n} cleared"}


def main():
    view, store, state = [], {}, fresh()
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "open":  # a new session: nothing of the last one is kept
            view, store, state = [], {}, fresh()
        ctx = req.get("context")
        if ctx is not None:
            del view[ctx["keep"]:]
            for m in ctx["append"]:
                m = store[m["ref"]] if "ref" in m else m
                store[m["id"]] = m
                view.append(m)
        if kind == "hello":
            ans = {"type": "hello", "protocol": min(req["protocol"], PROTOCOL)}
            if PROTOCOL == 1:
                ans["saves_state"] = SAVES
        elif kind == "open":
            ans = {"type": "open", "saves_state": SAVES}
        elif kind == "plan":
            ans = plan(view, state)
        elif kind == "card":
            ans = {"type": "card", "card": None}
        elif kind == "end_turn":
            ans = {"type": "splices", "splices": []}
        elif kind == "save":
            if not SAVES:
                ans = {"type": "save was never declared"}
            elif "--bad-save" in ARGS:
                ans = {"type": "ok"}
            else:
                ans = {"type": "state", "state": state}
        elif kind == "restore":
            if not SAVES:
                ans = {"type": "restore was never declared"}
            else:
                if "--forget" not in ARGS:
                    state = req["state"]
                ans = {"type": "ok"}
        else:
            ans = {"type": "ok"}
        ans["re"] = req["id"]
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
