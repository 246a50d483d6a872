#!/usr/bin/env python3
"""A scripted Anthropic Messages API on loopback, for Claude Code behind `foldbench proxy`.

    python3 tests/claude-upstream.py WORKDIR LOG

Written from Anthropic's API documentation (the Messages API, its streaming events and its
tool use: https://docs.anthropic.com/en/api/messages, .../build-with-claude/streaming,
.../agents-and-tools/tool-use), not from foldbench's own sim. Standard library only. Prints
its URL on the first line of standard output, then serves until it is killed; every request
is one JSON line in LOG: its path, whether it was the main conversation, what the real API
would refuse in it (a `tool_use` without its `tool_result` right after, a `tool_result`
without its `tool_use`), and what it answered.

The model is deterministic. The user's prompts say `TURN n`. In each turn it answers first
with parallel tool calls (`Bash` and `Read`), then, once their results are in, closes the turn.
A card (`<fold-card>`) it has not answered yet in the turn is answered with `fold_unit` over
the turns the card offers: in even turns in the same answer as its tool calls, in odd turns
alone first. A model that does not see its own answered `fold_unit` call would answer the card
again and again.
"""

import json
import os
import re
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

WORKDIR, LOG = sys.argv[1], sys.argv[2]
LOCK = threading.Lock()
COUNTER = {"calls": 0, "requests": 0}


def log(entry):
    with LOCK:
        with open(LOG, "a") as f:
            f.write(json.dumps(entry) + "\n")


def blocks(message):
    c = message.get("content")
    if isinstance(c, str):
        return [{"type": "text", "text": c}]
    return c if isinstance(c, list) else []


def problem(body):
    """What the Messages API refuses: every tool_use answered by a tool_result in the very next
    message, every tool_result answering a tool_use of the message right before it, results
    before any other block of their message."""
    open_ids = []
    for i, m in enumerate(body.get("messages", [])):
        role = m.get("role")
        if role == "system":
            continue
        bs = blocks(m)
        if role == "assistant":
            if open_ids:
                return f"messages.{i}: tool_use ids without tool_result right after: {open_ids}"
            if not bs:
                return f"messages.{i}: all messages must have non-empty content"
            open_ids = [b["id"] for b in bs if b.get("type") == "tool_use"]
            continue
        results = [b.get("tool_use_id") for b in bs if b.get("type") == "tool_result"]
        for r in results:
            if r not in open_ids:
                return f"messages.{i}: tool_result {r} without its tool_use in the message before"
        missing = [o for o in open_ids if o not in results]
        if missing:
            return f"messages.{i}: tool_use ids without tool_result right after: {missing}"
        kinds = [b.get("type") for b in bs]
        if "tool_result" in kinds and any(
            k != "tool_result" for k in kinds[: max(i for i, k in enumerate(kinds) if k == "tool_result")]
        ):
            return f"messages.{i}: tool_result blocks must come first"
        open_ids = []
    return None


def texts(message):
    return [b.get("text", "") for b in blocks(message) if b.get("type") == "text"]


def turn_state(body):
    """The turn in progress (from the last `TURN n` prompt) and what happened in it: the blocks
    after the prompt (Claude Code may send the prompt in the message of the last turn's
    results, after them)."""
    flat = [b for m in body.get("messages", []) if m.get("role") != "system" for b in blocks(m)]
    start, turn = 0, 0
    for i, b in enumerate(flat):
        # The user's words are a block of their own (Claude Code's reminders, a card, a fold
        # result quoting them are other blocks).
        found = b.get("type") == "text" and re.match(r"TURN (\d+)", b.get("text", "").strip())
        if found:
            start, turn = i, int(found.group(1))
    card, folded = None, False
    calls, results = [], []
    for b in flat[start:]:
        if b.get("type") == "text" and "<fold-card>" in b.get("text", ""):
            card = b["text"][b["text"].find("<fold-card>"):]
            folded = False
        elif b.get("type") == "tool_use":
            calls.append(b.get("name"))
            if b.get("name") == "fold_unit":
                folded = True
        elif b.get("type") == "tool_result":
            results.append(b.get("tool_use_id"))
    offered = [int(x) for x in re.findall(r"^\s*turn (\d+) ·", card or "", re.M)]
    agent_results = len(results) - calls.count("fold_unit")
    return turn, offered if card and not folded else None, agent_results


def call(name, inp):
    with LOCK:
        COUNTER["calls"] += 1
        n = COUNTER["calls"]
    return {"type": "tool_use", "id": f"toolu_scripted_{n:04d}", "name": name, "input": inp}


