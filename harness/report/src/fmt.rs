//! One formatter for the numbers people read: ratios, tokens, money, shares and plain numbers.
//! The pages (and the display tables) go through it, so a ratio is always `0.87×`, a token count
//! `12,345`, a cost `$0.0123` and a share `87.2%` — never `0.8717454194792671`.

use harness_core::fold::group_thousands;

/// What a column holds, from its header: how its raw numbers are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Kind {
    /// A ratio (`× none`, `÷ none`, `Σ×`, `med×`): two decimals and `×`.
    Ratio,
    /// Dollars (`cost $`, `$`): [`money`].
    Money,
    /// A share (`%`, `share`, `rate`): [`share`] of a fraction 0–1.
    Share,
    /// Anything else: tokens and counts grouped by thousands, other numbers to one decimal.
    Number,
    /// Names, ids and digests (`id`, `sha256`, `session`): shown as they are.
    Text,
}

impl Kind {
    /// The kind of a column, from words in its header.
    pub(crate) fn of_header(header: &str) -> Kind {
        let h = header.to_ascii_lowercase();
        let words: Vec<&str> = h.split(|c: char| !c.is_alphanumeric()).collect();
        let word = |w: &str| words.contains(&w);
        let text = [
            "id", "sha256", "session", "archive", "text", "user", "message", "detail", "range",
            "check", "path", "error", "mode", "kind",
        ];
        if text.iter().any(|w| word(w)) {
            Kind::Text
        } else if header.contains('×') || header.contains('÷') || h.contains("ratio") {
            Kind::Ratio
        } else if header.contains('$') || word("cost") || word("dollars") {
            Kind::Money
        } else if header.contains('%') || word("share") || word("rate") {
            Kind::Share
        } else {
            Kind::Number
        }
    }

    /// A raw number shown as this kind.
    pub(crate) fn show(self, x: f64) -> String {
        match self {
            Kind::Ratio => ratio(x),
            Kind::Money => money(x),
            Kind::Share => share(x),
            Kind::Number => number(x),
            Kind::Text => format!("{x}"),
        }
    }
}

/// A count with its noun, plural but for one: `1 session`, `2 sessions`.
pub fn count(n: usize, what: &str) -> String {
    if n == 1 {
        format!("1 {what}")
    } else {
        format!("{n} {what}s")
    }
}

/// A ratio to two decimals: `0.87×`; `–` when there is none.
pub(crate) fn ratio(x: f64) -> String {
    if x.is_finite() {
        format!("{x:.2}×")
    } else {
        "–".into()
    }
}

/// Dollars: two decimals from 10 cents (`$0.79`, `$12.35`), four below (`$0.0123`); `–` when
/// not finite.
pub fn money(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    let sign = if x < 0.0 { "-" } else { "" };
    let a = x.abs();
    if a >= 0.1 {
        let cents = (a * 100.0).round() as u64;
        format!("{sign}${}.{:02}", group_thousands(cents / 100), cents % 100)
    } else {
        format!("{sign}${a:.4}")
    }
}

/// A fraction 0–1 as a percentage to one decimal: `87.2%`.
pub(crate) fn share(x: f64) -> String {
    if x.is_finite() {
        format!("{:.1}%", x * 100.0)
    } else {
        "–".into()
    }
}

/// A plain number: whole numbers thousands grouped (`1,945`), others to one decimal (`12.5`),
/// and small fractions to two significant decimals so they do not round to `0.0` (`0.012`).
pub(crate) fn number(x: f64) -> String {
    if !x.is_finite() {
        return "–".into();
    }
    if x != 0.0 && x.abs() < 0.1 {
        return format!("{x:.3}");
    }
    crate::render::num(x)
}

/// A table cell that is a bare raw number (`0.8717454194792671`, `12345`, `-3`): its value.
/// Cells already formatted (`1,945`, `0.87×`, `$0.12`, `3/4`) and words are not.
pub(crate) fn raw_number(cell: &str) -> Option<f64> {
    let t = cell.trim();
    if t.is_empty()
        || !t
            .bytes()
            .all(|b| b.is_ascii_digit() || b"-+.eE".contains(&b))
    {
        return None;
    }
    // A sha256 prefix or an id of digits is not a number to reformat: only plain decimals.
    if !t
        .bytes()
        .next()
        .is_some_and(|b| b.is_ascii_digit() || b == b'-')
    {
        return None;
    }
    t.parse::<f64>().ok().filter(|x| x.is_finite())
}

