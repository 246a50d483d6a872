#!/usr/bin/env python3
"""`foldbench proxy` and LiteLLM's proxy side by side, on the same load, in one run.

The load is the one of harness/runner/benches/proxy_overhead.rs: conversations in the Anthropic
Messages API as Claude Code sends them (a system prompt, eleven tools, the whole history every
time, a tool result of about 22.5 KB per step, a new prompt every fifth step, the cache
breakpoint on the last block), each growing to about 100,000 o200k tokens (0.39 MB) at its 20th
request. A loopback upstream (a process of its own) answers every request with one tool call,
at once (back to back) or after a model's time (paced).

Each mode runs the load straight to the upstream, then through each proxy: `foldbench proxy
--policy none`, `--policy fold` (a new process per pass) and LiteLLM's proxy (one process for the
run, started before the first pass: it takes tens of seconds to start; its two routes go to the
two upstreams). Each proxy gets a short warm-up load of its own conversations before its timed
pass. Printed per pass: the median and p99 of a request's time as the client sees it, what the
proxy adds to them (its quantile less the direct pass's), and the proxy's CPU time per request
(user + system of its process and every process under it, from /proc, over the timed pass); then
the ratios foldbench / LiteLLM.

Standard library only. Usage (run.sh installs LiteLLM and calls this):

    python3 load.py --foldbench target/release/foldbench --litellm VENV/bin/litellm [--quick]
"""
import argparse
import asyncio
import http.client
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

MODEL = "claude-sonnet-4-5-20250929"
# The client's key: LiteLLM's master key (it refuses to start without one), passed on unread by
# foldbench and by the upstream.
KEY = "sk-" + secrets.token_hex(32)
PACED_MODEL = "claude-sonnet-4-5-paced"

ANSWER = json.dumps({
    "id": "msg_bench", "type": "message", "role": "assistant", "model": MODEL,
    "content": [
        {"type": "text", "text": "Reading."},
        {"type": "tool_use", "id": "toolu_next", "name": "Read",
         "input": {"file_path": "/repo/src/next.rs"}},
    ],
    "stop_reason": "tool_use", "stop_sequence": None,
    "usage": {"input_tokens": 100000, "output_tokens": 20},
}).encode()

WORDS = ["value", "total", "config", "request", "buffer", "result", "handler", "context",
         "message", "policy", "record", "stream", "session", "window", "archive", "token"]

TOOLS = ["Agent", "Bash", "Edit", "ListAgents", "Read", "ReportFindings", "ScheduleWakeup",
         "Skill", "ToolSearch", "Workflow", "Write"]


# ------------------------------------------------------------------------------------------
# The load


def tool_output(conv, step, size):
    """About `size` bytes of code-like lines, different for every conversation and step."""
    out, n, i = [], 0, 0
    while n < size:
        w = [WORDS[(conv * 7 + step * 13 + i * 5 + k) % len(WORDS)] for k in range(6)]
        line = (f"{i:>5}\t    let {w[0]}_{conv} = self.{w[1]}.{w[2]}_for(&{w[3]}, {step})?; "
                f"// keeps the {w[4]} before the {w[5]} is read\n")
        out.append(line)
        n += len(line)
        i += 1
    return "".join(out)


def messages(conv, steps, size):
    """The messages of a conversation after `steps` steps, each a dict."""
    m = [{"role": "user", "content": [
        {"type": "text", "text": "<system-reminder>\nAs you answer the user's questions, you can "
                                 "use the following context.\n</system-reminder>"},
        {"type": "text", "text": f"Conversation {conv}: read the sources and fix the failing test."},
    ]}]
    for k in range(steps):
        if k % 5 == 4:
            m.append({"role": "assistant", "content": [
                {"type": "text", "text": f"Part {k} is done: the function now wraps."}]})
            m.append({"role": "user", "content": [
                {"type": "text", "text": f"Good. Now part {k + 1}: the next file."}]})
        else:
            tid = f"toolu_{conv}_{k}"
            m.append({"role": "assistant", "content": [
                {"type": "text", "text": f"I will read file {k}."},
                {"type": "tool_use", "id": tid, "name": "Read",
                 "input": {"file_path": f"/repo/src/f{k}.rs"}}]})
            m.append({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": tid,
                 "content": tool_output(conv, k, size)}]})
    return m


