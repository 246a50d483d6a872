//! The workspace tools, each described once (docs/design.md §6): its name, what the model is
//! told it does, its arguments (the JSON schema sent to a model and the task spec's argument
//! checks are both made from them), whether it only reads, which argument is the path it
//! touches, and how the sim uses it.
//!
//! [`TOOLS`] is the only list of the tools' names: the task spec's checks, the schemas the
//! runner sends, the runner's dispatch (by [`Tool`]), the cell's fingerprint memo, the sim and
//! the context's paths read it, and `tests/architecture.rs` fails on another list of them.
//! Adding a tool is a [`ToolDef`] here and its execution in the runner (`harness_runner::tools`,
//! whose match over [`Tool`] does not compile until the new tool has its arm).

use serde_json::{json, Map, Value};

use crate::context::normalize_path;
use crate::message::{ToolCall, ToolSpec};

/// Which workspace tool a [`ToolDef`] describes: what the runner dispatches on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Tool {
    /// `read_file`.
    ReadFile,
    /// `list_files`.
    ListFiles,
    /// `grep`.
    Grep,
    /// `edit_file`.
    EditFile,
    /// `write_file`.
    WriteFile,
    /// `shell`.
    Shell,
}

/// The type of an argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgType {
    /// A string (`"type": "string"`).
    String,
    /// A whole number: the schema asks for one of at least 1 (`"type": "integer", "minimum":
    /// 1`); a task spec may give any non-negative one.
    Count,
}

/// One argument of a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Arg {
    /// Its key in the arguments object.
    pub(crate) name: &'static str,
    /// Its type.
    pub ty: ArgType,
    /// Whether a call must give it.
    pub(crate) required: bool,
    /// What the model is told it means.
    pub(crate) description: &'static str,
}

/// The argument that names the path a call touches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct PathArg {
    /// Its key in the arguments object.
    pub(crate) name: &'static str,
    /// The path a call without it touches (`.`, the root, for the tools that search), or `None`
    /// when such a call names no path.
    pub(crate) default: Option<&'static str>,
    /// Whether the call writes the file at that path.
    pub(crate) writes: bool,
}

/// A workspace tool: everything foldbench knows of it but its execution (the runner's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ToolDef {
    /// What the runner dispatches on.
    pub tool: Tool,
    /// Its name, as a model calls it and a task spec's step names it.
    pub(crate) name: &'static str,
    /// What the model is told it does.
    pub(crate) description: &'static str,
    /// Its arguments, in the order the schema lists them: the required ones first.
    pub(crate) args: &'static [Arg],
    /// Whether it only reads: after it the work tree is as it was, and the sim's re-check
    /// noise may repeat it.
    pub reads_only: bool,
    /// The argument naming the path a call touches (fold cards, re-run detection), if any.
    pub(crate) path_arg: Option<PathArg>,
    /// How the sim uses it: whether it re-runs a call of it to get back a fact the context
    /// lost (besides repeating the tools that only read as noise).
    pub(crate) sim_reruns: bool,
}

const PATH: &str = "Path relative to the workspace root.";

