//! Sweeps: one policy text that stands for several arms.
//!
//! A parameter's value may be a list in brackets or a range of whole numbers:
//!
//! | written | values |
//! |---|---|
//! | `keep=[0,2,5]` | 0, 2, 5 |
//! | `keep=0..5` | 0, 1, 2, 3, 4, 5 (both ends included) |
//! | `card_after_tool_calls=5..20/5` | 5, 10, 15, 20 (a step after `/`) |
//! | `keep=[0..2,10]` | 0, 1, 2, 10 (ranges inside a list) |
//! | `mode=[drop,placeholder]` | drop, placeholder (any words) |
//!
//! Commas outside brackets separate parameters, so `card_after_tool_calls=[5,10,20],timing=eager`
//! is one parameter swept over three values and one fixed. Several swept parameters cross
//! (`keep=0..1,mode=[drop,placeholder]` is four arms), in the order written; in a pipeline
//! each step's sweeps cross the others'. An arm's label names its values: the text itself with
//! each value in place (`trim:keep=2`), or, under a label of its own, that label with the values
//! after it (`mine:keep=2`). A sweep may make at most [`MAX_POINTS`] arms.

use crate::error::SweepError;

/// The most arms one sweep may expand into.
pub const MAX_POINTS: usize = 1000;

/// One arm of a sweep: its policy text and the values it took.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Point {
    /// The policy text with every swept value in place.
    pub text: String,
    /// The swept parameters and the values of this arm, in the order written (empty when the
    /// text sweeps nothing).
    pub values: Vec<(String, String)>,
}

impl Point {
    /// The arm's label: the text itself when the arm is labelled by its text (`written` is the
    /// label and the text as written), else `label` with the values after it.
    pub fn label(&self, label: &str, written: &str) -> String {
        if label == written || self.values.is_empty() {
            return if label == written {
                self.text.clone()
            } else {
                label.to_string()
            };
        }
        let kv: Vec<String> = self
            .values
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect();
        let sep = if label.contains(':') { ',' } else { ':' };
        format!("{label}{sep}{}", kv.join(","))
    }
}

/// Whether a parameter's value is a sweep: a list in brackets or a range `A..B`.
pub fn is_sweep(v: &str) -> bool {
    let v = v.trim();
    (v.starts_with('[') && v.ends_with(']')) || range_parts(v).is_some()
}

fn range_parts(v: &str) -> Option<(&str, &str, Option<&str>)> {
    let (a, rest) = v.split_once("..")?;
    let (b, step) = match rest.split_once('/') {
        Some((b, s)) => (b, Some(s)),
        None => (rest, None),
    };
    let digits = |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || c == '_');
    let looks =
        |s: &str| !s.is_empty() && s.chars().all(|c| c.is_ascii_digit() || ".-_".contains(c));
    (looks(a) && looks(b) && step.is_none_or(|s| digits(s) || looks(s))).then_some((a, b, step))
}

/// The values of a parameter's value: itself, a list's items, or a range's numbers.
pub fn values(key: &str, v: &str) -> Result<Vec<String>, SweepError> {
    let v = v.trim();
    let kv = || (key.to_string(), v.to_string());
    if v.starts_with('[') && v.ends_with(']') {
        let inner = &v[1..v.len() - 1];
        if inner.trim().is_empty() {
            let (key, value) = kv();
            return Err(SweepError::EmptyList { key, value });
        }
        let mut out = Vec::new();
        for item in inner.split(',') {
            let item = item.trim();
            if item.is_empty() {
                let (key, value) = kv();
                return Err(SweepError::EmptyItem { key, value });
            }
            if item.contains('[') || item.contains(']') {
                let (key, value) = kv();
                return Err(SweepError::Nested { key, value });
            }
            out.extend(values(key, item)?);
        }
        return unique(key, v, out);
    }
    let Some((a, b, step)) = range_parts(v) else {
        return Ok(vec![v.to_string()]);
    };
    let whole = |s: &str| -> Result<u64, SweepError> {
        s.replace('_', "").parse::<u64>().map_err(|source| {
            let (key, value) = kv();
            SweepError::NotWhole { key, value, source }
        })
    };
    let (a, b) = (whole(a)?, whole(b)?);
    let step = match step {
        Some(s) => whole(s)?,
        None => 1,
    };
    if step == 0 {
        let (key, value) = kv();
        return Err(SweepError::ZeroStep { key, value });
    }
    if a > b {
        let (key, value) = kv();
        return Err(SweepError::Backwards {
            key,
            value,
            from: a,
            to: b,
        });
    }
    let n = (b - a) / step + 1;
    if n > MAX_POINTS as u64 {
        let (key, value) = kv();
        return Err(SweepError::TooManyValues {
            key,
            value,
            count: n,
            from: a,
            to: b,
        });
    }
    unique(key, v, (0..n).map(|i| (a + i * step).to_string()).collect())
}

