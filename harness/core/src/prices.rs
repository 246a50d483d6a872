//! The built-in price table: list prices of the common Claude and OpenAI models, so that a
//! replay of recorded sessions costs each request at its own model's price, and the one
//! grammar of a price flag (`--price` of replay and judge).
//!
//! Prices are dollars per million tokens. Each row names its provider's [`Scheme`] — how the
//! provider prices the cache — and its [`Source`] (where and when the figures were read):
//!
//! - [`Scheme::Anthropic`]: a cache write (the 5-minute cache) costs 1.25× the input price, a
//!   cache read 0.1×; a row gives input and output.
//! - [`Scheme::OpenAi`]: cached input is discounted (its price is listed per model), and there
//!   is no cache-write premium (a cache write costs the input price); a row gives input, cached
//!   input and output.
//!
//! Anthropic's long-context rates (over 200k input tokens) and batch discounts are not modelled.
//!
//! A recorded model name matches a table name when it is that name, or that name followed by a
//! date (`claude-sonnet-4-20250514`, `gpt-5-2025-08-07`, `claude-sonnet-4@20250514`); a
//! provider prefix (`anthropic/`, `openai/`, `us.anthropic.`) is dropped first. The longest
//! matching name wins. A model matching no name is priced at the table's default and reported
//! as unknown ([`PriceSource::Default`]). Overrides (`PriceTable::set`) match the same way
//! and win over the built-in prices.
//!
//! A price flag is `[MODEL=][SCHEME:]PRICE` (`parse_flag`), PRICE one of
//! `INPUT` (dollars per million input tokens; the rest from the scheme's ratios),
//! `INPUT/OUTPUT` (both in dollars; the cache from the scheme) or
//! `input=…,cache_write=…,cache_read=…,output=…` (input in dollars, the other three
//! multipliers of it; any left out from the scheme). SCHEME is `anthropic` or `openai`; left
//! out, it is the model's (`Scheme::of_model`), else Anthropic's (the default price's).

use std::collections::BTreeMap;

use serde::Serialize;

use crate::metrics::Price;

/// The highest price a flag takes, in dollars per million tokens.
pub(crate) const MAX_PRICE: f64 = 10_000.0;

/// Where a row's figures were read: a page and the date it was read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Source {
    /// The page.
    pub(crate) url: &'static str,
    /// When it was read (`YYYY-MM-DD`, or `YYYY-MM` where only the month is known).
    pub read: &'static str,
    /// Whose figures they are: the provider's own page, or a secondary source (and what it
    /// reports).
    pub note: &'static str,
}

/// Anthropic's pricing page, for the current Claude models (Opus 4.5–4.8 and 5, Sonnet 4–4.6,
/// Haiku 4.5).
pub(crate) const ANTHROPIC: Source = Source {
    url: "https://platform.claude.com/docs/en/about-claude/pricing",
    read: "2026-12",
    note: "Anthropic's pricing page",
};

/// Anthropic's pricing page as it listed the older Claude models.
pub(crate) const ANTHROPIC_2025: Source = Source {
    url: "https://docs.anthropic.com/en/docs/about-claude/pricing",
    read: "2025-11-24",
    note: "Anthropic's pricing page",
};

/// OpenAI's pricing page as it listed the GPT-5.1, GPT-5, GPT-4.1, GPT-4o, o-series and
/// codex-mini models.
pub(crate) const OPENAI_2025: Source = Source {
    url: "https://platform.openai.com/docs/pricing",
    read: "2025-11-24",
    note: "OpenAI's pricing page",
};

/// A secondary source for GPT-5.4, GPT-5.3-Codex and GPT-5.2: the `codex-ops` crate's copy of
/// OpenAI's Codex rate card (credits per million tokens, 25 credits = $1), checked 2026-05-13.
pub(crate) const OPENAI_CODEX_RATE_CARD: Source = Source {
    url: "https://docs.rs/crate/codex-ops/0.1.3/source/data/codex-rate-card.json",
    read: "2026-12-03",
    note: "secondary source: a copy of OpenAI's Codex rate card (checked 2026-05-13 by its author), credits at 25 per dollar",
};

