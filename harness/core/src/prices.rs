//! The built-in price table: list prices of the common Claude and OpenAI models, so that a
//! replay of recorded sessions costs each request at its own model's price.
//!
//! Prices are dollars per million tokens, as Anthropic and OpenAI published them on
//! [`PRICES_DATE`]: input, cache write (Anthropic's 5-minute cache write; OpenAI charges no
//! cache write, so it is the input price), cache read (cached input) and output. Anthropic's
//! long-context rates (over 200k input tokens) and batch discounts are not modelled.
//!
//! A recorded model name matches a table name when it is that name, or that name followed by a
//! date (`claude-sonnet-4-20250514`, `gpt-5-2025-08-07`, `claude-sonnet-4@20250514`); a
//! provider prefix (`anthropic/`, `openai/`, `us.anthropic.`) is dropped first. The longest
//! matching name wins. A model matching no name is priced at the table's default and reported
//! as unknown ([`PriceSource::Default`]). Overrides ([`PriceTable::set`]) match the same way
//! and win over the built-in prices.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::Price;

/// The date the built-in prices were published as listed.
pub const PRICES_DATE: &str = "2025-11-24";

/// Name, input, cache write, cache read, output (dollars per million tokens).
const BUILTIN: &[(&str, f64, f64, f64, f64)] = &[
    ("claude-opus-4-5", 5.0, 6.25, 0.50, 25.0),
    ("claude-opus-4-1", 15.0, 18.75, 1.50, 75.0),
    ("claude-opus-4", 15.0, 18.75, 1.50, 75.0),
    ("claude-sonnet-4-5", 3.0, 3.75, 0.30, 15.0),
    ("claude-sonnet-4", 3.0, 3.75, 0.30, 15.0),
    ("claude-3-7-sonnet", 3.0, 3.75, 0.30, 15.0),
    ("claude-3-5-sonnet", 3.0, 3.75, 0.30, 15.0),
    ("claude-haiku-4-5", 1.0, 1.25, 0.10, 5.0),
    ("claude-3-5-haiku", 0.80, 1.0, 0.08, 4.0),
    ("claude-3-haiku", 0.25, 0.30, 0.03, 1.25),
    ("claude-3-opus", 15.0, 18.75, 1.50, 75.0),
    ("gpt-5.1", 1.25, 1.25, 0.125, 10.0),
    ("gpt-5.1-codex", 1.25, 1.25, 0.125, 10.0),
    ("gpt-5.1-codex-max", 1.25, 1.25, 0.125, 10.0),
    ("gpt-5.1-codex-mini", 0.25, 0.25, 0.025, 2.0),
    ("gpt-5", 1.25, 1.25, 0.125, 10.0),
    ("gpt-5-codex", 1.25, 1.25, 0.125, 10.0),
    ("gpt-5-mini", 0.25, 0.25, 0.025, 2.0),
    ("gpt-5-nano", 0.05, 0.05, 0.005, 0.40),
    ("gpt-4.1", 2.0, 2.0, 0.50, 8.0),
    ("gpt-4.1-mini", 0.40, 0.40, 0.10, 1.60),
    ("gpt-4.1-nano", 0.10, 0.10, 0.025, 0.40),
    ("gpt-4o", 2.50, 2.50, 1.25, 10.0),
    ("gpt-4o-mini", 0.15, 0.15, 0.075, 0.60),
    ("o3", 2.0, 2.0, 0.50, 8.0),
    ("o4-mini", 1.10, 1.10, 0.275, 4.40),
    ("codex-mini-latest", 1.50, 1.50, 0.375, 6.0),
];

/// Where a model's price came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PriceSource {
    /// An override given for that model.
    Override,
    /// The built-in table.
    BuiltIn,
    /// No price for the model (or the request names none): the default.
    Default,
}

/// A price from dollars per million tokens of each kind (the core's [`Price`] holds the input
/// price and multipliers of it).
pub fn per_million(input: f64, cache_write: f64, cache_read: f64, output: f64) -> Price {
    let of = |x: f64| if input > 0.0 { x / input } else { 0.0 };
    Price {
        input,
        cache_write: of(cache_write),
        cache_read: of(cache_read),
        output: of(output),
    }
}

/// The model name without a provider prefix, in lower case.
fn normalize(model: &str) -> String {
    let m = model.trim().to_ascii_lowercase();
    let m = match m.rfind('/') {
        Some(i) => m[i + 1..].to_string(),
        None => m,
    };
    match m.find("claude-") {
        Some(i) => m[i..].to_string(),
        None => m,
    }
}

/// Whether `model` (normalized) is `name` or `name` followed by a date.
fn matches(model: &str, name: &str) -> bool {
    let Some(rest) = model.strip_prefix(name) else {
        return false;
    };
    if rest.is_empty() {
        return true;
    }
    let b = rest.as_bytes();
    matches!(b[0], b'-' | b'@')
        && b.len() >= 5
        && b[1..5].iter().all(u8::is_ascii_digit)
        && b[1..3] == *b"20"
}