/// Every workspace tool, in the order the schemas are sent.
pub const TOOLS: &[ToolDef] = &[
    ToolDef {
        tool: Tool::ReadFile,
        name: "read_file",
        description: "Read a text file; lines are shown numbered (cat -n style). Use offset/limit \
                      for a part of a long file.",
        args: &[
            string("path", true, PATH),
            count("offset", "First line to show, 1-based (default 1)."),
            count("limit", "Maximum number of lines to show (default: all)."),
        ],
        reads_only: true,
        path_arg: Some(path(None, false)),
        sim_reruns: true,
    },
    ToolDef {
        tool: Tool::ListFiles,
        name: "list_files",
        description: "List every file below a directory, recursively, one workspace-relative \
                      path per line.",
        args: &[string(
            "path",
            false,
            "Directory relative to the workspace root (default: the root).",
        )],
        reads_only: true,
        path_arg: Some(path(Some("."), false)),
        sim_reruns: true,
    },
    ToolDef {
        tool: Tool::Grep,
        name: "grep",
        description: "Search files for a regular expression (Rust regex syntax), recursively \
                      below a directory or in one file. Prints path:line:text for every \
                      matching line.",
        args: &[
            string("pattern", true, "Regular expression."),
            string(
                "path",
                false,
                "File or directory relative to the workspace root (default: the root).",
            ),
        ],
        reads_only: true,
        path_arg: Some(path(Some("."), false)),
        sim_reruns: true,
    },
    ToolDef {
        tool: Tool::EditFile,
        name: "edit_file",
        description: "Replace text in a file: `old` must occur exactly once in the file; it is \
                      replaced by `new`. Include enough context in `old` to make it unique.",
        args: &[
            string("path", true, PATH),
            string(
                "old",
                true,
                "Exact text to replace; must be unique in the file.",
            ),
            string("new", true, "Replacement text."),
        ],
        reads_only: false,
        path_arg: Some(path(None, true)),
        sim_reruns: false,
    },
    ToolDef {
        tool: Tool::WriteFile,
        name: "write_file",
        description: "Create or overwrite a file with the given content; missing parent \
                      directories are created.",
        args: &[
            string("path", true, PATH),
            string("content", true, "The whole new content of the file."),
        ],
        reads_only: false,
        path_arg: Some(path(None, true)),
        sim_reruns: false,
    },
    ToolDef {
        tool: Tool::Shell,
        name: "shell",
        description: "Run a command with `sh -c` in the workspace root (stderr merged into \
                      stdout, no network guarantees, time-limited). Non-zero exit codes are \
                      reported after the output.",
        args: &[string("command", true, "Shell command line.")],
        reads_only: false,
        path_arg: None,
        sim_reruns: true,
    },
];

const fn string(name: &'static str, required: bool, description: &'static str) -> Arg {
    Arg {
        name,
        ty: ArgType::String,
        required,
        description,
    }
}

const fn count(name: &'static str, description: &'static str) -> Arg {
    Arg {
        name,
        ty: ArgType::Count,
        required: false,
        description,
    }
}

const fn path(default: Option<&'static str>, writes: bool) -> PathArg {
    PathArg {
        name: "path",
        default,
        writes,
    }
}

/// The tool called `name`, if it is a workspace tool.
pub fn find(name: &str) -> Option<&'static ToolDef> {
    TOOLS.iter().find(|t| t.name == name)
}

/// Whether `name` is a workspace tool that only reads ([`ToolDef::reads_only`]).
pub fn reads_only(name: &str) -> bool {
    find(name).is_some_and(|t| t.reads_only)
}

/// The tools' names, in [`TOOLS`]' order.
pub fn names() -> Vec<&'static str> {
    TOOLS.iter().map(|t| t.name).collect()
}

/// The schemas of every tool as a model is sent them, in [`TOOLS`]' order.
pub fn specs() -> Vec<ToolSpec> {
    TOOLS.iter().map(ToolDef::spec).collect()
}

impl ToolDef {
    /// The schema a model is sent: the description and a JSON schema of the arguments object
    /// (no property but the arguments, the required ones listed when there are any).
    pub(crate) fn spec(&self) -> ToolSpec {
        let mut properties = Map::new();
        for a in self.args {
            let schema = match a.ty {
                ArgType::String => json!({ "type": "string", "description": a.description }),
                ArgType::Count => {
                    json!({ "type": "integer", "minimum": 1, "description": a.description })
                }
            };
            properties.insert(a.name.to_string(), schema);
        }
        let mut parameters = json!({ "type": "object", "properties": Value::Object(properties) });
        let required: Vec<&str> = self.required().collect();
        if !required.is_empty() {
            parameters["required"] = json!(required);
        }
        parameters["additionalProperties"] = json!(false);
        ToolSpec {
            name: self.name.to_string(),
            description: self.description.to_string(),
            parameters,
        }
    }

