//! `foldbench policies` and the `--policy` help text, from the current registry
//! (`policies::registry`); the arms of policy texts are the runner's (`harness_runner::arms`).

use policies::{registry, Registry};

use crate::error::{Code, Error};

/// The `--policy` help text: the syntax and every policy of `reg` with its summary.
pub fn help(reg: &Registry, what: &str) -> String {
    format!(
        "{what} `NAME[:k=v,...]`, repeatable; `STEP|STEP` is a pipeline; `k=[a,b]` or `k=0..5` sweeps a parameter (one arm per value). `foldbench policies` lists their parameters. The policies:\n{}",
        reg.help()
    )
}

/// Policy names as a list in a sentence: `a, b, c` with `last` before the last (`", "` or
/// `" and "`).
pub fn listed(names: &[&str], last: &str) -> String {
    match names {
        [] => String::new(),
        [one] => one.to_string(),
        [rest @ .., end] => format!("{}{last}{end}", rest.join(", ")),
    }
}

/// `foldbench policies`: the registered policies with their parameters.
#[derive(Debug, clap::Args)]
pub struct PoliciesArgs {
    /// Only this policy.
    pub name: Option<String>,
    /// Print the parameter table as Markdown (the one in docs/policies.md).
    #[arg(long)]
    pub markdown: bool,
}

/// Lists the policies of the current registry.
pub fn cmd(a: PoliciesArgs) -> Result<Code, Error> {
    let reg = registry::current();
    if a.markdown {
        crate::out::print(&reg.markdown())?;
        return Ok(Code::Ok);
    }
    crate::out::print(&listing(&reg, a.name.as_deref())?)?;
    Ok(Code::Ok)
}

/// `foldbench policies [NAME]`: the policies of `reg` (or the one named) with their summaries,
/// sources and parameters, a blank line between two; an unknown name is refused with the names.
pub fn listing(reg: &Registry, name: Option<&str>) -> Result<String, Error> {
    let entries: Vec<&policies::Entry> = match name {
        None => reg.entries().iter().collect(),
        Some(n) => match reg.get(n) {
            Some(e) => vec![e],
            None => {
                return Err(Error::Usage(format!(
                    "unknown policy `{n}`{}; the policies: {}",
                    harness_core::did_you_mean(n, reg.names()),
                    reg.names().join(", ")
                )))
            }
        },
    };
    let mut out = String::new();
    for (i, e) in entries.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        out.push_str(&format!("{}  {}\n", e.name(), e.summary_text()));
        out.push_str(&format!("  source: {}\n", e.source_text()));
        let lines: Vec<(String, String)> = e
            .params()
            .iter()
            .map(|p| {
                let unit = if p.unit == "-" {
                    String::new()
                } else {
                    format!("{}: ", p.unit)
                };
                (
                    format!("{}={}", p.name, p.default),
                    format!("{unit}{}", p.doc),
                )
            })
            .collect();
        let width = lines.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
        for (k, doc) in lines {
            out.push_str(&format!("  {k:width$}  {doc}\n"));
        }
    }
    Ok(out)
}
