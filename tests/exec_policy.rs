//! `exec:COMMAND` (docs/policy-protocol.md): the Python `trim` gives the built-in `trim`'s
//! records over the task suite and in replay, every message exchanged is valid under
//! docs/policy-protocol.schema.json, a policy that folds folds, and each way a policy process
//! can go wrong ends its cell with status `error` and a reason quoting it, the run going on
//! and the process's children ended.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use serde_json::Value;

use crate::helpers::{binary, root};

const TRIM_PY: &str = "exec:python3 examples/policies/trim.py";

/// A JSON lines file, parsed.
pub(crate) fn json_lines(p: &Path) -> Vec<Value> {
    std::fs::read_to_string(p)
        .unwrap_or_else(|e| panic!("{}: {e}", p.display()))
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l}: {e}")))
        .collect()
}

pub(crate) fn text(out: &Output) -> String {
    format!(
        "{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

/// `foldbench ARGS` in `dir`, every exchanged line logged to `log`.
pub(crate) fn foldbench(dir: &Path, log: &Path, args: &[&str]) -> Output {
    Command::new(binary())
        .current_dir(dir)
        .args(args)
        .env("CI", "true")
        .env("FOLDBENCH_EXEC_LOG", log)
        .output()
        .expect("foldbench runs")
}

// ---------------------------------------------------------------------------------------------
// The schema, and a validator for the part of JSON Schema it uses

fn schema() -> Value {
    let p = root().join("docs/policy-protocol.schema.json");
    serde_json::from_str(&std::fs::read_to_string(p).unwrap()).unwrap()
}

fn type_matches(t: &str, v: &Value) -> bool {
    match t {
        "object" => v.is_object(),
        "array" => v.is_array(),
        "string" => v.is_string(),
        "integer" => v.is_i64() || v.is_u64(),
        "number" => v.is_number(),
        "boolean" => v.is_boolean(),
        "null" => v.is_null(),
        other => panic!("the validator does not know the type {other}"),
    }
}

/// Validates `v` against `s` (JSON Schema: `$ref` to `#/$defs/…`, `type`, `const`, `enum`,
/// `minimum`, `minItems`, `maxItems`, `properties`, `required`, `additionalProperties: false`,
/// `items`, `oneOf`); any other keyword is refused, so the schema cannot say more than is checked.
fn validate(root: &Value, s: &Value, v: &Value, at: &str) -> Result<(), String> {
    let Some(o) = s.as_object() else {
        return Err(format!("{at}: the schema {s} is not an object"));
    };
    for k in o.keys() {
        let known = [
            "$ref",
            "type",
            "const",
            "enum",
            "minimum",
            "minItems",
            "maxItems",
            "properties",
            "required",
            "additionalProperties",
            "items",
            "oneOf",
            "description",
            "title",
            "$schema",
            "$id",
            "$defs",
        ];
        assert!(
            known.contains(&k.as_str()),
            "the validator does not know `{k}`"
        );
    }
    if let Some(r) = o.get("$ref").and_then(Value::as_str) {
        let name = r.strip_prefix("#/$defs/").expect("a local $ref");
        return validate(root, &root["$defs"][name], v, at);
    }
    if let Some(t) = o.get("type") {
        let ok = match t {
            Value::String(t) => type_matches(t, v),
            Value::Array(ts) => ts.iter().any(|t| type_matches(t.as_str().unwrap(), v)),
            _ => false,
        };
        if !ok {
            return Err(format!("{at}: {v} is not of type {t}"));
        }
    }
    if let Some(c) = o.get("const") {
        if c != v {
            return Err(format!("{at}: {v} is not {c}"));
        }
    }
    if let Some(Value::Array(e)) = o.get("enum") {
        if !e.contains(v) {
            return Err(format!("{at}: {v} is not one of {e:?}"));
        }
    }
    if let (Some(m), Some(n)) = (o.get("minimum").and_then(Value::as_f64), v.as_f64()) {
        if n < m {
            return Err(format!("{at}: {n} is below {m}"));
        }
    }
    if let Value::Array(items) = v {
        let min = o.get("minItems").and_then(Value::as_u64).unwrap_or(0);
        let max = o
            .get("maxItems")
            .and_then(Value::as_u64)
            .unwrap_or(u64::MAX);
        if (items.len() as u64) < min || items.len() as u64 > max {
            return Err(format!("{at}: {} items, not {min} to {max}", items.len()));
        }
        if let Some(each) = o.get("items") {
            for (i, item) in items.iter().enumerate() {
                validate(root, each, item, &format!("{at}[{i}]"))?;
            }
        }
    }
    if let Value::Object(fields) = v {
        let props = o.get("properties").and_then(Value::as_object);
        for r in o
            .get("required")
            .and_then(Value::as_array)
            .into_iter()
            .flatten()
        {
            let r = r.as_str().unwrap();
            if !fields.contains_key(r) {
                return Err(format!("{at}: `{r}` is missing"));
            }
        }
        for (k, fv) in fields {
            match props.and_then(|p| p.get(k)) {
                Some(sub) => validate(root, sub, fv, &format!("{at}.{k}"))?,
                None if o.get("additionalProperties") == Some(&Value::Bool(false)) => {
                    return Err(format!("{at}: `{k}` is not a field of it"))
                }
                None => {}
            }
        }
    }
    if let Some(Value::Array(alts)) = o.get("oneOf") {
        let errors: Vec<String> = alts
            .iter()
            .filter_map(|a| validate(root, a, v, at).err())
            .collect();
        if alts.len() - errors.len() != 1 {
            return Err(format!(
                "{at}: {v} matches {} of the alternatives, not one: {errors:?}",
                alts.len() - errors.len()
            ));
        }
    }
    Ok(())
}

/// Validates every line of an exchange log (`> ` a request, `< ` an answer); how many lines of
/// each type it held.
fn validate_log(log: &Path) -> BTreeMap<String, usize> {
    let root = schema();
    let mut seen = BTreeMap::new();
    let body = std::fs::read_to_string(log).unwrap_or_default();
    for line in body.lines() {
        let (def, json) = match line.split_at(2) {
            ("> ", j) => ("request", j),
            ("< ", j) => ("answer", j),
            _ => panic!("a log line without its direction: {line}"),
        };
        let v: Value = serde_json::from_str(json).unwrap_or_else(|e| panic!("{json}: {e}"));
        if let Err(e) = validate(&root, &root["$defs"][def], &v, def) {
            panic!("{e}\nline: {line}");
        }
        let ty = v["type"].as_str().unwrap_or("?");
        *seen.entry(format!("{def}:{ty}")).or_insert(0) += 1;
    }
    seen
}

#[test]
fn the_schema_validator_refuses_what_the_protocol_does_not_allow() {
    let root = schema();
    let answer = &root["$defs"]["answer"];
    let request = &root["$defs"]["request"];
    let ok = |d: &Value, j: &str| validate(&root, d, &serde_json::from_str(j).unwrap(), "m");
    assert!(ok(
        answer,
        r#"{"type":"send","re":3,"messages":[[0,4],{"like":5,"cleared":true},6]}"#
    )
    .is_ok());
    assert!(ok(answer, r#"{"type":"teleport","re":3}"#).is_err());
    assert!(ok(answer, r#"{"type":"send","re":3,"messages":[[0]]}"#).is_err());
    assert!(
        ok(answer, r#"{"type":"send","messages":[]}"#).is_err(),
        "no re"
    );
    assert!(ok(
        request,
        r#"{"type":"plan","id":1,"turn":1,"prefix_tokens":3}"#
    )
    .is_err());
    assert!(ok(
        request,
        r#"{"type":"plan","id":1,"turn":1,"prefix_tokens":3,"context":{"keep":0,"append":[{"ref":2}]}}"#
    )
    .is_ok());
    assert!(ok(
        request,
        r#"{"type":"plan","id":1,"turn":1,"prefix_tokens":3,"context":{"keep":0,"append":[{"ref":2,"x":1}]}}"#
    )
    .is_err());
    assert!(ok(answer, r#"{"type":"state","re":4,"state":{"n":3}}"#).is_ok());
    assert!(
        ok(answer, r#"{"type":"state","re":4}"#).is_err(),
        "no state"
    );
    assert!(
        ok(request, r#"{"type":"restore","id":5}"#).is_err(),
        "no state"
    );
    assert!(ok(request, r#"{"type":"save","id":5,"turn":2}"#).is_err());
}

// ---------------------------------------------------------------------------------------------
// trim.py is trim

/// A record with the fields that name the arm, and the times, left out.
fn comparable(mut v: Value, drop: &[&str]) -> Value {
    if let Value::Object(o) = &mut v {
        for k in drop {
            o.remove(*k);
        }
    }
    v
}

/// The files of a run's cells, by cell folder with the arm's part replaced by `ARM`.
fn cell_files(run: &Path, arm_folder: &str) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for entry in std::fs::read_dir(run.join("cells")).unwrap() {
        let dir = entry.unwrap().path();
        let name = dir.file_name().unwrap().to_string_lossy().to_string();
        if !name.contains(&format!("_{arm_folder}_")) {
            continue;
        }
        let key = name.replacen(&format!("_{arm_folder}_"), "_ARM_", 1);
        for f in ["transcript.jsonl", "diff.patch"] {
            out.insert(
                format!("{key}/{f}"),
                std::fs::read_to_string(dir.join(f)).unwrap(),
            );
        }
        let events: Vec<Value> = json_lines(&dir.join("events.jsonl"))
            .into_iter()
            // `cached`: whether the run's tool cache had the command's result already, which
            // depends on which arm ran it first, not on the policy.
            .map(|e| comparable(e, &["model_ms", "cached"]))
            .collect();
        out.insert(
            format!("{key}/events.jsonl"),
            serde_json::to_string(&events).unwrap(),
        );
    }
    out
}

#[test]
fn trim_py_gives_the_records_of_trim_over_the_task_suite() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = (tmp.path().join("run"), tmp.path().join("exchange.log"));
    let tasks = root().join("tasks");
    let o = foldbench(
        &root(),
        &log,
        &[
            "run",
            "--tasks",
            tasks.to_str().unwrap(),
            "--seeds",
            "1",
            "--jobs",
            "2",
            "--policy",
            "trim",
            "--policy",
            TRIM_PY,
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.code() == Some(0), "{}", text(&o));
    let records = json_lines(&out.join("cells.jsonl"));
    let by = |arm: &str| -> BTreeMap<(String, u64), Value> {
        records
            .iter()
            .filter(|r| r["arm"] == arm)
            .map(|r| {
                let key = (
                    r["task"].as_str().unwrap().to_string(),
                    r["seed"].as_u64().unwrap(),
                );
                (
                    key,
                    comparable(r.clone(), &["id", "arm", "policy", "wall_ms", "model_ms"]),
                )
            })
            .collect()
    };
    let (builtin, process) = (by("trim"), by(TRIM_PY));
    let n = crate::helpers::all_tasks().len();
    assert_eq!(builtin.len(), n, "a cell per task");
    assert_eq!(builtin, process);
    for r in records.iter().filter(|r| r["arm"] == TRIM_PY) {
        assert_eq!(r["policy"], TRIM_PY, "the policy's own name");
    }
    // Request rows, cell files: equal once the arm's name is left out.
    let rows = |arm: &str| -> Vec<Value> {
        let mut v: Vec<Value> = json_lines(&out.join("requests.jsonl"))
            .into_iter()
            .filter(|r| r["cell"].as_str().unwrap().contains(&format!("/{arm}/")))
            .map(|r| {
                let cell = r["cell"]
                    .as_str()
                    .unwrap()
                    .replace(&format!("/{arm}/"), "/ARM/");
                let mut r = comparable(r, &["cell"]);
                r["cell"] = cell.into();
                r
            })
            .collect();
        v.sort_by_key(|r| r.to_string());
        v
    };
    assert!(!rows("trim").is_empty());
    assert_eq!(rows("trim"), rows(TRIM_PY));
    let folder = TRIM_PY.replace([':', '/', ' '], "_");
    let (a, b) = (cell_files(&out, "trim"), cell_files(&out, &folder));
    assert_eq!(a.len(), 3 * n, "three files per cell");
    assert_eq!(a, b);
    let seen = validate_log(&log);
    // trim.py speaks protocol 2: a session per cell, in fewer processes than cells.
    assert_eq!(seen.get("request:open"), Some(&n), "{seen:?}");
    assert_eq!(seen.get("request:close"), Some(&n), "{seen:?}");
    assert!(
        seen.get("request:hello").is_some_and(|h| *h < n),
        "{seen:?}"
    );
    assert!(
        seen.get("answer:send").is_some_and(|n| *n > 100),
        "{seen:?}"
    );
}

/// The replay's request records and per-session JSON of `policies`, the policy labels left out.
fn replay_records(dir: &Path, log: &Path, policies: &[&str]) -> (Vec<Value>, Value) {
    let req = dir.join(format!("requests-{}.jsonl", policies.len()));
    let sessions = root().join("tests/fixtures/real-sessions");
    let mut args = vec!["replay", sessions.to_str().unwrap(), "--format", "json"];
    for p in policies {
        args.extend(["--policy", p]);
    }
    args.extend(["--requests-out", req.to_str().unwrap()]);
    let o = foldbench(&root(), log, &args);
    assert!(o.status.success(), "{}", text(&o));
    let doc: Value = serde_json::from_slice(&o.stdout).unwrap();
    let rows = json_lines(&req)
        .into_iter()
        .map(|r| comparable(r, &["policy"]))
        .collect();
    let mut per = doc["per_session"].clone();
    for s in per.as_array_mut().unwrap() {
        for p in s["policies"].as_array_mut().unwrap() {
            p.as_object_mut().unwrap().remove("policy");
        }
    }
    (rows, per)
}

#[test]
fn trim_py_gives_the_records_of_trim_in_replay() {
    let tmp = tempfile::tempdir().unwrap();
    let log = tmp.path().join("exchange.log");
    for (builtin, process) in [
        ("trim".to_string(), TRIM_PY.to_string()),
        (
            "trim:keep=1,mode=placeholder".to_string(),
            format!("{TRIM_PY} keep=1 mode=placeholder"),
        ),
    ] {
        let (rows_a, per_a) = replay_records(tmp.path(), &log, &[&builtin]);
        let (rows_b, per_b) = replay_records(tmp.path(), &log, &[&process]);
        assert!(rows_a.len() > 40, "{}", rows_a.len());
        assert_eq!(rows_a, rows_b, "{builtin}");
        assert_eq!(per_a, per_b, "{builtin}");
    }
    let seen = validate_log(&log);
    assert!(
        seen.contains_key("request:compacted") || seen.contains_key("answer:send"),
        "{seen:?}"
    );
}

#[test]
fn a_policy_process_folds_and_every_message_it_exchanged_is_valid() {
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = (tmp.path().join("run"), tmp.path().join("exchange.log"));
    let task = root().join("tasks/long-session.yaml");
    let fold = "exec:python3 examples/policies/fold_last_turn.py";
    let o = foldbench(
        &root(),
        &log,
        &[
            "run",
            "--tasks",
            task.to_str().unwrap(),
            "--seeds",
            "1",
            "--policy",
            fold,
            "--policy",
            "exec:python3 examples/policies/none.py",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let records = json_lines(&out.join("cells.jsonl"));
    let folded = records.iter().find(|r| r["arm"] == fold).unwrap();
    assert_ne!(folded["status"], "error", "{folded}");
    let folds = folded["metrics"]["folds"].as_u64().unwrap();
    assert_eq!(folds, 11, "every turn but the last, folded once: {folded}");
    let none = records.iter().find(|r| r["arm"] != fold).unwrap();
    assert!(
        folded["metrics"]["request_tokens"]["total"].as_u64()
            < none["metrics"]["request_tokens"]["total"].as_u64(),
        "folding sends less"
    );
    let (_, per) = replay_records(tmp.path(), &log, &["none", fold]);
    let folds_in_replay: usize = per
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["policies"][1]["folds"].as_array().unwrap().len())
        .sum();
    assert!(folds_in_replay > 0, "{per}");
    let seen = validate_log(&log);
    for ty in [
        "request:hello",
        "request:card",
        "request:plan",
        "request:end_turn",
        "request:spliced",
        "answer:splices",
        "answer:ok",
        "answer:send",
    ] {
        assert!(seen.contains_key(ty), "{ty} was exchanged: {seen:?}");
    }
}

#[test]
fn a_policy_that_saves_its_state_behind_the_proxy_exchanges_valid_messages() {
    // harness/runner/tests/policies/stateful.py behind `foldbench proxy --max-conversations 1`,
    // two conversations sent in turn (tests/proxy-e2e.py's `evict`): each request after the
    // first two brings its conversation back, the process given its state again. Every line
    // exchanged with the process is valid, `save`, `state` and `restore` among them.
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = (tmp.path().join("proxy"), tmp.path().join("exchange.log"));
    let script = root().join("harness/runner/tests/policies/stateful.py");
    let run = Command::new("python3")
        .arg(root().join("tests/proxy-e2e.py"))
        .arg(binary())
        .arg(&out)
        // `read=`: the checkout may sit under a folder the sandbox hides (a clone in /tmp).
        .arg(format!(
            "exec:read={} python3 {}",
            script.parent().unwrap().display(),
            script.display()
        ))
        .arg("evict")
        .env("FOLDBENCH_EXEC_LOG", &log)
        .output()
        .unwrap();
    assert!(run.status.success(), "{}", text(&run));
    let seen: Value = serde_json::from_slice(&run.stdout).unwrap();
    assert_eq!(seen["exit"], 0, "the proxy stops cleanly");
    assert_eq!(seen["received"].as_array().map(Vec::len), Some(4), "{seen}");
    let reloaded = json_lines(&out.join("exchanges.jsonl"))
        .into_iter()
        .filter(|x| x["kind"] == "reloaded")
        .count();
    assert_eq!(reloaded, 2, "the second request of each brought it back");
    let types = validate_log(&log);
    assert_eq!(types.get("request:restore"), Some(&2), "{types:?}");
    for ty in ["request:save", "answer:state", "answer:ok", "request:plan"] {
        assert!(types.contains_key(ty), "{ty} was exchanged: {types:?}");
    }
    let body = std::fs::read_to_string(&log).unwrap();
    assert!(
        body.contains("\"fingerprint\":\""),
        "messages carry their fingerprints"
    );
}

#[test]
fn the_bytes_sent_to_a_policy_grow_linearly_with_the_session() {
    // none.py over long-session: what foldbench writes to the process is each message once
    // (and a few fields per request), not the whole context on every request.
    let tmp = tempfile::tempdir().unwrap();
    let (out, log) = (tmp.path().join("run"), tmp.path().join("exchange.log"));
    let task = root().join("tasks/long-session.yaml");
    let o = foldbench(
        &root(),
        &log,
        &[
            "run",
            "--tasks",
            task.to_str().unwrap(),
            "--seeds",
            "1",
            "--policy",
            "exec:python3 examples/policies/none.py",
            "--out",
            out.to_str().unwrap(),
        ],
    );
    assert!(o.status.success(), "{}", text(&o));
    let sent: usize = std::fs::read_to_string(&log)
        .unwrap()
        .lines()
        .filter(|l| l.starts_with("> "))
        .map(str::len)
        .sum();
    let transcript: usize = std::fs::read_dir(out.join("cells"))
        .unwrap()
        .map(|d| {
            std::fs::read_to_string(d.unwrap().path().join("transcript.jsonl"))
                .unwrap()
                .len()
        })
        .sum();
    let requests = json_lines(&out.join("requests.jsonl")).len();
    assert!(requests > 30);
    // Each message once (its JSON plus an id) and under 200 bytes of fields per request; the
    // whole context each time would be about `requests / 2` times the transcript.
    assert!(
        sent < transcript + transcript / 10 + 200 * (requests + 30),
        "sent {sent} bytes for a transcript of {transcript} bytes and {requests} requests"
    );
}

// ---------------------------------------------------------------------------------------------
// Bad policies

/// The serving loop the bad policies share: each overrides one answer.
const BASE_PY: &str = r#"
import json, sys
def serve(plan=None, end_turn=None):
    view = []
    for line in sys.stdin:
        req = json.loads(line)
        ctx = req.get("context")
        if ctx is not None:
            del view[ctx["keep"]:]
            view.extend(ctx["append"])
        t = req["type"]
        if t == "hello":
            ans = {"type": "hello", "protocol": 1}
        elif t == "plan":
            ans = plan(req, view) if plan else {"type": "send", "messages": [[0, len(view)]]}
        elif t == "card":
            ans = {"type": "card", "card": None}
        elif t == "end_turn":
            ans = end_turn(req, view) if end_turn else {"type": "splices", "splices": []}
        else:
            ans = {"type": "ok"}
        if ans is None:
            continue
        if isinstance(ans, str):
            sys.stdout.write(ans + "\n")
        else:
            ans["re"] = req["id"]
            sys.stdout.write(json.dumps(ans) + "\n")
        sys.stdout.flush()
"#;

/// Runs snapshot-rollback (three turns) under `none` and `exec:COMMAND`, with `script` written
/// as `bad.py` beside `base.py` in a temp folder that is the run's working folder. Returns the
/// exec cell's error; the `none` cell must have run to its end and the run exited 100.
fn bad_policy(script: &str, command: &str) -> String {
    bad_policy_with(script, command, &[])
}

/// [`bad_policy`] with more arguments to `run` (`--sandbox none`).
fn bad_policy_with(script: &str, command: &str, more: &[&str]) -> String {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("base.py"), BASE_PY).unwrap();
    std::fs::write(tmp.path().join("bad.py"), script).unwrap();
    let (out, log) = (tmp.path().join("run"), tmp.path().join("exchange.log"));
    let task = root().join("tasks/snapshot-rollback.yaml");
    let policy = format!("exec:{command}");
    let mut args = vec![
        "run",
        "--tasks",
        task.to_str().unwrap(),
        "--seeds",
        "1",
        "--policy",
        "none",
        "--policy",
        &policy,
        "--cell-timeout",
        "120",
        "--out",
        out.to_str().unwrap(),
    ];
    args.extend(more);
    let o = foldbench(tmp.path(), &log, &args);
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let records = json_lines(&out.join("cells.jsonl"));
    assert_eq!(records.len(), 2, "the run went on: {records:?}");
    let none = records.iter().find(|r| r["arm"] == "none").unwrap();
    assert_ne!(none["status"], "error", "{none}");
    let bad = records
        .iter()
        .find(|r| r["arm"] == policy.as_str())
        .unwrap();
    assert_eq!(bad["status"], "error", "{bad}");
    let error = bad["error"].as_str().unwrap().to_string();
    assert!(
        error.starts_with(&format!(
            "policy process `{}` ",
            command
                .split(' ')
                .skip_while(|w| ["timeout=", "max_line="].iter().any(|o| w.starts_with(o)))
                .collect::<Vec<_>>()
                .join(" ")
        )),
        "{error}"
    );
    let start: String = error.chars().take(120).collect();
    assert!(
        text(&o).contains(&start),
        "the reason is printed: {}",
        text(&o)
    );
    error
}

#[test]
fn a_policy_that_does_not_start_is_an_error_naming_why() {
    let e = bad_policy("", "/no/such/policy-program");
    assert!(
        e.contains("exited (exit status: 127) before answering the `hello` request"),
        "{e}"
    );
    assert!(
        e.contains("its standard error ends:") && e.contains("not found"),
        "{e}"
    );
    let e = bad_policy("", "python3 no_such_file.py");
    assert!(
        e.contains("no_such_file.py") && e.contains("before answering the `hello`"),
        "{e}"
    );
}

#[test]
fn a_policy_that_crashes_is_an_error_with_its_stderr() {
    let script = "import sys, base\ndef plan(req, view):\n    sys.stderr.write('Traceback: it broke in plan\\n'); sys.exit(3)\nbase.serve(plan=plan)\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(
        e.contains("exited (exit status: 3) before answering the `plan` request"),
        "{e}"
    );
    assert!(
        e.ends_with("its standard error ends: Traceback: it broke in plan"),
        "{e}"
    );
}

/// Processes whose command line holds `word`.
fn processes_with(word: &str) -> Vec<String> {
    let mut out = Vec::new();
    for entry in std::fs::read_dir("/proc").unwrap().flatten() {
        if let Ok(cmd) = std::fs::read(entry.path().join("cmdline")) {
            let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
            if cmd.contains(word) {
                out.push(cmd);
            }
        }
    }
    out
}

#[test]
fn a_policy_that_hangs_times_out_and_its_children_are_ended() {
    let marker = format!("{}", 900_000 + std::process::id() % 90_000);
    let script = format!(
        "import subprocess, time, base\ndef plan(req, view):\n    subprocess.Popen(['sleep', '{marker}'])\n    time.sleep(3600)\nbase.serve(plan=plan)\n"
    );
    let e = bad_policy(&script, "timeout=1 python3 bad.py");
    assert!(
        e.contains("did not answer the `plan` request within 1s"),
        "{e}"
    );
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "the policy's child outlived it: {left:?}");
}

#[test]
fn without_a_sandbox_a_policy_that_crashes_with_a_child_holding_its_output_is_reported_as_its_exit()
{
    // The child keeps the policy's standard output open after the policy exits: the end of
    // the pipe never comes, and only the policy's own exit says what happened.
    let marker = format!("{}", 800_000 + std::process::id() % 90_000);
    let script = format!(
        "import subprocess, sys, base\ndef plan(req, view):\n    subprocess.Popen(['sleep', '{marker}'])\n    sys.stderr.write('crashed in plan\\n'); sys.exit(3)\nbase.serve(plan=plan)\n"
    );
    let e = bad_policy_with(&script, "timeout=30 python3 bad.py", &["--sandbox", "none"]);
    assert!(
        e.contains("exited (exit status: 3) before answering the `plan` request"),
        "{e}"
    );
    assert!(
        e.ends_with("its standard error ends: crashed in plan"),
        "{e}"
    );
    let left = processes_with(&format!("sleep {marker}"));
    assert!(left.is_empty(), "the policy's child outlived it: {left:?}");
}

#[test]
fn a_policy_that_writes_malformed_json_is_an_error_quoting_the_line() {
    let script = "import base\nbase.serve(plan=lambda req, view: 'this is { not json')\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(e.contains("wrote malformed JSON"), "{e}");
    assert!(e.contains("; the line: this is { not json;"), "{e}");
}

#[test]
fn a_policy_that_writes_an_unknown_message_is_an_error_quoting_it() {
    let script = "import base\nbase.serve(plan=lambda req, view: {'type': 'teleport'})\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(
        e.contains("an unknown or unexpected message (type \"teleport\")"),
        "{e}"
    );
    assert!(
        e.contains(r#"the line: {"type": "teleport", "re": "#),
        "{e}"
    );
}

#[test]
fn a_policy_that_floods_its_output_is_cut_at_the_line_limit() {
    let script = "import sys, base\ndef plan(req, view):\n    sys.stdout.write('x' * 3000000); sys.stdout.flush()\nbase.serve(plan=plan)\n";
    let e = bad_policy(script, "max_line=100000 python3 bad.py");
    assert!(
        e.contains("wrote a line longer than 100000 bytes (max_line)"),
        "{e}"
    );
    assert!(e.contains("; the line: xxxxxxxx"), "{e}");
}

#[test]
fn a_splice_of_the_turn_in_progress_is_an_error() {
    let script = "import base\nbase.serve(end_turn=lambda req, view: {'type': 'splices', 'splices': [{'from': req['turn'], 'to': req['turn']}]})\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(
        e.contains("proposed an illegal splice of turns 1–1: turn 1 is the turn in progress"),
        "{e}"
    );
    assert!(
        e.contains(r#"the line: {"type": "splices", "splices": [{"from": 1, "to": 1}]"#),
        "{e}"
    );
}

#[test]
fn a_reversed_splice_is_an_error() {
    let script = "import base\nbase.serve(end_turn=lambda req, view: {'type': 'splices', 'splices': [{'from': 2, 'to': 1}] if req['turn'] == 3 else []})\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(
        e.contains("proposed an illegal splice of turns 2–1: the range is reversed"),
        "{e}"
    );
}

#[test]
fn a_splice_inside_a_fold_is_an_error() {
    let script = "import base\ndef end_turn(req, view):\n    t = req['turn']\n    s = [{'from': 1, 'to': 1}] if t == 2 else [{'from': 1, 'to': 2}] if t == 3 else []\n    return {'type': 'splices', 'splices': s}\nbase.serve(end_turn=end_turn)\n";
    let e = bad_policy(script, "python3 bad.py");
    assert!(
        e.contains("proposed an illegal splice of turns 1–2: turns 1–1 were already folded"),
        "{e}"
    );
}

#[test]
fn a_policy_that_fails_in_replay_leaves_that_session_out_and_replay_exits_100() {
    let tmp = tempfile::tempdir().unwrap();
    std::fs::write(tmp.path().join("base.py"), BASE_PY).unwrap();
    let script = "import sys, base\ndef plan(req, view):\n    sys.exit(4)\nbase.serve(plan=plan)\n";
    std::fs::write(tmp.path().join("bad.py"), script).unwrap();
    let sessions: PathBuf = root().join("tests/fixtures/real-sessions");
    let o = foldbench(
        tmp.path(),
        &tmp.path().join("log"),
        &[
            "replay",
            sessions.to_str().unwrap(),
            "--policy",
            "none",
            "--policy",
            "exec:python3 bad.py",
        ],
    );
    assert_eq!(o.status.code(), Some(100), "{}", text(&o));
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(
            "policy `exec:python3 bad.py`: policy process `python3 bad.py` exited (exit status: 4)"
        ),
        "{err}"
    );
    let out = String::from_utf8_lossy(&o.stdout);
    assert!(
        !out.contains("  exec:python3 bad.py: "),
        "a failed replay is not counted: {out}"
    );
}