fn unique(key: &str, v: &str, values: Vec<String>) -> Result<Vec<String>, SweepError> {
    for (i, x) in values.iter().enumerate() {
        if values[..i].contains(x) {
            return Err(SweepError::Twice {
                key: key.to_string(),
                value: v.to_string(),
                twice: x.clone(),
            });
        }
    }
    Ok(values)
}

/// Expands the `k=v` pairs of one policy (`name` and its pairs in the order written) into
/// points: the cross product of every swept parameter's values.
pub(crate) fn expand_pairs(
    name: &str,
    pairs: &[(String, String)],
) -> Result<Vec<Point>, SweepError> {
    let mut points = vec![Point {
        text: String::new(),
        values: Vec::new(),
    }];
    let mut rendered: Vec<Vec<(String, String)>> = vec![Vec::new()];
    for (k, v) in pairs {
        let vals = values(k, v)?;
        let swept = is_sweep(v);
        if points.len() * vals.len() > MAX_POINTS {
            return Err(SweepError::TooManyArms {
                policy: name.to_string(),
            });
        }
        let mut next_points = Vec::new();
        let mut next_rendered = Vec::new();
        for (p, r) in points.iter().zip(&rendered) {
            for x in &vals {
                let mut values = p.values.clone();
                if swept {
                    values.push((k.clone(), x.clone()));
                }
                let mut r = r.clone();
                r.push((k.clone(), x.clone()));
                next_points.push(Point {
                    text: String::new(),
                    values,
                });
                next_rendered.push(r);
            }
        }
        points = next_points;
        rendered = next_rendered;
    }
    for (p, r) in points.iter_mut().zip(rendered) {
        p.text = if r.is_empty() {
            name.to_string()
        } else {
            let kv: Vec<String> = r.iter().map(|(k, v)| format!("{k}={v}")).collect();
            format!("{name}:{}", kv.join(","))
        };
    }
    Ok(points)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn texts(name: &str, pairs: &[(&str, &str)]) -> Result<Vec<String>, SweepError> {
        let pairs: Vec<(String, String)> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        expand_pairs(name, &pairs).map(|p| p.into_iter().map(|p| p.text).collect())
    }

    #[test]
    fn values_of_lists_and_ranges() {
        let cases: [(&str, &[&str]); 7] = [
            ("3", &["3"]),
            ("0..3", &["0", "1", "2", "3"]),
            ("5..20/5", &["5", "10", "15", "20"]),
            ("5..19/5", &["5", "10", "15"]),
            ("[5,10,20]", &["5", "10", "20"]),
            ("[0..2, 10]", &["0", "1", "2", "10"]),
            ("[drop,placeholder]", &["drop", "placeholder"]),
        ];
        for (v, want) in cases {
            assert_eq!(values("k", v).unwrap(), want, "{v}");
        }
    }

    #[test]
    fn bad_sweeps_say_what_to_write() {
        let cases = [
            ("5..1", "write the smaller end first (k=1..5)"),
            ("0.5..0.9", "list them in brackets"),
            ("0..5/0", "the step must be at least 1"),
            ("[]", "the list is empty"),
            ("[1,,2]", "an empty item"),
            ("[1,1]", "the value 1 twice"),
            ("0..100000", "at most 1000 arms"),
            ("[[1]]", "lists do not nest"),
        ];
        for (v, want) in cases {
            let e = values("k", v).unwrap_err().to_string();
            assert!(e.contains(want), "{v}: {e}");
        }
    }

    #[test]
    fn swept_parameters_cross_in_the_order_written() {
        assert_eq!(
            texts("trim", &[("keep", "0..1"), ("mode", "[drop,placeholder]")]).unwrap(),
            [
                "trim:keep=0,mode=drop",
                "trim:keep=0,mode=placeholder",
                "trim:keep=1,mode=drop",
                "trim:keep=1,mode=placeholder"
            ]
        );
        assert_eq!(texts("none", &[]).unwrap(), ["none"]);
        let e = texts("trim", &[("a", "0..99"), ("b", "0..99")])
            .unwrap_err()
            .to_string();
        assert!(e.contains("more than 1000 arms"), "{e}");
    }

    #[test]
    fn labels_name_the_values() {
        let pairs = vec![("keep".to_string(), "0..1".to_string())];
        let points = expand_pairs("trim", &pairs).unwrap();
        assert_eq!(
            points[1].label("trim:keep=0..1", "trim:keep=0..1"),
            "trim:keep=1"
        );
        assert_eq!(points[1].label("mine", "trim:keep=0..1"), "mine:keep=1");
        assert_eq!(points[1].label("t:x", "trim:keep=0..1"), "t:x,keep=1");
    }
}