def bodies(tag, convs, requests, size, model):
    """Every request body of every conversation, made before the load (not timed)."""
    tools = [{
        "name": n,
        "description": f"{n}: " + "Does what its name says, with care. " * 20,
        "input_schema": {"type": "object", "properties": {
            "file_path": {"type": "string", "description": "An absolute path."},
            "command": {"type": "string", "description": "A shell command."}}},
    } for n in TOOLS]
    out = []
    for c in range(convs):
        name = f"{tag}{c}"
        system = (f"You are Claude Code.\nPrimary working directory: /tmp/pb-{name}\n"
                  + "Follow the user's instructions. " * 200)
        head = json.dumps({
            "model": model, "max_tokens": 8192, "stream": False,
            "system": [{"type": "text", "text": system}], "tools": tools,
            "metadata": {"user_id": f"user_bench_account__session_{name}"},
        })[:-1]
        every = messages(c, requests - 1, size)
        items = [json.dumps(x) for x in every]
        conv = []
        for s in range(requests):
            # Request s holds the first prompt and two messages per earlier step; its last
            # block carries the cache breakpoint.
            n = 1 + 2 * s
            last = json.loads(items[n - 1])
            last["content"][-1]["cache_control"] = {"type": "ephemeral"}
            body = head + ', "messages": [' + ", ".join(items[:n - 1] + [json.dumps(last)]) + "]}"
            conv.append(body.encode())
        out.append(conv)
    return out


def run_load(url, all_bodies):
    """Every conversation at once, each request after the previous one's answer; returns
    (step, seconds) of every request."""
    host, port = url.split("//", 1)[1].split("/", 1)[0].split(":")
    times, errors = [], []
    lock = threading.Lock()

    def conversation(conv):
        conn = http.client.HTTPConnection(host, int(port), timeout=600)
        mine = []
        try:
            for step, body in enumerate(conv):
                t = time.perf_counter()
                conn.request("POST", "/v1/messages", body, {
                    "content-type": "application/json", "x-api-key": KEY,
                    "anthropic-version": "2023-06-01"})
                r = conn.getresponse()
                data = r.read()
                mine.append((step, time.perf_counter() - t))
                if r.status != 200 or b"toolu_next" not in data:
                    # Not the upstream's answer passed on: the pass measures nothing.
                    raise RuntimeError(f"{url}: status {r.status}: {data[:300]!r}")
        except Exception as e:  # noqa: BLE001 - reported whole below
            with lock:
                errors.append(e)
        finally:
            conn.close()
        with lock:
            times.extend(mine)

    threads = [threading.Thread(target=conversation, args=(c,)) for c in all_bodies]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        raise SystemExit(f"the load through {url} failed: {errors[0]}")
    return times


