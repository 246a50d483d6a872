# The smallest agent `foldbench run --agent exec:CMD` drives (docs/agents.md): one process per
# turn, the Anthropic Messages API at $FOLDBENCH_BASE_URL (the cell's proxy), the tools Bash,
# Read, Edit and Write run here in the workspace, the conversation kept in $FOLDBENCH_STATE
# between turns, the closing message printed. Standard library only.
import json, os, subprocess, urllib.request
state = os.path.join(os.environ["FOLDBENCH_STATE"], "messages.json")
msgs = json.load(open(state)) if os.path.exists(state) else []
msgs.append({"role": "user", "content": os.environ["FOLDBENCH_PROMPT"]})
schema = lambda *req: {"type": "object", "properties": {k: {"type": "string"} for k in req}, "required": list(req)}
tools = [{"name": "Bash", "description": "run a command", "input_schema": schema("command")},
         {"name": "Read", "description": "read a file", "input_schema": schema("file_path")},
         {"name": "Edit", "description": "replace text", "input_schema": schema("file_path", "old_string", "new_string")},
         {"name": "Write", "description": "write a file", "input_schema": schema("file_path", "content")}]
def run(name, a):
    try:
        if name == "Bash":
            p = subprocess.run(a["command"], shell=True, capture_output=True, text=True, timeout=60)
            return p.stdout + p.stderr
        if name == "Read":
            return "\n".join(f"{i+1:>6}\t{l}" for i, l in enumerate(open(a["file_path"]).read().split("\n")))
        if name == "Edit":
            t = open(a["file_path"]).read()
            if a["old_string"] not in t: return "error: old_string not found"
            open(a["file_path"], "w").write(t.replace(a["old_string"], a["new_string"], 1)); return "edited"
        open(a["file_path"], "w").write(a["content"]); return "written"
    except Exception as e:
        return f"error: {e}"
for _ in range(40):
    body = json.dumps({"model": "m", "max_tokens": 4096, "messages": msgs, "tools": tools,
                       "system": "Primary working directory: " + os.getcwd()}).encode()
    req = urllib.request.Request(os.environ["FOLDBENCH_BASE_URL"] + "/v1/messages", body,
                                 {"content-type": "application/json", "x-api-key": os.environ["FOLDBENCH_API_KEY"]})
    out = json.load(urllib.request.urlopen(req))
    msgs.append({"role": "assistant", "content": out["content"]})
    calls = [c for c in out["content"] if c["type"] == "tool_use"]
    if not calls:
        break
    msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": c["id"], "content": run(c["name"], c["input"])} for c in calls]})
json.dump(msgs, open(state, "w"))
print("".join(c.get("text", "") for c in out["content"] if c["type"] == "text"))