/// A secondary source for GPT-5.2-Codex (input and output; its cached input is GPT-5.2's).
pub(crate) const OPENAI_GPT_5_2_CODEX: Source = Source {
    url: "https://aicoach.pw/marketplace/llm/gpt-5-2-codex",
    read: "2026-12-03",
    note: "secondary source: a model catalogue listing input and output; cached input as GPT-5.2's",
};

/// How a provider prices the prompt cache, and the ratios a price given as one number takes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Scheme {
    /// Cache write 1.25× input, cache read 0.1× input (output 5× input where a price gives
    /// only the input: every current Claude model's ratio).
    Anthropic,
    /// No cache-write premium (1× input), a discounted cached input (0.1× where a price gives
    /// only the input, as the GPT-5 family), output 8× input where a price gives only the input
    /// (GPT-5, 5.1, 5.2).
    OpenAi,
}

impl Scheme {
    /// `anthropic` or `openai`.
    pub fn name(self) -> &'static str {
        match self {
            Scheme::Anthropic => "anthropic",
            Scheme::OpenAi => "openai",
        }
    }

    /// The scheme a name gives (`anthropic`, `openai`).
    pub(crate) fn from_name(name: &str) -> Option<Scheme> {
        match name.trim().to_ascii_lowercase().as_str() {
            "anthropic" => Some(Scheme::Anthropic),
            "openai" => Some(Scheme::OpenAi),
            _ => None,
        }
    }

    /// The scheme of a model: its built-in row's, else by its name (`claude…` Anthropic;
    /// `gpt…`, `o1…`, `o3…`, `o4…`, `codex…` OpenAI); `None` for a name that tells neither.
    pub(crate) fn of_model(model: &str) -> Option<Scheme> {
        if let Some(b) = builtin(model) {
            return Some(b.scheme);
        }
        let m = normalize(model);
        if m.starts_with("claude") {
            Some(Scheme::Anthropic)
        } else if ["gpt", "o1", "o3", "o4", "codex"]
            .iter()
            .any(|p| m.starts_with(p))
        {
            Some(Scheme::OpenAi)
        } else {
            None
        }
    }

    /// The cache-write multiplier (of the input price).
    pub(crate) fn cache_write(self) -> f64 {
        match self {
            Scheme::Anthropic => 1.25,
            Scheme::OpenAi => 1.0,
        }
    }

    /// The cache-read multiplier a price that gives none takes.
    pub(crate) fn cache_read(self) -> f64 {
        0.1
    }

    /// The output multiplier a price that gives none takes.
    pub(crate) fn output(self) -> f64 {
        match self {
            Scheme::Anthropic => 5.0,
            Scheme::OpenAi => 8.0,
        }
    }

    /// The price of `input` dollars per million input tokens under this scheme.
    pub(crate) fn price(self, input: f64) -> Price {
        Price {
            input,
            cache_write: self.cache_write(),
            cache_read: self.cache_read(),
            output: self.output(),
        }
    }
}

/// A row's figures, dollars per million tokens, in its provider's scheme.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Rates {
    /// Input and output; the cache from [`Scheme::Anthropic`].
    Anthropic { input: f64, output: f64 },
    /// Input, cached input and output; cache writes at the input price.
    OpenAi {
        input: f64,
        cached: f64,
        output: f64,
    },
}

/// One built-in row.
struct Row {
    name: &'static str,
    rates: Rates,
    source: &'static Source,
}

const fn claude(name: &'static str, input: f64, output: f64, source: &'static Source) -> Row {
    Row {
        name,
        rates: Rates::Anthropic { input, output },
        source,
    }
}

