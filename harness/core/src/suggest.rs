//! "Did you mean …?" for names a user types: policies, models, task files.
//!
//! ```
//! use harness_core::{closest, did_you_mean};
//! assert_eq!(closest("fodl", ["none", "trim", "fold"]), Some("fold"));
//! assert_eq!(did_you_mean("xyz", ["none", "trim"]), "");
//! assert_eq!(did_you_mean("trm", ["none", "trim"]), " (did you mean `trim`?)");
//! ```

/// The candidate closest to `word` when it is close enough to be a typo of it: Jaro–Winkler
/// similarity of at least 0.8 (ties: the first).
pub fn closest<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
    let word = word.to_ascii_lowercase();
    let mut best: Option<(f64, &str)> = None;
    for c in candidates {
        let score = strsim::jaro_winkler(&word, &c.to_ascii_lowercase());
        if score >= 0.8 && best.is_none_or(|(b, _)| score > b) {
            best = Some((score, c));
        }
    }
    best.map(|(_, c)| c)
}

/// ` (did you mean `X`?)` for the closest candidate, or an empty string.
pub fn did_you_mean<'a>(word: &str, candidates: impl IntoIterator<Item = &'a str>) -> String {
    closest(word, candidates)
        .map(|c| format!(" (did you mean `{c}`?)"))
        .unwrap_or_default()
}