def quantile(values, q):
    """The nearest-rank quantile (the value at rank ceil(q * n))."""
    v = sorted(values)
    if not v:
        return 0.0
    i = min(max(int(-(-q * len(v) // 1)), 1), len(v)) - 1
    return v[i]


# ------------------------------------------------------------------------------------------
# The upstream: a process of its own


async def serve_one(reader, writer, delay):
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            lines = head.decode("latin-1").split("\r\n")
            method = lines[0].split(" ", 1)[0]
            headers = {}
            for line in lines[1:]:
                if ":" in line:
                    k, v = line.split(":", 1)
                    headers[k.strip().lower()] = v.strip()
            if headers.get("transfer-encoding", "").lower() == "chunked":
                while True:
                    size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
                    await reader.readexactly(size + 2)
                    if size == 0:
                        break
            else:
                await reader.readexactly(int(headers.get("content-length", "0")))
            if method == "POST" and delay:
                await asyncio.sleep(delay)
            body = ANSWER if method == "POST" else b"{}"
            writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n"
                         b"content-length: " + str(len(body)).encode() + b"\r\n\r\n" + body)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError, asyncio.LimitOverrunError):
        pass
    finally:
        writer.close()


async def upstream_main(delays):
    servers = []
    for d in delays:
        s = await asyncio.start_server(lambda r, w, d=d: serve_one(r, w, d), "127.0.0.1", 0,
                                       limit=1 << 20)
        servers.append(s)
    print(" ".join(str(s.sockets[0].getsockname()[1]) for s in servers), flush=True)
    await asyncio.gather(*(s.serve_forever() for s in servers))


# ------------------------------------------------------------------------------------------
# Processes and their CPU time


def tree_cpu(pid):
    """User + system seconds of `pid` and every live process under it, plus what its waited-for
    children used."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            with open(f"/proc/{p}/stat") as f:
                rest = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue
        stats[int(p)] = (int(rest[1]), [int(x) for x in rest[11:15]])
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        if p not in stats:
            continue
        u, s, cu, cs = stats[p][1]
        total += u + s + (cu + cs if p == pid else 0)
        todo.extend(c for c, (pp, _) in stats.items() if pp == p)
    return total / tick


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def stop(proc):
    if proc.poll() is None:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()


class Foldbench:
    """`foldbench proxy --policy POLICY` in a process of its own."""

    def __init__(self, binary, policy, upstream, tmp, label=""):
        self.name = f"foldbench proxy --policy {policy}{label}"
        out = tempfile.mkdtemp(dir=tmp)
        self.proc = subprocess.Popen(
            [binary, "proxy", "--policy", policy, "--listen", "127.0.0.1:0",
             "--upstream", upstream, "--out", os.path.join(out, "run"), "--workdir", out],
            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, start_new_session=True)
        self.url = self.proc.stdout.readline().decode().strip()
        if not self.url.startswith("http"):
            raise SystemExit(f"{binary} proxy did not print its URL (build it: cargo build "
                             f"--release -p foldbench)")

    def stop(self):
        stop(self.proc)


class Litellm:
    """LiteLLM's proxy, a route per upstream: MODEL to the first, PACED_MODEL to the second."""

    def __init__(self, litellm, ports, tmp):
        cfg = os.path.join(tmp, "litellm.yaml")
        with open(cfg, "w") as f:
            f.write("model_list:\n")
            for name, port in zip([MODEL, PACED_MODEL], ports):
                f.write(f"  - model_name: {name}\n    litellm_params:\n"
                        f"      model: anthropic/{MODEL}\n"
                        f"      api_base: http://127.0.0.1:{port}\n      api_key: sk-bench\n")
            f.write(f"general_settings:\n  master_key: {KEY}\n")
            f.write("litellm_settings:\n  telemetry: false\n")
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        env = dict(os.environ, LITELLM_LOCAL_MODEL_COST_MAP="True", LITELLM_LOG="ERROR",
                   NO_PROXY="*", no_proxy="*")
        self.log = os.path.join(tmp, "litellm.log")
        self.proc = subprocess.Popen(
            [litellm, "--config", cfg, "--host", "127.0.0.1", "--port", str(port)],
            stdout=open(self.log, "w"), stderr=subprocess.STDOUT, env=env, cwd=tmp,
            start_new_session=True)
        t = time.monotonic()
        while True:
            try:
                with urllib.request.urlopen(self.url + "/health/liveliness", timeout=2) as r:
                    if r.status == 200:
                        break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() - t > 300:
                with open(self.log) as f:
                    tail = f.read()[-2000:]
                stop(self.proc)
                raise SystemExit(f"LiteLLM did not start: {tail}")
            time.sleep(0.25)
        self.started = time.monotonic() - t
        self.name = "LiteLLM proxy"

    def stop(self):
        stop(self.proc)


# ------------------------------------------------------------------------------------------
# The run


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--foldbench", required=True, help="the foldbench binary (release)")
    ap.add_argument("--litellm", required=True, help="LiteLLM's `litellm` command")
    ap.add_argument("--before", help="another foldbench binary (an older build: main's), run "
                    "beside --foldbench in every mode, its passes named `(before)`: before and "
                    "after in the same run")
    ap.add_argument("--quick", action="store_true",
                    help="10 conversations × 10 requests, model time 250 ms")
    ap.add_argument("--convs", type=int)
    ap.add_argument("--requests", type=int)
    ap.add_argument("--result-bytes", type=int, default=22_500)
    ap.add_argument("--model-ms", type=int, help="the paced upstream's time (default 500)")
    ap.add_argument("--policies", default="none,fold")
    ap.add_argument("--modes", default="back-to-back,paced,alone",
                    help="back-to-back, paced (every conversation at once) and alone (the first "
                         "conversation by itself, back to back: a request's own cost, no queue)")
    a = ap.parse_args()
    convs = a.convs or (10 if a.quick else 50)
    requests = a.requests or (10 if a.quick else 20)
    model_ms = a.model_ms if a.model_ms is not None else (250 if a.quick else 500)
    policies = [p for p in a.policies.split(",") if p]
    modes = [m for m in a.modes.split(",") if m]
    tmp = tempfile.mkdtemp(prefix="foldbench-vs-litellm-")
    here = os.path.abspath(__file__)
    up = subprocess.Popen([sys.executable, here, "--upstream", "0", str(model_ms / 1000)],
                          stdout=subprocess.PIPE, start_new_session=True)
    procs = [up]
    try:
        ports = [int(p) for p in up.stdout.readline().split()]
        upstream = {"back-to-back": ports[0], "paced": ports[1], "alone": ports[0]}
        version = subprocess.run(
            [os.path.join(os.path.dirname(a.litellm), "python"), "-c",
             "import importlib.metadata as m; print(m.version('litellm'))"],
            capture_output=True, text=True).stdout.strip() or "?"
        t = time.monotonic()
        print(f"load: {open('/proc/loadavg').read().split()[:3]}; making the bodies…", flush=True)
        model_of = {"back-to-back": MODEL, "paced": PACED_MODEL, "alone": MODEL}
        made = {}
        for model in {model_of[m] for m in modes}:
            made[model] = (bodies("c", convs, requests, a.result_bytes, model),
                           bodies("w", convs, 2, 2_000, model))
        take = {"alone": 1}
        loads = {m: made[model_of[m]][0][:take.get(m, convs)] for m in modes}
        warms = {m: made[model_of[m]][1][:take.get(m, convs)] for m in modes}
        last = max(len(c[-1]) for c in made[MODEL if MODEL in made else PACED_MODEL][0])
        print(f"{convs} conversations × {requests} requests, the last body {last} bytes; "
              f"paced: the upstream answers after {model_ms} ms "
              f"({time.monotonic() - t:.1f} s to make the bodies)", flush=True)
        lite = Litellm(a.litellm, [ports[0], ports[1]], tmp)
        procs.append(lite.proc)
        print(f"LiteLLM {version} started in {lite.started:.1f} s", flush=True)
        results = {}
        for mode in modes:
            up_url = f"http://127.0.0.1:{upstream[mode]}"
            run_load(up_url, warms[mode])
            direct = [s for _, s in run_load(up_url, loads[mode])]
            rows = [("direct", direct, None)]
            print(f"\n{mode}: direct median {quantile(direct, .5) * 1e3:.1f} ms, "
                  f"p99 {quantile(direct, .99) * 1e3:.1f} ms", flush=True)
            builds = ([(a.before, " (before)")] if a.before else []) + [(a.foldbench, "")]
            passes = [(p, b) for p in policies for b in builds] + [(None, None)]
            for policy, build in passes:
                if policy is None:
                    proxy = lite
                else:
                    proxy = Foldbench(build[0], policy, up_url, tmp, build[1])
                try:
                    run_load(proxy.url, warms[mode])
                    cpu0 = tree_cpu(proxy.proc.pid)
                    times = [s for _, s in run_load(proxy.url, loads[mode])]
                    cpu = (tree_cpu(proxy.proc.pid) - cpu0) / len(times)
                finally:
                    if proxy is not lite:
                        proxy.stop()
                rows.append((proxy.name, times, cpu))
                print(f"  {proxy.name}: median {quantile(times, .5) * 1e3:.1f} ms, p99 "
                      f"{quantile(times, .99) * 1e3:.1f} ms, CPU {cpu * 1e3:.2f} ms/request",
                      flush=True)
            results[mode] = rows
        report(results, version)
        print(f"\nload: {open('/proc/loadavg').read().split()[:3]}; the run took "
              f"{time.monotonic() - t:.0f} s", flush=True)
    finally:
        for p in procs:
            stop(p)
        shutil.rmtree(tmp, ignore_errors=True)


def report(results, version):
    print("\n| load | pass | median | p99 | added median | added p99 | CPU per request |")
    print("|---|---|---|---|---|---|---|")
    figures = {}
    for mode, rows in results.items():
        direct = rows[0][1]
        d50, d99 = quantile(direct, .5), quantile(direct, .99)
        for name, times, cpu in rows:
            m50, m99 = quantile(times, .5), quantile(times, .99)
            if cpu is None:
                print(f"| {mode} | {name} | {m50 * 1e3:.1f} ms | {m99 * 1e3:.1f} ms | | | |")
                continue
            figures[(mode, name)] = (m50 - d50, m99 - d99, cpu)
            print(f"| {mode} | {name} | {m50 * 1e3:.1f} ms | {m99 * 1e3:.1f} ms | "
                  f"{(m50 - d50) * 1e3:+.1f} ms | {(m99 - d99) * 1e3:+.1f} ms | "
                  f"{cpu * 1e3:.2f} ms |")
    print(f"\nfoldbench / LiteLLM {version} (below 1: foldbench adds less):")
    for mode, rows in results.items():
        lite = figures[(mode, "LiteLLM proxy")]
        for name, _, cpu in rows:
            if cpu is None or name == "LiteLLM proxy":
                continue
            f = figures[(mode, name)]
            ratio = ["%.2f×" % (x / y) if y > 0 else "n/a" for x, y in zip(f, lite)]
            print(f"  {mode}, {name}: added median {ratio[0]}, added p99 {ratio[1]}, "
                  f"CPU per request {ratio[2]}")
    befores = [(m, n) for (m, n) in figures if n.endswith(" (before)")]
    if befores:
        print("\nafter / before (below 1: the new build adds less):")
    for mode, name in befores:
        b, f = figures[(mode, name)], figures.get((mode, name[:-len(" (before)")]))
        if f is None:
            continue
        ratio = ["%.2f×" % (x / y) if y > 0 else "n/a" for x, y in zip(f, b)]
        print(f"  {mode}, {name[:-len(' (before)')]}: added median {ratio[0]}, "
              f"added p99 {ratio[1]}, CPU per request {ratio[2]}")


if __name__ == "__main__":
    if len(sys.argv) > 1 and sys.argv[1] == "--upstream":
        # The upstream process: one port per delay in seconds, printed on one line.
        try:
            asyncio.run(upstream_main([float(d) for d in sys.argv[2:]]))
        except KeyboardInterrupt:
            pass
    else:
        main()