const fn openai(
    name: &'static str,
    input: f64,
    cached: f64,
    output: f64,
    source: &'static Source,
) -> Row {
    Row {
        name,
        rates: Rates::OpenAi {
            input,
            cached,
            output,
        },
        source,
    }
}

const BUILTIN: &[Row] = &[
    claude("claude-opus-5", 5.0, 25.0, &ANTHROPIC),
    claude("claude-opus-4-8", 5.0, 25.0, &ANTHROPIC),
    claude("claude-opus-4-7", 5.0, 25.0, &ANTHROPIC),
    claude("claude-opus-4-6", 5.0, 25.0, &ANTHROPIC),
    claude("claude-opus-4-5", 5.0, 25.0, &ANTHROPIC),
    claude("claude-sonnet-4-6", 3.0, 15.0, &ANTHROPIC),
    claude("claude-sonnet-4-5", 3.0, 15.0, &ANTHROPIC),
    claude("claude-sonnet-4", 3.0, 15.0, &ANTHROPIC),
    claude("claude-haiku-4-5", 1.0, 5.0, &ANTHROPIC),
    claude("claude-opus-4-1", 15.0, 75.0, &ANTHROPIC_2025),
    claude("claude-opus-4", 15.0, 75.0, &ANTHROPIC_2025),
    claude("claude-3-7-sonnet", 3.0, 15.0, &ANTHROPIC_2025),
    claude("claude-3-5-sonnet", 3.0, 15.0, &ANTHROPIC_2025),
    claude("claude-3-5-haiku", 0.80, 4.0, &ANTHROPIC_2025),
    claude("claude-3-haiku", 0.25, 1.25, &ANTHROPIC_2025),
    claude("claude-3-opus", 15.0, 75.0, &ANTHROPIC_2025),
    openai("gpt-5.4", 2.50, 0.25, 15.0, &OPENAI_CODEX_RATE_CARD),
    openai("gpt-5.3-codex", 1.75, 0.175, 14.0, &OPENAI_CODEX_RATE_CARD),
    openai("gpt-5.2", 1.75, 0.175, 14.0, &OPENAI_CODEX_RATE_CARD),
    openai("gpt-5.2-codex", 1.75, 0.175, 14.0, &OPENAI_GPT_5_2_CODEX),
    openai("gpt-5.1", 1.25, 0.125, 10.0, &OPENAI_2025),
    openai("gpt-5.1-codex", 1.25, 0.125, 10.0, &OPENAI_2025),
    openai("gpt-5.1-codex-max", 1.25, 0.125, 10.0, &OPENAI_2025),
    openai("gpt-5.1-codex-mini", 0.25, 0.025, 2.0, &OPENAI_2025),
    openai("gpt-5", 1.25, 0.125, 10.0, &OPENAI_2025),
    openai("gpt-5-codex", 1.25, 0.125, 10.0, &OPENAI_2025),
    openai("gpt-5-mini", 0.25, 0.025, 2.0, &OPENAI_2025),
    openai("gpt-5-nano", 0.05, 0.005, 0.40, &OPENAI_2025),
    openai("gpt-4.1", 2.0, 0.50, 8.0, &OPENAI_2025),
    openai("gpt-4.1-mini", 0.40, 0.10, 1.60, &OPENAI_2025),
    openai("gpt-4.1-nano", 0.10, 0.025, 0.40, &OPENAI_2025),
    openai("gpt-4o", 2.50, 1.25, 10.0, &OPENAI_2025),
    openai("gpt-4o-mini", 0.15, 0.075, 0.60, &OPENAI_2025),
    openai("o3", 2.0, 0.50, 8.0, &OPENAI_2025),
    openai("o4-mini", 1.10, 0.275, 4.40, &OPENAI_2025),
    openai("codex-mini-latest", 1.50, 0.375, 6.0, &OPENAI_2025),
];

