#!/usr/bin/env python3
"""`foldbench proxy` end to end, as an agent and its model see it (tests/proxy.rs runs it).

    python3 tests/proxy-e2e.py FOLDBENCH OUT POLICY [fold|evict]

Serves an Anthropic-compatible upstream on loopback (standard library only), starts
`FOLDBENCH proxy --policy POLICY --upstream … --listen 127.0.0.1:0 --out OUT` in front of it,
sends two requests of one conversation as Claude Code would (the second resends the whole
history), stops the proxy with SIGINT and prints, as one JSON line, what the upstream received.
With `fold`, the upstream answers the first card it sees with `fold_unit(1, 1)` (the proxy
answers it and asks again), and the agent also sends two count-tokens requests (side requests).
With `evict`, the proxy holds one conversation in memory (`--max-conversations 1`) and the agent
sends the two requests of two conversations in turn (a, b, a, b): each request after the first
two brings its conversation back from its state.
"""

import json
import signal
import subprocess
import sys
import threading
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

RECEIVED = []
KEY = "sk-test-KEY-never-written"


FOLD = {"answered": False}


class Upstream(BaseHTTPRequestHandler):
    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("content-length", "0")))
        RECEIVED.append({"path": self.path, "body": json.loads(body),
                         "key": self.headers.get("x-api-key")})
        content = [{"type": "text", "text": "ok"}]
        stop = "end_turn"
        if self.path.startswith("/v1/messages/count_tokens"):
            answer = {"input_tokens": 100}
        else:
            if "<fold-card>" in body.decode() and not FOLD["answered"]:
                FOLD["answered"] = True
                content = [{"type": "tool_use", "id": "toolu_f1", "name": "fold_unit",
                            "input": {"from": 1, "to": 1}}]
                stop = "tool_use"
            answer = {
                "id": "msg_1", "type": "message", "role": "assistant", "model": "claude-x",
                "content": content, "stop_reason": stop, "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 5,
                          "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0},
            }
        data = json.dumps(answer).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args):
        pass


def post(url, body, path="/v1/messages"):
    req = urllib.request.Request(
        url + path, data=json.dumps(body).encode(), method="POST",
        headers={"content-type": "application/json", "x-api-key": KEY,
                 "anthropic-version": "2023-06-01"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())


def body(big, name, more):
    """A request of conversation `name` ("read NAME", a read of NAME.py and its long result, an
    answer, "now use it"); with `more`, the next turn's ("ok", "third") too."""
    messages = [
        {"role": "user", "content": [{"type": "text", "text": f"read {name}"}]},
        {"role": "assistant", "content": [
            {"type": "tool_use", "id": "c1", "name": "Read",
             "input": {"file_path": f"{name}.py"}}]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "c1", "content": big}]},
        {"role": "assistant", "content": [{"type": "text", "text": "seen"}]},
        {"role": "user", "content": [{"type": "text", "text": "now use it"}]},
    ]
    if more:
        messages += [
            {"role": "assistant", "content": [{"type": "text", "text": "ok"}]},
            {"role": "user", "content": [{"type": "text", "text": "third"}]},
        ]
    return {"model": "claude-x", "max_tokens": 100, "system": "You are an agent.",
            "tools": [{"name": n, "description": "", "input_schema": {"type": "object"}}
                      for n in ("Read", "Bash")],
            "messages": messages}


def one_conversation(url, big, fold):
    """Two requests of one conversation (the second resends the whole history); the answers."""
    answers = []
    for more in (False, True):
        answers.append(post(url, body(big, "a", more)))
        if fold:
            post(url, body(big, "a", more), "/v1/messages/count_tokens")
    return answers


def evict_in_turn(url, big):
    """Two conversations, a and b, their two requests sent in turn (a, b, a, b); the answers."""
    return [post(url, body(big, name, more)) for more in (False, True) for name in ("a", "b")]


def main():
    binary, out, policy = sys.argv[1:4]
    fold = sys.argv[4:5] == ["fold"]
    evict = sys.argv[4:5] == ["evict"]
    server = ThreadingHTTPServer(("127.0.0.1", 0), Upstream)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    upstream = f"http://127.0.0.1:{server.server_address[1]}"
    proxy = subprocess.Popen(
        [binary, "proxy", "--policy", policy, "--upstream", upstream,
         "--listen", "127.0.0.1:0", "--out", out]
        + (["--max-conversations", "1"] if evict else []),
        stdout=subprocess.PIPE, text=True)
    try:
        url = proxy.stdout.readline().strip()
        assert url.startswith("http://127.0.0.1:"), f"the proxy printed {url!r}"
        big = "A = 1\n" + "the long content of a.py\n" * 50
        answers = evict_in_turn(url, big) if evict else one_conversation(url, big, fold)
    finally:
        proxy.send_signal(signal.SIGINT)
        code = proxy.wait(timeout=30)
        server.shutdown()
    print(json.dumps({"received": RECEIVED, "answers": answers, "exit": code}))


if __name__ == "__main__":
    main()
