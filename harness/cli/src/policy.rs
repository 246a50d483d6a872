//! Policies on the command line, all through the current registry (`policies::registry`):
//! arms from `--policy` and `--arms` texts with their sweeps expanded, the matrix file's policy
//! vocabulary, the `--policy` help text, and `foldbench policies`.

use harness_config::matrix::{SweepOf, SweepPoint};
use harness_runner::run::Arm;
use policies::{registry, PolicyError, Registry};

use crate::error::{Code, Error};

/// The arm of `run --agent` that leaves the agent its own context handling: no policy in the
/// proxy (`none`), the agent's compaction on.
pub use harness_runner::agent_cell::NATIVE;

/// One arm a policy text stands for: its label, its policy text and the sweep that made it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ArmText {
    /// The label (the text itself, with a swept value in place).
    pub label: String,
    /// The policy text.
    pub policy: String,
    /// The sweep, when the text had one.
    pub sweep: Option<SweepOf>,
}

/// Why policy texts do not make arms.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArmError {
    /// A text the registry refuses.
    #[error(transparent)]
    Policy(#[from] PolicyError),
    /// Two texts that make the same arm.
    #[error("the arm `{0}` is given twice")]
    Twice(String),
}

/// The arms of policy texts as given (each its own label), sweeps expanded in place; an arm
/// given twice is an error.
pub fn expand(texts: &[String]) -> Result<Vec<ArmText>, ArmError> {
    let reg = registry::current();
    let mut out: Vec<ArmText> = Vec::new();
    for text in texts {
        if text == NATIVE {
            out.push(ArmText {
                label: NATIVE.to_string(),
                policy: "none".to_string(),
                sweep: None,
            });
            continue;
        }
        for p in reg.expand(text)? {
            let label = p.label(text, text);
            if out.iter().any(|a| a.label == label) {
                return Err(ArmError::Twice(label));
            }
            out.push(ArmText {
                sweep: (!p.values.is_empty()).then(|| SweepOf {
                    arm: text.clone(),
                    values: p.values.clone(),
                }),
                label,
                policy: p.text,
            });
        }
    }
    Ok(out)
}

/// The runner's arms of policy texts ([`expand`], each parsed).
pub fn arms(texts: &[String]) -> Result<Vec<Arm>, ArmError> {
    Ok(expand(texts)?
        .into_iter()
        .map(arm)
        .collect::<Result<_, _>>()?)
}

/// The runner's arm of an expanded arm.
pub fn arm(a: ArmText) -> Result<Arm, PolicyError> {
    Ok(Arm {
        policy: policies::parse_policy(&a.policy)?,
        label: a.label,
        sweep: a.sweep,
    })
}

/// The matrix file's policy check: a text and its arm's label, expanded into its arms.
pub fn vocab_policy(text: &str, label: &str) -> Result<Vec<SweepPoint>, PolicyError> {
    if text == NATIVE {
        return Ok(vec![SweepPoint {
            label: NATIVE.to_string(),
            policy: "none".to_string(),
            values: Vec::new(),
        }]);
    }
    Ok(registry::current()
        .expand(text)?
        .into_iter()
        .map(|p| SweepPoint {
            label: p.label(label, text),
            policy: p.text,
            values: p.values,
        })
        .collect())
}

/// The matrix file's `windows`: the text with its window set, when its policy takes one.
pub fn vocab_window(text: &str, w: u64) -> Option<String> {
    registry::current().with_window(text, w)
}

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
                    harness_core::suggest::did_you_mean(n, reg.names()),
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn swept_texts_become_arms_in_place() {
        let texts: Vec<String> = ["none", "trim:keep=0..1", "fold"]
            .map(String::from)
            .to_vec();
        let arms = expand(&texts).unwrap();
        let labels: Vec<&str> = arms.iter().map(|a| a.label.as_str()).collect();
        assert_eq!(labels, ["none", "trim:keep=0", "trim:keep=1", "fold"]);
        assert_eq!(
            arms[2].sweep.as_ref().map(|s| s.arm.as_str()),
            Some("trim:keep=0..1")
        );
        let twice = ["trim:keep=0..1".to_string(), "trim:keep=1".to_string()];
        assert_eq!(
            expand(&twice).unwrap_err().to_string(),
            "the arm `trim:keep=1` is given twice"
        );
    }
}