impl Row {
    fn scheme(&self) -> Scheme {
        match self.rates {
            Rates::Anthropic { .. } => Scheme::Anthropic,
            Rates::OpenAi { .. } => Scheme::OpenAi,
        }
    }

    fn price(&self) -> Price {
        let s = self.scheme();
        let (input, read, output) = match self.rates {
            Rates::Anthropic { input, output } => (input, input * s.cache_read(), output),
            Rates::OpenAi {
                input,
                cached,
                output,
            } => (input, cached, output),
        };
        per_million(input, input * s.cache_write(), read, output)
    }

    fn builtin(&self) -> Builtin {
        Builtin {
            name: self.name,
            scheme: self.scheme(),
            price: self.price(),
            source: self.source,
        }
    }
}

/// A built-in row: its name, scheme, price and source.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Builtin {
    /// The table name (`claude-sonnet-4`).
    pub name: &'static str,
    /// The provider's scheme.
    pub scheme: Scheme,
    /// The price.
    pub(crate) price: Price,
    /// Where the figures were read.
    pub source: &'static Source,
}

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
pub(crate) fn per_million(input: f64, cache_write: f64, cache_read: f64, output: f64) -> Price {
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

/// The built-in row a model matches.
pub fn builtin(model: &str) -> Option<Builtin> {
    let name = best(model, BUILTIN.iter().map(|b| b.name))?;
    BUILTIN.iter().find(|b| b.name == name).map(Row::builtin)
}

/// Prices per model: overrides, then the built-in table, then the default.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct PriceTable {
    /// Prices given for models by name (matched like the built-in names).
    pub(crate) overrides: BTreeMap<String, Price>,
    /// The price of a model none of the others names (and of requests that name no model).
    pub default: Price,
}

impl PriceTable {
    /// Sets the price of `model`; `default` sets the default.
    pub(crate) fn set(&mut self, model: &str, price: Price) {
        if model == "default" {
            self.default = price;
        } else {
            self.overrides.insert(model.to_string(), price);
        }
    }

    /// The table of the price flags (`parse_flag`, in order: a later flag for the same
    /// model wins).
    pub fn from_flags(flags: &[String]) -> Result<PriceTable, PriceError> {
        let mut table = PriceTable::default();
        for f in flags {
            let (model, price) = parse_flag(f)?;
            table.set(&model, price);
        }
        Ok(table)
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
            Some(b) => (b.price, PriceSource::BuiltIn),
            None => (self.default, PriceSource::Default),
        }
    }
}

/// Why a price flag or a PRICE is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PriceError {
    /// `=PRICE` with nothing before the `=`.
    #[error("`{0}` names no model before `=`; write MODEL=PRICE (gpt-5=1.25) or PRICE alone for the default")]
    NoModel(String),
    /// The PRICE of a flag is refused.
    #[error("`{flag}`: {error}")]
    InFlag {
        /// The flag as given.
        flag: String,
        /// What is wrong with its PRICE.
        error: Box<PriceError>,
    },
    /// A scheme that is neither `anthropic` nor `openai`.
    #[error("`{0}` is not a price scheme; write anthropic:PRICE or openai:PRICE, or leave the scheme out to take the model's")]
    NoScheme(String),
    /// No number at all.
    #[error("no price given; {FORMS}")]
    Empty,
    /// `INPUT/OUTPUT/...`.
    #[error("`{0}` has more than INPUT/OUTPUT; {FORMS}")]
    TooManyParts(String),
    /// A piece of `input=…,…` without `=`.
    #[error("`{0}` is not key=value; {FORMS}")]
    NotKeyValue(String),
    /// A key other than the four prices.
    #[error("unknown price `{0}`; expected input, cache_write, cache_read or output")]
    UnknownKey(String),
    /// A number outside 0 to `MAX_PRICE`.
    #[error("{0} is outside 0 to {MAX_PRICE}; give dollars per million tokens, such as 3")]
    OutOfRange(String),
    /// No number.
    #[error("`{value}` is not a number; give dollars per million tokens, such as 3")]
    NotNumber {
        /// The text as given.
        value: String,
        /// The parser's complaint.
        #[source]
        source: std::num::ParseFloatError,
    },
}