    /// The names of the arguments a call must give, in order.
    pub fn required(&self) -> impl Iterator<Item = &'static str> {
        self.args.iter().filter(|a| a.required).map(|a| a.name)
    }

    /// The names of the arguments a call may leave out, in order.
    pub fn optional(&self) -> impl Iterator<Item = &'static str> {
        self.args.iter().filter(|a| !a.required).map(|a| a.name)
    }

    /// The argument `name`, if the tool takes it.
    pub fn arg(&self, name: &str) -> Option<&'static Arg> {
        self.args.iter().find(|a| a.name == name)
    }

    /// The normalised path `call` touches: its path argument, else the tool's default; `None`
    /// for a tool without a path argument.
    pub(crate) fn path_of(&self, call: &ToolCall) -> Option<String> {
        let p = self.path_arg?;
        match call.str_arg(p.name) {
            Some(given) => Some(normalize_path(given)),
            None => p.default.map(str::to_string),
        }
    }

    /// Whether a call writes the file its path argument names (`edit_file`, `write_file`).
    pub fn writes_its_path(&self) -> bool {
        self.path_arg.is_some_and(|p| p.writes)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn call(name: &str, args: Value) -> ToolCall {
        ToolCall {
            id: "c".into(),
            name: name.into(),
            args,
        }
    }

    #[test]
    fn names_are_unique_and_found() {
        let names = names();
        for (i, n) in names.iter().enumerate() {
            assert!(!names[..i].contains(n), "{n} twice");
            assert_eq!(find(n).map(|t| t.name), Some(*n));
        }
        assert_eq!(find("Read"), None);
        assert_eq!(find("fold_unit"), None);
    }

    #[test]
    fn each_tool_lists_its_required_arguments_first_and_its_path_among_them() {
        for t in TOOLS {
            let first_optional = t.args.iter().position(|a| !a.required);
            if let Some(at) = first_optional {
                assert!(t.args[at..].iter().all(|a| !a.required), "{}", t.name);
            }
            if let Some(p) = t.path_arg {
                let arg = t.arg(p.name).expect("the path argument is an argument");
                assert_eq!(arg.ty, ArgType::String);
                // A path with a default is one a call may leave out, and only then.
                assert_eq!(arg.required, p.default.is_none(), "{}", t.name);
            }
            assert!(!(t.reads_only && t.writes_its_path()), "{}", t.name);
            // The re-check noise repeats what only reads; a re-run may be any of those.
            assert!(!t.reads_only || t.sim_reruns, "{}", t.name);
        }
    }

    #[test]
    fn the_schema_is_made_from_the_arguments() {
        let s = find("read_file").unwrap().spec();
        assert_eq!(
            s.parameters,
            json!({
                "type": "object",
                "properties": {
                    "path": { "type": "string", "description": PATH },
                    "offset": { "type": "integer", "minimum": 1,
                                "description": "First line to show, 1-based (default 1)." },
                    "limit": { "type": "integer", "minimum": 1,
                               "description": "Maximum number of lines to show (default: all)." }
                },
                "required": ["path"],
                "additionalProperties": false
            })
        );
        // No `required` at all when every argument is optional.
        let s = find("list_files").unwrap().spec();
        assert_eq!(s.parameters.get("required"), None);
        assert_eq!(s.parameters["additionalProperties"], json!(false));
        assert_eq!(
            find("edit_file").unwrap().spec().parameters["required"],
            json!(["path", "old", "new"])
        );
    }

    #[test]
    fn paths_come_from_the_path_argument_or_its_default() {
        let read = find("read_file").unwrap();
        let grep = find("grep").unwrap();
        let shell = find("shell").unwrap();
        assert_eq!(
            read.path_of(&call("read_file", json!({"path": "./src//a.py"}))),
            Some("src/a.py".into())
        );
        assert_eq!(read.path_of(&call("read_file", json!({}))), None);
        assert_eq!(
            grep.path_of(&call("grep", json!({"pattern": "x"}))),
            Some(".".into())
        );
        assert_eq!(
            shell.path_of(&call("shell", json!({"command": "cat a"}))),
            None
        );
        let writers: Vec<&str> = TOOLS
            .iter()
            .filter(|t| t.writes_its_path())
            .map(|t| t.name)
            .collect();
        assert_eq!(writers, ["edit_file", "write_file"]);
    }
}
