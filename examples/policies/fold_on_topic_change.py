#!/usr/bin/env python3
"""Folds each topic once the user has moved on from it: one archive per topic; standard library
only. The protocol is docs/policy-protocol.md.

    foldbench run --policy 'exec:python3 examples/policies/fold_on_topic_change.py'
    foldbench replay tests/fixtures/real-sessions --policy 'exec:python3 examples/policies/fold_on_topic_change.py'

Where a topic ends is the essay's lexical rule: a user message longer than 60 characters starts
a new topic; a shorter one ("ok, turn it off") continues the one before.

The boundary is known at `end_turn` of the topic's last turn T: its `next_user` is the new
topic's first message. But T is still the turn in progress there (its splices are checked
against it, and a range that holds it is refused), so the fold of the whole topic, turns
FROM..T, is proposed at the next `end_turn`, T + 1's. During turn T + 1 the old topic is still
in the context; that is the one-turn lag, the same one the built-in `fold` has (its card comes
at T + 1, and its fold is made at the end of T + 1). A policy that cannot wait may fold
FROM..T-1 at once and T alone a turn later: two archives for one topic.

It speaks protocol 2: one process serves session after session, its state made anew at each
`open`. It saves its state (`saves_state`): where the current topic began and the topics still
to fold are not in the context, so when `foldbench proxy` takes the conversation out of memory
it asks for them (`save`) and gives them back (`restore`) in the session that brings the
conversation back; they are turn numbers, which outlive the session.
"""
import json
import sys

NEW_TOPIC = 60  # characters: a longer user message starts a topic


def main():
    view, store = [], {}
    start = 1  # the first turn of the current topic
    pending = []  # topics that ended, folded at the next end_turn
    for line in sys.stdin:
        req = json.loads(line)
        kind = req["type"]
        if kind == "open":  # a new session: nothing of the last one is kept
            view, store, start, pending = [], {}, 1, []
        ctx = req.get("context")
        if ctx is not None:
            del view[ctx["keep"]:]
            for m in ctx["append"]:
                m = store[m["ref"]] if "ref" in m else m
                store[m["id"]] = m
                view.append(m)
        if kind == "hello":
            ans = {"type": "hello", "protocol": min(req.get("protocol", 1), 2)}
            if ans["protocol"] == 1:  # the handshake opens the one session
                ans["saves_state"] = True
        elif kind == "open":
            ans = {"type": "open", "saves_state": True}
        elif kind == "save":
            ans = {"type": "state", "state": {"start": start, "pending": pending}}
        elif kind == "restore":
            start = req["state"]["start"]
            pending = [tuple(p) for p in req["state"]["pending"]]
            ans = {"type": "ok"}
        elif kind == "plan":
            ans = {"type": "send", "messages": [[0, len(view)]]}
        elif kind == "card":
            ans = {"type": "card", "card": None}
        elif kind == "end_turn":
            turn, nxt = req["turn"], req["next_user"]
            # The topics that ended before this turn: this turn is past them now.
            splices = [{"from": a, "to": b} for a, b in pending if b < turn]
            pending = [(a, b) for a, b in pending if b >= turn]
            if nxt is not None and len(nxt) > NEW_TOPIC:
                # This turn ends its topic; it is the turn in progress, so fold it next time.
                pending.append((start, turn))
                start = turn + 1
            ans = {"type": "splices", "splices": splices}
        else:
            ans = {"type": "ok"}
        ans["re"] = req["id"]
        sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