/// The example forms a price error suggests.
const FORMS: &str = "give 3 (input $/M), 3/15 (input/output $/M), openai:1.75 (the scheme's ratios) or input=3,cache_write=1.25,cache_read=0.1,output=5 (multipliers of input)";

/// One price flag, `[MODEL=][SCHEME:]PRICE`: the model it prices (`default` without one) and
/// the price. See the module's docs for the grammar.
pub(crate) fn parse_flag(flag: &str) -> Result<(String, Price), PriceError> {
    let keys = ["input", "cache_write", "cache_read", "output"];
    // `input=3`, `openai:input=3`: a PRICE alone, not MODEL=PRICE.
    let is_key = |m: &str| {
        let m = m.trim();
        let bare = match m.split_once(':') {
            Some((s, k)) if Scheme::from_name(s).is_some() => k,
            _ => m,
        };
        keys.contains(&bare.trim())
    };
    let (model, text) = match flag.split_once('=') {
        Some((m, rest)) if !is_key(m) => (m.trim(), rest),
        _ => ("default", flag),
    };
    if model.is_empty() {
        return Err(PriceError::NoModel(flag.to_string()));
    }
    let scheme = if model == "default" {
        None
    } else {
        Scheme::of_model(model)
    };
    let price = parse_price(text, scheme).map_err(|e| PriceError::InFlag {
        flag: flag.to_string(),
        error: Box::new(e),
    })?;
    Ok((model.to_string(), price))
}

/// A PRICE, `[SCHEME:]INPUT`, `[SCHEME:]INPUT/OUTPUT` or `[SCHEME:]input=…,…`; `scheme` is the
/// one to take where the text names none (`None`: Anthropic's, the default price's).
pub fn parse_price(text: &str, scheme: Option<Scheme>) -> Result<Price, PriceError> {
    let (scheme, text) = match text.split_once(':') {
        Some((s, rest)) => match Scheme::from_name(s) {
            Some(s) => (s, rest),
            None => return Err(PriceError::NoScheme(s.trim().to_string())),
        },
        None => (scheme.unwrap_or(Scheme::Anthropic), text),
    };
    let text = text.trim();
    if text.is_empty() {
        return Err(PriceError::Empty);
    }
    if !text.contains('=') {
        let mut parts = text.split('/');
        let input = dollars(parts.next().unwrap_or(""))?;
        let mut p = scheme.price(input);
        if let Some(out) = parts.next() {
            let out = dollars(out)?;
            p.output = if input > 0.0 { out / input } else { 0.0 };
        }
        if parts.next().is_some() {
            return Err(PriceError::TooManyParts(text.to_string()));
        }
        return Ok(p);
    }
    let mut p = scheme.price(Price::default().input);
    for kv in text.split(',').filter(|k| !k.trim().is_empty()) {
        let (k, v) = kv
            .split_once('=')
            .ok_or_else(|| PriceError::NotKeyValue(kv.to_string()))?;
        let x = dollars(v)?;
        match k.trim() {
            "input" => p.input = x,
            "cache_write" => p.cache_write = x,
            "cache_read" => p.cache_read = x,
            "output" => p.output = x,
            other => return Err(PriceError::UnknownKey(other.to_string())),
        }
    }
    Ok(p)
}