def answer(body):
    """The content blocks of the model's answer."""
    turn, card, results = turn_state(body)
    tools = {t.get("name") for t in body.get("tools", [])}
    fold = None
    if card and "fold_unit" in tools:
        fold = call("fold_unit", {"from": min(card), "to": max(card)})
    if results == 0:
        work = [
            {"type": "text", "text": f"Turn {turn}: I look at the project."},
            call("Bash", {"command": f"ls && echo turn {turn} >> notes.txt",
                          "description": "List the files"}),
            call("Read", {"file_path": os.path.join(WORKDIR, "README.md")}),
        ]
        if fold and turn % 2 == 0:
            return work + [fold]
        if fold:
            return [{"type": "text", "text": "Folding finished work first."}, fold]
        return work
    if fold:
        return [fold]
    return [{"type": "text", "text": f"Turn {turn} done."}]


def message(content, model):
    stop = "tool_use" if any(b["type"] == "tool_use" for b in content) else "end_turn"
    with LOCK:
        COUNTER["requests"] += 1
        n = COUNTER["requests"]
    # Every answer has an id of its own, as the API's (Claude Code joins the blocks of one id).
    return {
        "id": f"msg_scripted_{n:04d}", "type": "message", "role": "assistant", "model": model,
        "content": content, "stop_reason": stop, "stop_sequence": None,
        "usage": {"input_tokens": 100, "output_tokens": 20,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0},
    }


def sse(name, data):
    return f"event: {name}\ndata: {json.dumps(data)}\n\n".encode()


def stream(content, model):
    """The documented event sequence: message_start, per block content_block_start / _delta /
    _stop with its index, message_delta with the stop reason, message_stop."""
    msg = message(content, model)
    head = dict(msg, content=[], stop_reason=None)
    head["usage"] = dict(msg["usage"], output_tokens=1)
    out = [sse("message_start", {"type": "message_start", "message": head})]
    for i, b in enumerate(content):
        if b["type"] == "text":
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": {"type": "text", "text": ""}}))
            out.append(sse("ping", {"type": "ping"}))
            out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                   "delta": {"type": "text_delta", "text": b["text"]}}))
        else:
            start = {"type": "tool_use", "id": b["id"], "name": b["name"], "input": {}}
            out.append(sse("content_block_start", {"type": "content_block_start", "index": i,
                                                   "content_block": start}))
            raw = json.dumps(b["input"])
            half = len(raw) // 2
            for piece in (raw[:half], raw[half:]):
                out.append(sse("content_block_delta", {"type": "content_block_delta", "index": i,
                                                       "delta": {"type": "input_json_delta",
                                                                 "partial_json": piece}}))
        out.append(sse("content_block_stop", {"type": "content_block_stop", "index": i}))
    out.append(sse("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": msg["stop_reason"], "stop_sequence": None},
                                     "usage": {"output_tokens": 20}}))
    out.append(sse("message_stop", {"type": "message_stop"}))
    return b"".join(out)


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def send(self, status, ctype, data):
        self.send_response(status)
        self.send_header("content-type", ctype)
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_POST(self):
        data = self.rfile.read(int(self.headers.get("content-length", "0")))
        path = self.path.split("?")[0]
        try:
            body = json.loads(data)
        except ValueError:
            body = {}
        if path.endswith("/count_tokens"):
            log({"path": path, "side": True})
            return self.send(200, "application/json", json.dumps({"input_tokens": 100}).encode())
        if path != "/v1/messages":
            log({"path": path, "side": True})
            return self.send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"no such path"}}')
        bad = problem(body)
        main = bool(body.get("tools"))
        model = body.get("model", "claude-scripted")
        entry = {"path": path, "side": not main, "stream": bool(body.get("stream")),
                 "messages": len(body.get("messages", [])), "problem": bad,
                 "tools": sorted(t.get("name", "") for t in body.get("tools", []))}
        if bad:
            entry["answer"] = "400"
            log(entry)
            err = {"type": "error", "error": {"type": "invalid_request_error", "message": bad}}
            return self.send(400, "application/json", json.dumps(err).encode())
        content = answer(body) if main else [{"type": "text", "text": "A title"}]
        entry["answer"] = [b.get("name") or b.get("text") for b in content]
        log(entry)
        if body.get("stream"):
            self.send(200, "text/event-stream", stream(content, model))
        else:
            self.send(200, "application/json", json.dumps(message(content, model)).encode())

    def do_GET(self):
        log({"path": self.path, "side": True})
        self.send(404, "application/json", b'{"type":"error","error":{"type":"not_found_error","message":"no such path"}}')

    def log_message(self, *args):
        pass


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(f"http://127.0.0.1:{server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
