//! The policies crate's errors: a policy text that does not read ([`PolicyError`]), a
//! parameter a policy refuses ([`ParamError`]), a sweep that does not expand ([`SweepError`]).
//!
//! Each error's `Display` is the whole message the command line prints, so an error wrapped in
//! another (a parameter's error in its policy's) is part of the outer message, and
//! [`std::error::Error::source`] gives only a cause the message does not already hold (the
//! number parser's error behind a value that is no whole number).
//!
//! A policy from outside this crate refuses its parameters in its own words:
//! `Err(PolicyError::Invalid(message))`, or `Err(message.into())` from a `String` or `&str`.

use std::num::{ParseIntError, TryFromIntError};

use harness_core::did_you_mean;

use crate::sweep::MAX_POINTS;

/// Why a policy text does not parse, check or build, or a registry refuses an entry.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PolicyError {
    /// A message as written: how a policy from outside this crate says what is wrong.
    #[error("{0}")]
    Invalid(String),
    /// A parameter's value the policy refuses.
    #[error(transparent)]
    Param(#[from] ParamError),
    /// A sweep that does not expand.
    #[error(transparent)]
    Sweep(#[from] SweepError),
    /// An error of the policy `policy` whose message does not name it.
    #[error("policy `{policy}`: {error}")]
    In {
        /// The policy's name.
        policy: String,
        /// What is wrong with it.
        error: Box<PolicyError>,
    },
    /// A piece of a parameter text without `=`.
    #[error("policy `{policy}`: parameter `{piece}` needs the form key=value{}", sweep_hint(.previous, .piece))]
    NotKeyValue {
        /// The policy text.
        policy: String,
        /// The piece, trimmed.
        piece: String,
        /// The parameter before it (key, value), which it most likely meant to sweep.
        previous: Option<(String, String)>,
    },
    /// `=value` with no key.
    #[error("policy `{policy}`: `={value}` has no parameter name")]
    NoKey {
        /// The policy text.
        policy: String,
        /// The value.
        value: String,
    },
    /// A parameter given twice.
    #[error("policy `{policy}`: parameter `{key}` is given twice")]
    Twice {
        /// The policy text.
        policy: String,
        /// The parameter.
        key: String,
    },
    /// A text with nothing before its colon.
    #[error("policy `{0}` has no name; write NAME or NAME:key=value,...")]
    NoName(String),
    /// A sweep where one policy is expected.
    #[error("policy `{policy}`: `{key}={value}` is a sweep; sweeps expand into arms where arms are given (run, ab, replay, the matrix file)")]
    SweepHere {
        /// The policy text.
        policy: String,
        /// The parameter.
        key: String,
        /// Its swept value.
        value: String,
    },
    /// A parameter the policy does not take.
    #[error("policy `{policy}` has no parameter `{key}`{}; {}", did_you_mean(.key, .known.iter().map(String::as_str)), its_parameters(.known))]
    UnknownParam {
        /// The policy's name.
        policy: String,
        /// The parameter given.
        key: String,
        /// The parameters it takes.
        known: Vec<String>,
    },
    /// A name no entry of the registry has.
    #[error("unknown policy `{name}`{}; `foldbench policies` lists them: {}", did_you_mean(.name, .known.iter().map(String::as_str)), .known.join(", "))]
    Unknown {
        /// The name given.
        name: String,
        /// The registry's names.
        known: Vec<String>,
    },
    /// A name a registry refuses.
    #[error("policy name {0:?} must be lowercase letters, digits, `-`, `_` and `+`")]
    BadName(String),
    /// A name a registry holds already.
    #[error("a policy named `{0}` is registered already")]
    Taken(String),
    /// A pipeline with an empty step.
    #[error("pipeline `{0}` has an empty step; write STEP|STEP, e.g. swe-agent:n=5|compact")]
    EmptyStep(String),
    /// A pipeline as a pipeline's step.
    #[error("pipeline `{0}`: a step cannot be a pipeline")]
    NestedPipeline(String),
    /// The `+delegate` modifier on a pipeline or one of its steps (the text as written).
    #[error("policy `{0}`: `+delegate` applies to one policy named by name, not to a pipeline or its step; write the pipeline without it")]
    DelegateInPipeline(String),
    /// Two steps of a pipeline adding a tool of the same name.
    #[error("two steps add the tool `{0}`; at most one step of a pipeline may be a fold policy")]
    ToolTwice(String),
}

impl PolicyError {
    /// Whether the message names its policy already (it begins `policy `), so that
    /// [`PolicyError::in_policy`] leaves it as it is.
    pub(crate) fn names_policy(&self) -> bool {
        match self {
            PolicyError::Invalid(m) => m.starts_with("policy "),
            PolicyError::Sweep(e) => matches!(e, SweepError::TooManyArms { .. }),
            PolicyError::In { .. }
            | PolicyError::NotKeyValue { .. }
            | PolicyError::NoKey { .. }
            | PolicyError::Twice { .. }
            | PolicyError::NoName(_)
            | PolicyError::SweepHere { .. }
            | PolicyError::UnknownParam { .. }
            | PolicyError::DelegateInPipeline(_)
            | PolicyError::BadName(_) => true,
            PolicyError::Param(_)
            | PolicyError::Unknown { .. }
            | PolicyError::Taken(_)
            | PolicyError::EmptyStep(_)
            | PolicyError::NestedPipeline(_)
            | PolicyError::ToolTwice(_) => false,
        }
    }

    /// The error as one of the policy `policy`'s: [`PolicyError::In`] unless it names its
    /// policy already.
    pub(crate) fn in_policy(self, policy: &str) -> PolicyError {
        if self.names_policy() {
            self
        } else {
            PolicyError::In {
                policy: policy.to_string(),
                error: Box::new(self),
            }
        }
    }
}

impl From<String> for PolicyError {
    fn from(message: String) -> PolicyError {
        PolicyError::Invalid(message)
    }
}

impl From<&str> for PolicyError {
    fn from(message: &str) -> PolicyError {
        PolicyError::Invalid(message.to_string())
    }
}

/// The message, for callers whose own errors are still text (their `?` keeps working).
impl From<PolicyError> for String {
    fn from(e: PolicyError) -> String {
        e.to_string()
    }
}

fn sweep_hint(previous: &Option<(String, String)>, piece: &str) -> String {
    match previous {
        Some((k, v)) => format!(
            "; to sweep `{k}` over several values write {k}=[{v},{piece}] (a comma outside brackets separates parameters)"
        ),
        None => String::new(),
    }
}

fn its_parameters(known: &[String]) -> String {
    if known.is_empty() {
        "it takes none".to_string()
    } else {
        format!("its parameters: {}", known.join(", "))
    }
}

/// Why a policy refuses a parameter's value (the registry adds the policy's name).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ParamError {
    /// Not a non-negative integer.
    #[error("parameter `{key}` must be a whole number, not `{value}`")]
    NotWhole {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// The parser's complaint.
        #[source]
        source: ParseIntError,
    },
    /// 0 where a count of at least 1 is expected.
    #[error("parameter `{key}` must be at least 1, not 0")]
    Zero {
        /// The parameter.
        key: String,
    },
    /// A count beyond what this machine's `usize` holds.
    #[error("parameter `{key}` is too large: {value}")]
    Overflow {
        /// The parameter.
        key: String,
        /// Its value.
        value: u64,
        /// The conversion's complaint.
        #[source]
        source: TryFromIntError,
    },
    /// A whole number beyond what the policy counts in.
    #[error("parameter `{key}` is too large")]
    TooLarge {
        /// The parameter.
        key: String,
    },
    /// Not a positive, finite number.
    #[error("parameter `{key}` must be a positive number, not `{value}`")]
    NotPositive {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// A list with an empty item.
    #[error("parameter `{key}` is a list of names joined by `+` (shell+grep), not `{value}`")]
    NotList {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// A word not among the choices.
    #[error("parameter `{key}` must be one of {}, not `{value}`{}", .choices.join(", "), did_you_mean(.value, .choices.iter().map(String::as_str)))]
    NotChoice {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// The words it takes.
        choices: Vec<String>,
    },
    /// A value outside what the parameter means: `rule` says what it is (`is a percentage (0
    /// to 100)`).
    #[error("parameter `{key}` {rule}")]
    OutOfRange {
        /// The parameter.
        key: String,
        /// What the parameter is, and the value given when it helps.
        rule: String,
    },
    /// Parameters that do not go together; the message names them and what to change.
    #[error("{0}")]
    Conflict(String),
}

/// Why a parameter's sweep (`[a,b]`, `A..B`, `A..B/STEP`) does not expand.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum SweepError {
    /// `[]`.
    #[error("`{key}={value}`: the list is empty; give at least one value")]
    EmptyList {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// `[1,,2]`.
    #[error("`{key}={value}`: the list has an empty item")]
    EmptyItem {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// `[[1]]`.
    #[error("`{key}={value}`: lists do not nest")]
    Nested {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// A range end or step that is no whole number.
    #[error("`{key}={value}`: a range takes whole numbers (A..B or A..B/STEP); for other values list them in brackets, e.g. {key}=[0.5,0.7,0.9]")]
    NotWhole {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// The parser's complaint.
        #[source]
        source: ParseIntError,
    },
    /// `A..B/0`.
    #[error("`{key}={value}`: the step must be at least 1")]
    ZeroStep {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
    },
    /// `5..1`.
    #[error("`{key}={value}`: the range runs backwards; write the smaller end first ({key}={to}..{from})")]
    Backwards {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// The first end as written.
        from: u64,
        /// The second end.
        to: u64,
    },
    /// A range of more than [`MAX_POINTS`] values.
    #[error("`{key}={value}` has {count} values; a sweep makes at most {MAX_POINTS} arms (give a step: {key}={from}..{to}/STEP)")]
    TooManyValues {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// How many values it gives.
        count: u64,
        /// The first end.
        from: u64,
        /// The second end.
        to: u64,
    },
    /// A value given twice.
    #[error("`{key}={value}` gives the value {twice} twice")]
    Twice {
        /// The parameter.
        key: String,
        /// Its value as written.
        value: String,
        /// The value given twice.
        twice: String,
    },
    /// Sweeps that cross into more than [`MAX_POINTS`] arms.
    #[error("policy `{policy}`: the sweep makes more than {MAX_POINTS} arms; sweep fewer values")]
    TooManyArms {
        /// The policy text.
        policy: String,
    },
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse_int() -> ParseIntError {
        "x".parse::<u64>().unwrap_err()
    }

    /// One of each variant (the parameter errors and the sweep errors as the registry wraps
    /// them), for the checks below.
    fn every_error() -> Vec<PolicyError> {
        let (key, value) = ("k".to_string(), "v".to_string());
        let param = [
            ParamError::NotWhole {
                key: key.clone(),
                value: value.clone(),
                source: parse_int(),
            },
            ParamError::Zero { key: key.clone() },
            ParamError::Overflow {
                key: key.clone(),
                value: 1,
                source: u8::try_from(300u64).unwrap_err(),
            },
            ParamError::TooLarge { key: key.clone() },
            ParamError::NotPositive {
                key: key.clone(),
                value: value.clone(),
            },
            ParamError::NotList {
                key: key.clone(),
                value: value.clone(),
            },
            ParamError::NotChoice {
                key: key.clone(),
                value: value.clone(),
                choices: vec!["a".into()],
            },
            ParamError::OutOfRange {
                key: key.clone(),
                rule: "is small".into(),
            },
            ParamError::Conflict("`a` must be less than `b`".into()),
        ];
        let kv = || (key.clone(), value.clone());
        let sweep = [
            SweepError::EmptyList {
                key: kv().0,
                value: kv().1,
            },
            SweepError::EmptyItem {
                key: kv().0,
                value: kv().1,
            },
            SweepError::Nested {
                key: kv().0,
                value: kv().1,
            },
            SweepError::NotWhole {
                key: kv().0,
                value: kv().1,
                source: parse_int(),
            },
            SweepError::ZeroStep {
                key: kv().0,
                value: kv().1,
            },
            SweepError::Backwards {
                key: kv().0,
                value: kv().1,
                from: 2,
                to: 1,
            },
            SweepError::TooManyValues {
                key: kv().0,
                value: kv().1,
                count: 2000,
                from: 0,
                to: 1999,
            },
            SweepError::Twice {
                key: kv().0,
                value: kv().1,
                twice: "1".into(),
            },
            SweepError::TooManyArms { policy: "p".into() },
        ];
        let mut all: Vec<PolicyError> = param.into_iter().map(PolicyError::from).collect();
        all.extend(sweep.into_iter().map(PolicyError::from));
        all.extend([
            PolicyError::Invalid("my own words".into()),
            PolicyError::Invalid("policy `mine`: my own words".into()),
            PolicyError::Invalid("x".into()).in_policy("p"),
            PolicyError::NotKeyValue {
                policy: "p".into(),
                piece: "x".into(),
                previous: None,
            },
            PolicyError::NoKey {
                policy: "p".into(),
                value: "1".into(),
            },
            PolicyError::Twice {
                policy: "p".into(),
                key: kv().0,
            },
            PolicyError::NoName(":x".into()),
            PolicyError::SweepHere {
                policy: "p".into(),
                key: kv().0,
                value: kv().1,
            },
            PolicyError::UnknownParam {
                policy: "p".into(),
                key: kv().0,
                known: vec![],
            },
            PolicyError::Unknown {
                name: "p".into(),
                known: vec!["q".into()],
            },
            PolicyError::BadName("P".into()),
            PolicyError::Taken("p".into()),
            PolicyError::EmptyStep("a||b".into()),
            PolicyError::NestedPipeline("a|pipeline:b".into()),
            PolicyError::ToolTwice("fold_unit".into()),
        ]);
        all
    }

    #[test]
    fn an_error_names_its_policy_exactly_when_its_message_begins_with_it() {
        for e in every_error() {
            assert_eq!(
                e.names_policy(),
                e.to_string().starts_with("policy "),
                "{e}"
            );
            let wrapped = e.clone().in_policy("p").to_string();
            if e.names_policy() {
                assert_eq!(wrapped, e.to_string());
            } else {
                assert_eq!(wrapped, format!("policy `p`: {e}"));
            }
        }
    }

    #[test]
    fn a_cause_outside_the_message_is_its_source() {
        use std::error::Error as _;
        for e in every_error() {
            let source = e.source().map(ToString::to_string);
            let parse = matches!(
                e,
                PolicyError::Param(ParamError::NotWhole { .. })
                    | PolicyError::Sweep(SweepError::NotWhole { .. })
            );
            let overflow = matches!(e, PolicyError::Param(ParamError::Overflow { .. }));
            assert_eq!(source.is_some(), parse || overflow, "{e}");
            if let Some(s) = source {
                assert!(!e.to_string().contains(&s), "{e} repeats {s}");
            }
        }
        let own: PolicyError = format!("turns must be at least {}", 1).into();
        assert_eq!(own, PolicyError::Invalid("turns must be at least 1".into()));
        assert_eq!(String::from(own), "turns must be at least 1");
    }
}