/// A number from 0 to [`MAX_PRICE`].
fn dollars(s: &str) -> Result<f64, PriceError> {
    let s = s.trim();
    match s.parse::<f64>() {
        Ok(x) if (0.0..=MAX_PRICE).contains(&x) => Ok(x),
        Ok(_) => Err(PriceError::OutOfRange(s.to_string())),
        Err(source) => Err(PriceError::NotNumber {
            value: s.to_string(),
            source,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn approx(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    /// Input, cache write, cache read and output in dollars per million.
    fn dollars_of(p: Price) -> [f64; 4] {
        [
            p.input,
            p.input * p.cache_write,
            p.input * p.cache_read,
            p.input * p.output,
        ]
    }

    fn same(p: Price, want: [f64; 4]) -> bool {
        dollars_of(p).iter().zip(want).all(|(a, b)| approx(*a, b))
    }

    #[test]
    fn each_scheme_prices_the_cache_its_own_way() {
        // Anthropic: write 1.25×, read 0.1× of the input price.
        let opus = builtin("claude-opus-4-6").unwrap();
        assert_eq!(opus.scheme, Scheme::Anthropic);
        assert!(same(opus.price, [5.0, 6.25, 0.50, 25.0]), "{opus:?}");
        let sonnet = builtin("claude-sonnet-4-6").unwrap();
        assert!(same(sonnet.price, [3.0, 3.75, 0.30, 15.0]));
        let haiku = builtin("claude-haiku-4-5").unwrap();
        assert!(same(haiku.price, [1.0, 1.25, 0.10, 5.0]));
        // OpenAI: the cached input as listed, no cache-write premium.
        let g = builtin("gpt-5.4").unwrap();
        assert_eq!(g.scheme, Scheme::OpenAi);
        assert!(same(g.price, [2.50, 2.50, 0.25, 15.0]), "{g:?}");
        for m in ["gpt-5.2", "gpt-5.2-codex", "gpt-5.3-codex"] {
            assert!(
                same(builtin(m).unwrap().price, [1.75, 1.75, 0.175, 14.0]),
                "{m}"
            );
        }
        assert!(same(
            builtin("gpt-4o").unwrap().price,
            [2.5, 2.5, 1.25, 10.0]
        ));
        // Every row cites one of the sources above.
        let sources: &[&Source] = &[
            &ANTHROPIC,
            &ANTHROPIC_2025,
            &OPENAI_2025,
            &OPENAI_CODEX_RATE_CARD,
            &OPENAI_GPT_5_2_CODEX,
        ];
        for b in BUILTIN.iter().map(Row::builtin) {
            assert!(sources.contains(&b.source), "{}", b.name);
        }
    }

    #[test]
    fn a_dated_model_name_gets_its_family_price_and_the_longest_name_wins() {
        let t = PriceTable::default();
        let (p, src) = t.lookup(Some("claude-sonnet-4-20250514"));
        assert_eq!(src, PriceSource::BuiltIn);
        assert!(same(p, [3.0, 3.75, 0.30, 15.0]));
        // Not Sonnet 4's or Opus 4's price: the longer name matches.
        let (p, _) = t.lookup(Some("claude-opus-4-5-20251101"));
        assert!(approx(p.input, 5.0) && approx(p.input * p.output, 25.0));
        let (p, _) = t.lookup(Some("claude-opus-4-6"));
        assert!(approx(p.input, 5.0), "Opus 4.6 is not Opus 4 ($15)");
        let (p, _) = t.lookup(Some("claude-opus-4-1-20250805"));
        assert!(approx(p.input, 15.0));
        let (p, _) = t.lookup(Some("claude-opus-5-20261101"));
        assert!(approx(p.input, 5.0));
        let (p, _) = t.lookup(Some("gpt-5-codex"));
        assert!(same(p, [1.25, 1.25, 0.125, 10.0]));
        let (p, src) = t.lookup(Some("gpt-5.2-codex"));
        assert_eq!(
            src,
            PriceSource::BuiltIn,
            "Codex's gpt-5.2-codex is in the table"
        );
        assert!(approx(p.input, 1.75));
        let (p, _) = t.lookup(Some("gpt-5.4-2026-03-05"));
        assert!(approx(p.input, 2.50));
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
        assert!(builtin("claude-sonnet-4-9").is_none());
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

    fn flag(f: &str) -> (String, [f64; 4]) {
        let (m, p) = parse_flag(f).unwrap_or_else(|e| panic!("{f}: {e}"));
        (m, dollars_of(p))
    }

    fn close(got: [f64; 4], want: [f64; 4]) -> bool {
        got.iter().zip(want).all(|(a, b)| approx(*a, b))
    }

    #[test]
    fn a_price_flag_takes_the_scheme_of_its_model_or_the_one_it_names() {
        // One number: the input; the rest from the model's scheme.
        let (m, p) = flag("gpt-5.4=2");
        assert_eq!(m, "gpt-5.4");
        assert!(close(p, [2.0, 2.0, 0.2, 16.0]), "{p:?}");
        let (_, p) = flag("claude-opus-4-6=4");
        assert!(close(p, [4.0, 5.0, 0.4, 20.0]), "{p:?}");
        // A model the table does not know, named like one provider's.
        let (_, p) = flag("gpt-6-preview=1");
        assert!(close(p, [1.0, 1.0, 0.1, 8.0]), "{p:?}");
        // A name that tells no provider: Anthropic's (the default's), unless one is named.
        let (_, p) = flag("my-model=2");
        assert!(close(p, [2.0, 2.5, 0.2, 10.0]), "{p:?}");
        let (_, p) = flag("my-model=openai:2");
        assert!(close(p, [2.0, 2.0, 0.2, 16.0]), "{p:?}");
        // INPUT/OUTPUT: both in dollars, the cache from the scheme.
        let (_, p) = flag("my-model=openai:2.5/15");
        assert!(close(p, [2.5, 2.5, 0.25, 15.0]), "{p:?}");
        // Without a model: the default.
        let (m, p) = flag("openai:1.75");
        assert_eq!(m, "default");
        assert!(close(p, [1.75, 1.75, 0.175, 14.0]), "{p:?}");
        let (m, p) = flag("15");
        assert_eq!(m, "default");
        assert!(close(p, [15.0, 18.75, 1.5, 75.0]));
        // The full form (multipliers of the input), as before; left-out keys from the scheme.
        let (m, p) = flag("input=1,cache_write=1.25,cache_read=0.1,output=4");
        assert_eq!(m, "default");
        assert!(close(p, [1.0, 1.25, 0.1, 4.0]), "{p:?}");
        let (m, p) = flag("gpt-5=input=1.25,cache_read=0.1,output=8");
        assert_eq!(m, "gpt-5");
        assert!(
            close(p, [1.25, 1.25, 0.125, 10.0]),
            "no cache-write premium: {p:?}"
        );
        let (m, p) = flag("openai:input=2");
        assert_eq!(m, "default");
        assert!(close(p, [2.0, 2.0, 0.2, 16.0]), "{p:?}");
    }

    #[test]
    fn a_bad_price_flag_says_what_is_wrong_and_what_to_write() {
        let err = |f: &str| parse_flag(f).unwrap_err().to_string();
        assert!(err("=3").contains("names no model"), "{}", err("=3"));
        let e = err("my-model=azure:3");
        assert!(
            e.contains("`azure` is not a price scheme") && e.contains("openai:PRICE"),
            "{e}"
        );
        let e = err("x=cheap");
        assert!(
            e.contains("`cheap` is not a number") && e.contains("`x=cheap`"),
            "{e}"
        );
        assert!(err("x=-1").contains("outside 0 to"));
        assert!(err("NaN").contains("outside 0 to"));
        assert!(err("inf").contains("outside 0 to"));
        assert!(err("x=1/2/3").contains("more than INPUT/OUTPUT"));
        assert!(err("x=").contains("no price given"));
        let e = err("input=1,cheap=2");
        assert!(e.contains("unknown price `cheap`"), "{e}");
        assert!(err("input=x").contains("not a number"));
        assert!(err("input").contains("not a number"));
    }
}
