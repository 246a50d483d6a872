//! Arms from policy texts, all through the current registry (`policies::registry`): the texts
//! of `--policy` and `--arms` with their sweeps expanded, the arms a run takes when none is
//! named, and the policy and window words of the matrix file (its `Vocabulary`).

use harness_config::matrix::{SweepOf, SweepPoint};
use policies::{registry, PolicyError};

use crate::agent_cell::NATIVE;
use crate::run::Arm;

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

/// The runner's arms of policy texts ([`arms`]); without any text, foldbench's own policies
/// ([`policies::POLICIES`]), the arms a run takes by default.
pub fn arms_or_default(texts: &[String]) -> Result<Vec<Arm>, ArmError> {
    if texts.is_empty() {
        arms(&default_texts())
    } else {
        arms(texts)
    }
}

/// The policy texts of the arms a run takes when none is named: [`policies::POLICIES`].
pub fn default_texts() -> Vec<String> {
    policies::POLICIES.map(String::from).to_vec()
}

/// The runner's arm of an expanded arm.
pub fn arm(a: ArmText) -> Result<Arm, PolicyError> {
    Ok(Arm {
        policy: policies::parse_policy(&a.policy)?,
        label: a.label,
        sweep: a.sweep,
    })
}

/// Splits an `--arms` list: a comma starts a new arm when the next piece begins with a policy
/// name; otherwise it separates parameters of the same arm (commas in brackets never split).
pub fn split_arms(s: &str) -> Vec<String> {
    registry::current().split_arms(s)
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

    #[test]
    fn no_text_gives_foldbenchs_own_policies_and_native_is_none_without_compaction_off() {
        let default: Vec<String> = arms_or_default(&[])
            .unwrap()
            .into_iter()
            .map(|a| a.label)
            .collect();
        assert_eq!(default, policies::POLICIES);
        let given = arms_or_default(&["trim".to_string()]).unwrap();
        assert_eq!(given.len(), 1);
        assert_eq!(given[0].label, "trim");
        let native = expand(&[NATIVE.to_string()]).unwrap();
        assert_eq!(native[0].label, NATIVE);
        assert_eq!(native[0].policy, "none");
        assert_eq!(vocab_policy(NATIVE, "x").unwrap()[0].policy, "none");
    }

    #[test]
    fn an_arms_list_splits_where_a_policy_name_starts() {
        assert_eq!(split_arms("none,trim"), vec!["none", "trim"]);
        assert_eq!(
            split_arms("fold:timing=eager,fold:timing=pressure,pressure_tokens=9"),
            vec![
                "fold:timing=eager",
                "fold:timing=pressure,pressure_tokens=9"
            ]
        );
    }
}
