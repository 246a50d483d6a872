//! Policy specs as written on the command line and in matrix files: `NAME[:k=v,...]`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A policy name with its parameters.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PolicySpec {
    /// Policy name.
    pub name: String,
    /// Parameters as written.
    pub params: BTreeMap<String, String>,
}

impl PolicySpec {
    /// The canonical label: `name` or `name:k=v,k=v` with keys sorted.
    pub fn label(&self) -> String {
        if self.params.is_empty() {
            self.name.clone()
        } else {
            let kv: Vec<String> = self
                .params
                .iter()
                .map(|(k, v)| format!("{k}={v}"))
                .collect();
            format!("{}:{}", self.name, kv.join(","))
        }
    }

    /// The parameters, to be taken one by one.
    pub fn params(&self) -> Params {
        Params {
            left: self.params.clone(),
        }
    }
}

/// Parses `NAME[:k=v,...]`.
pub fn parse_policy(s: &str) -> Result<PolicySpec, String> {
    let (name, rest) = match s.split_once(':') {
        Some((n, r)) => (n.trim(), Some(r)),
        None => (s.trim(), None),
    };
    if name.is_empty() {
        return Err(format!(
            "policy `{s}` has no name; write NAME or NAME:key=value,..."
        ));
    }
    let mut params = BTreeMap::new();
    if let Some(rest) = rest {
        for kv in rest.split(',').filter(|x| !x.trim().is_empty()) {
            let Some((k, v)) = kv.split_once('=') else {
                return Err(format!(
                    "policy `{s}`: parameter `{kv}` needs the form key=value"
                ));
            };
            params.insert(k.trim().to_string(), v.trim().to_string());
        }
    }
    Ok(PolicySpec {
        name: name.to_string(),
        params,
    })
}

/// Parameters not yet taken; [`Params::finish`] reports the ones no policy knows.
#[derive(Debug)]
pub struct Params {
    left: BTreeMap<String, String>,
}

impl Params {
    /// Takes a non-negative integer (`_` separators allowed).
    pub fn take_u64(&mut self, key: &str) -> Result<Option<u64>, String> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) => v
                .replace('_', "")
                .parse()
                .map(Some)
                .map_err(|_| format!("parameter `{key}` must be a whole number, not `{v}`")),
        }
    }

    /// Takes a number.
    pub fn take_f64(&mut self, key: &str) -> Result<Option<f64>, String> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) => match v.parse::<f64>() {
                Ok(x) if x.is_finite() && x > 0.0 => Ok(Some(x)),
                _ => Err(format!(
                    "parameter `{key}` must be a positive number, not `{v}`"
                )),
            },
        }
    }

    /// Takes one of a set of words.
    pub fn take_choice(&mut self, key: &str, choices: &[&str]) -> Result<Option<String>, String> {
        match self.left.remove(key) {
            None => Ok(None),
            Some(v) if choices.contains(&v.as_str()) => Ok(Some(v)),
            Some(v) => Err(format!(
                "parameter `{key}` must be one of {}, not `{v}`",
                choices.join(", ")
            )),
        }
    }

    /// Fails on parameters nobody took.
    pub fn finish(self, policy: &str) -> Result<(), String> {
        match self.left.keys().next() {
            None => Ok(()),
            Some(k) => Err(format!("policy `{policy}` has no parameter `{k}`")),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_labels() {
        let p = parse_policy("trim:mode=placeholder,keep=1").unwrap();
        assert_eq!(p.name, "trim");
        assert_eq!(p.label(), "trim:keep=1,mode=placeholder");
        assert!(parse_policy("trim:keep").is_err());
        assert!(parse_policy(":x=1").is_err());
        assert!(crate::build(&parse_policy("trim:kep=1").unwrap(), 1000)
            .err()
            .unwrap()
            .contains("no parameter `kep`"));
        assert!(crate::build(&parse_policy("nope").unwrap(), 1000)
            .err()
            .unwrap()
            .contains("unknown policy"));
        assert!(crate::build(&parse_policy("compact:window=4000").unwrap(), 1000).is_ok());
    }
}