/// The longest of `names` that `model` matches.
fn best<'a>(model: &str, names: impl Iterator<Item = &'a str>) -> Option<&'a str> {
    let m = normalize(model);
    names
        .filter(|n| matches(&m, &normalize(n)))
        .max_by_key(|n| n.len())
}

/// The built-in price of a model: the table name it matched and the price.
pub fn builtin(model: &str) -> Option<(&'static str, Price)> {
    let name = best(model, BUILTIN.iter().map(|b| b.0))?;
    BUILTIN
        .iter()
        .find(|b| b.0 == name)
        .map(|&(n, i, w, r, o)| (n, per_million(i, w, r, o)))
}

/// The names of the built-in table, with their prices.
pub fn builtin_table() -> impl Iterator<Item = (&'static str, Price)> {
    BUILTIN
        .iter()
        .map(|&(n, i, w, r, o)| (n, per_million(i, w, r, o)))
}

/// Prices per model: overrides, then the built-in table, then the default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    /// Prices given for models by name (matched like the built-in names).
    pub overrides: BTreeMap<String, Price>,
    /// The price of a model none of the others names (and of requests that name no model).
    pub default: Price,
}

impl PriceTable {
    /// Sets the price of `model`; `default` sets the default.
    pub fn set(&mut self, model: &str, price: Price) {
        if model == "default" {
            self.default = price;
        } else {
            self.overrides.insert(model.to_string(), price);
        }
    }

    /// The price of a request of `model` (`None`: the request names no model), and where it
    /// came from.
    pub fn lookup(&self, model: Option<&str>) -> (Price, PriceSource) {
        let Some(model) = model else {
            return (self.default, PriceSource::Default);
        };
        if let Some(name) = best(model, self.overrides.keys().map(String::as_str)) {
            return (self.overrides[name], PriceSource::Override);
        }
        match builtin(model) {
            Some((_, p)) => (p, PriceSource::BuiltIn),
            None => (self.default, PriceSource::Default),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn a_dated_model_name_gets_its_family_price_and_the_longest_name_wins() {
        let t = PriceTable::default();
        let (p, src) = t.lookup(Some("claude-sonnet-4-20250514"));
        assert_eq!(src, PriceSource::BuiltIn);
        assert!(approx(p.input, 3.0) && approx(p.input * p.output, 15.0));
        assert!(approx(p.input * p.cache_read, 0.30));
        // Not Sonnet 4's price: the longer name matches.
        let (p, _) = t.lookup(Some("claude-opus-4-5-20251101"));
        assert!(approx(p.input, 5.0) && approx(p.input * p.output, 25.0));
        let (p, _) = t.lookup(Some("claude-opus-4-1-20250805"));
        assert!(approx(p.input, 15.0));
        let (p, _) = t.lookup(Some("gpt-5-codex"));
        assert!(approx(p.input, 1.25) && approx(p.input * p.cache_read, 0.125));
        assert!(
            approx(p.input * p.cache_write, 1.25),
            "OpenAI: no cache-write surcharge"
        );
        let (p, _) = t.lookup(Some("gpt-5-mini-2025-08-07"));
        assert!(approx(p.input, 0.25));
        let (p, _) = t.lookup(Some("anthropic/claude-3-5-haiku-20241022"));
        assert!(approx(p.input, 0.80));
        let (p, _) = t.lookup(Some("us.anthropic.claude-sonnet-4-5-20250929-v1:0"));
        assert!(approx(p.input, 3.0));
    }

    #[test]
    fn unknown_models_and_unnamed_requests_take_the_default() {
        let mut t = PriceTable::default();
        t.set("default", per_million(7.0, 7.0, 0.7, 21.0));
        for m in [
            Some("llama-3.1-70b"),
            Some("gpt-5-turbo"),
            Some("o3x"),
            None,
        ] {
            let (p, src) = t.lookup(m);
            assert_eq!(src, PriceSource::Default, "{m:?}");
            assert!(approx(p.input, 7.0), "{m:?}");
        }
        // A name that only starts like a table name is not that model.
        assert!(builtin("gpt-5-turbo").is_none());
        assert!(builtin("claude-sonnet-4-7").is_none());
    }

    #[test]
    fn an_override_wins_over_the_table_for_that_model_only() {
        let mut t = PriceTable::default();
        t.set("claude-sonnet-4", per_million(2.0, 2.5, 0.2, 10.0));
        let (p, src) = t.lookup(Some("claude-sonnet-4-20250514"));
        assert_eq!(src, PriceSource::Override);
        assert!(approx(p.input, 2.0) && approx(p.input * p.output, 10.0));
        let (p, src) = t.lookup(Some("claude-sonnet-4-5-20250929"));
        assert_eq!(
            src,
            PriceSource::BuiltIn,
            "another model keeps the table's price"
        );
        assert!(approx(p.input, 3.0));
    }
}