/// Whether a bare number was written by a machine, not for a reader: more than two decimals
/// (`0.8717454194792671`) or four or more digits not grouped (`12345`). `1.26`, `200` and `0.0`
/// are a display table's own and are kept.
fn unformatted(cell: &str) -> bool {
    let t = cell.trim().trim_start_matches('-');
    let (whole, frac) = t.split_once('.').unwrap_or((t, ""));
    frac.len() > 2 || whole.len() >= 4
}

/// The cell as a reader sees it: a bare number in a ratio, money or share column shown as that
/// kind (`0.62` → `0.62×`); elsewhere a machine-written number (`unformatted`) shown by
/// [`number`]; anything else unchanged.
pub(crate) fn display_cell(kind: Kind, cell: &str) -> String {
    match (raw_number(cell), kind) {
        (_, Kind::Text) | (None, _) => cell.to_string(),
        (Some(_), Kind::Number) if !unformatted(cell) => cell.to_string(),
        (Some(x), k) => k.show(x),
    }
}

/// The table as a reader sees it: every cell through `display_cell` by its column's
/// `Kind` (a per-cell table's raw `0.8717454194792671` becomes `0.87×`); cells already
/// formatted are kept.
pub fn displayed(t: &crate::render::Table) -> crate::render::Table {
    let kinds: Vec<Kind> = t.headers.iter().map(|h| Kind::of_header(h)).collect();
    crate::render::Table {
        headers: t.headers.clone(),
        rows: t
            .rows
            .iter()
            .map(|row| {
                row.iter()
                    .enumerate()
                    .map(|(i, c)| display_cell(kinds.get(i).copied().unwrap_or(Kind::Number), c))
                    .collect()
            })
            .collect(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_count_is_plural_but_for_one() {
        assert_eq!(count(0, "session"), "0 sessions");
        assert_eq!(count(1, "session"), "1 session");
        assert_eq!(count(2, "recorded request"), "2 recorded requests");
    }

    #[test]
    fn each_kind_has_one_shape() {
        assert_eq!(ratio(0.8717454194792671), "0.87×");
        assert_eq!(ratio(f64::NAN), "–");
        assert_eq!(money(0.012345), "$0.0123");
        assert_eq!(money(1234.567), "$1,234.57");
        assert_eq!(money(-0.5), "-$0.50");
        assert_eq!(money(0.79), "$0.79");
        assert_eq!(share(0.8717), "87.2%");
        assert_eq!(number(12345.0), "12,345");
        assert_eq!(number(2.25), "2.3");
        assert_eq!(number(0.0123), "0.012");
        assert_eq!(number(0.0), "0");
    }

    #[test]
    fn headers_say_the_kind_and_only_bare_numbers_are_reformatted() {
        assert_eq!(Kind::of_header("req ÷ none"), Kind::Ratio);
        assert_eq!(Kind::of_header("Σ× none"), Kind::Ratio);
        assert_eq!(Kind::of_header("cost $"), Kind::Money);
        assert_eq!(Kind::of_header("success rate"), Kind::Share);
        assert_eq!(Kind::of_header("median req"), Kind::Number);
        assert_eq!(
            Kind::of_header("strategies"),
            Kind::Number,
            "a word, not a part"
        );
        assert_eq!(Kind::of_header("sha256"), Kind::Text);
        assert_eq!(display_cell(Kind::Text, "12345"), "12345");
        assert_eq!(display_cell(Kind::Ratio, "0.8717454194792671"), "0.87×");
        assert_eq!(display_cell(Kind::Number, "1234.56"), "1,234.6");
        assert_eq!(display_cell(Kind::Money, "0.0012"), "$0.0012");
        assert_eq!(display_cell(Kind::Number, "12345"), "12,345");
        assert_eq!(display_cell(Kind::Ratio, "0.62"), "0.62×");
        assert_eq!(
            display_cell(Kind::Text, "60000"),
            "60000",
            "a session's text is its own"
        );
        for kept in [
            "1,945", "0.87×", "$0.12", "3/4", "fold", "", "–", "ab12", "e5", "1.26", "200", "0.0",
        ] {
            assert_eq!(display_cell(Kind::Number, kept), kept);
        }
    }
}
