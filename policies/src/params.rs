//! Policy specs as written on the command line and in matrix files: `NAME[:k=v,...]`.
//!
//! Commas separate parameters; a value in brackets (`[5,10,20]`) or a range (`0..5`) is a
//! sweep, which [`crate::sweep`] expands into one spec per value before anything is built. A
//! list-valued parameter (`exclude_tools=shell+grep`) joins its items with `+`. Which names
//! exist, and which take their text after the colon as it is (a pipeline, a command), is the
//! [registry](crate::registry)'s to say: [`crate::parse_policy`] reads a text through it.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{ParamError, PolicyError};

/// A policy name with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySpec {
    /// Policy name.
    pub name: String,
    /// Parameters as written.
    pub(crate) params: BTreeMap<String, String>,
    /// The text after the colon of a policy that reads it whole (a pipeline's steps), in
    /// canonical form; `None` for `k=v` policies.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub arg: Option<String>,
    /// Written with the `DELEGATE` modifier (`none+delegate`, `fold+delegate:timing=eager`):
    /// the runner offers the `delegate` tool, which starts a child session (docs/policies.md).
    /// The policy itself is the one named without it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub delegate: bool,
}

/// The modifier that adds the `delegate` tool to any policy named with it: `NAME+delegate`.
pub(crate) const DELEGATE: &str = "+delegate";

impl PolicySpec {
    /// A spec with parameters.
    pub(crate) fn new(name: impl Into<String>, params: BTreeMap<String, String>) -> PolicySpec {
        PolicySpec {
            name: name.into(),
            params,
            arg: None,
            delegate: false,
        }
    }

    /// The canonical label: `name`, `name:k=v,k=v` with keys sorted, or a whole-text policy's
    /// canonical text (a pipeline's steps joined by `|`).
    pub fn label(&self) -> String {
        if let Some(arg) = &self.arg {
            return if self.name == crate::pipeline::NAME {
                arg.clone()
            } else {
                format!("{}:{arg}", self.name)
            };
        }
        let name = if self.delegate {
            format!("{}{DELEGATE}", self.name)
        } else {
            self.name.clone()
        };
        if self.params.is_empty() {
            name
        } else {
            let kv: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("{name}:{}", kv.join(","))
        }
    }

    /// The parameters, to be taken one by one.
    pub(crate) fn params(&self) -> Params {
        Params {
            left: self.params.clone(),
        }
    }
}

/// Splits `s` at each `sep` outside brackets.
pub(crate) fn split_top(s: &str, sep: char) -> Vec<&str> {
    let mut out = Vec::new();
    let (mut depth, mut start) = (0i32, 0);
    for (i, c) in s.char_indices() {
        match c {
            '[' => depth += 1,
            ']' => depth -= 1,
            c if c == sep && depth == 0 => {
                out.push(&s[start..i]);
                start = i + c.len_utf8();
            }
            _ => {}
        }
    }
    out.push(&s[start..]);
    out
}

/// The `k=v` pairs of a parameter text (`keep=1,mode=placeholder`), in the order written.
/// A piece without `=` is refused with what to write instead: when it follows a parameter it
/// is most likely a value meant for a sweep.
pub(crate) fn parse_pairs(policy: &str, rest: &str) -> Result<Vec<(String, String)>, PolicyError> {
    let mut out: Vec<(String, String)> = Vec::new();
    for kv in split_top(rest, ',')
        .into_iter()
        .filter(|x| !x.trim().is_empty())
    {
        let Some((k, v)) = kv.split_once('=') else {
            return Err(PolicyError::NotKeyValue {
                policy: policy.to_string(),
                piece: kv.trim().to_string(),
                previous: out.last().cloned(),
            });
        };
        let (k, v) = (k.trim().to_string(), v.trim().to_string());
        if k.is_empty() {
            return Err(PolicyError::NoKey {
                policy: policy.to_string(),
                value: v,
            });
        }
        if out.iter().any(|(o, _)| *o == k) {
            return Err(PolicyError::Twice {
                policy: policy.to_string(),
                key: k,
            });
        }
        out.push((k, v));
    }
    Ok(out)
}

/// Parses `NAME[:k=v,...]` as a `k=v` policy, without the registry (no pipeline, no name
/// check): what the registry does for every policy that takes parameters.
pub(crate) fn parse_params_spec(s: &str) -> Result<PolicySpec, PolicyError> {
    let (name, rest) = match s.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (s.trim(), None),
    };
    if name.is_empty() {
        return Err(PolicyError::NoName(s.to_string()));
    }
    let mut params = BTreeMap::new();
    if let Some(rest) = rest {
        for (k, v) in parse_pairs(s.trim(), rest)? {
            if crate::sweep::is_sweep(&v) {
                return Err(PolicyError::SweepHere {
                    policy: s.trim().to_string(),
                    key: k,
                    value: v,
                });
            }
            params.insert(k, v);
        }
    }
    Ok(PolicySpec::new(name, params))
}

/// Parameters not yet taken; `Params::finish` reports the ones no policy knows.
#[derive(Debug)]
pub struct Params {
    left: BTreeMap<String, String>,
}

impl Params {
    /// Takes a non-negative integer (`_` separators allowed).
    pub fn take_u64(&mut self, key: &str) -> Result<Option<u64>, ParamError> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) => {
                v.replace('_', "")
                    .parse()
                    .map(Some)
                    .map_err(|source| ParamError::NotWhole {
                        key: key.to_string(),
                        value: v,
                        source,
                    })
            }
        }
    }

    /// Takes a positive integer that fits a `usize`.
    pub(crate) fn take_count(&mut self, key: &str) -> Result<Option<usize>, ParamError> {
        match self.take_u64(key)? {
            None => Ok(None),
            Some(0) => Err(ParamError::Zero {
                key: key.to_string(),
            }),
            Some(n) => usize::try_from(n)
                .map(Some)
                .map_err(|source| ParamError::Overflow {
                    key: key.to_string(),
                    value: n,
                    source,
                }),
        }
    }

    /// Takes a number.
    pub(crate) fn take_f64(&mut self, key: &str) -> Result<Option<f64>, ParamError> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                _ => Err(ParamError::NotPositive {
                    key: key.to_string(),
                    value: v,
                }),
            },
        }
    }

    /// Takes `true` or `false`.
    pub(crate) fn take_bool(&mut self, key: &str) -> Result<Option<bool>, ParamError> {
        match self.take_choice(key, &["true", "false"])?.as_deref() {
            None => Ok(None),
            Some(v) => Ok(Some(v == "true")),
        }
    }

    /// Takes a text as written.
    pub(crate) fn take_text(&mut self, key: &str) -> Option<String> {
        self.left.remove(key)
    }

    /// Takes a list written with `+` between its items (`shell+grep`).
    pub(crate) fn take_list(&mut self, key: &str) -> Result<Option<Vec<String>>, ParamError> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) => {
                let items: Vec<String> = v.split('+').map(|x| x.trim().to_string()).collect();
                if items.iter().any(String::is_empty) {
                    return Err(ParamError::NotList {
                        key: key.to_string(),
                        value: v,
                    });
                }
                Ok(Some(items))
            }
        }
    }

    /// Takes one of a set of words.
    pub(crate) fn take_choice(
        &mut self,
        key: &str,
        choices: &[&str],
    ) -> Result<Option<String>, ParamError> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) if choices.contains(&v.as_str()) => Ok(Some(v)),
            Some(v) => Err(ParamError::NotChoice {
                key: key.to_string(),
                value: v,
                choices: choices.iter().map(ToString::to_string).collect(),
            }),
        }
    }

    /// Fails on parameters nobody took, suggesting the nearest of `known`.
    pub(crate) fn finish(self, policy: &str, known: &[&str]) -> Result<(), PolicyError> {
        match self.left.into_keys().next() {
            None => Ok(()),
            Some(key) => Err(PolicyError::UnknownParam {
                policy: policy.to_string(),
                key,
                known: known.iter().map(ToString::to_string).collect(),
            }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_labels() {
        let p = crate::parse_policy("trim:mode=placeholder,keep=1").unwrap();
        assert_eq!(p.name, "trim");
        assert_eq!(p.label(), "trim:keep=1,mode=placeholder");
        assert!(crate::parse_policy("trim:keep").is_err());
        assert!(crate::parse_policy(":x=1").is_err());
        assert!(
            crate::build(&crate::parse_policy("trim:kep=1").unwrap(), 1000)
                .err()
                .unwrap()
                .to_string()
                .contains("no parameter `kep`")
        );
        assert!(crate::parse_policy("nope")
            .err()
            .unwrap()
            .to_string()
            .contains("unknown policy"));
        assert!(crate::build(&crate::parse_policy("compact:window=4000").unwrap(), 1000).is_ok());
    }

    #[test]
    fn commas_inside_brackets_stay_with_their_value() {
        assert_eq!(split_top("a=[1,2],b=3", ','), vec!["a=[1,2]", "b=3"]);
        assert_eq!(split_top("x|y:a=[1,2]|z", '|'), vec!["x", "y:a=[1,2]", "z"]);
    }
}
