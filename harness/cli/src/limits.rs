//! The bounds of every duration and count flag. Each has a maximum well above any real use, so
//! no value a user types overflows a deadline (`Instant + Duration`) or a counter; a value
//! outside its bounds, or not a whole number, is refused by clap with the range to give:
//!
//! ```text
//! error: invalid value '18446744073709551615' for '--tool-timeout <SECS>': 18446744073709551615
//! is more than 86400 seconds (a day), the most --tool-timeout takes; give 1 to 86400
//! ```
//!
//! Each parser below is a clap `value_parser` for one flag (its bounds are in its name's docs).

/// The most seconds a single tool call, check or model request may be given (a day).
pub const MAX_CALL_SECS: u64 = 86_400;
/// The most seconds a cell may be given (a week).
pub const MAX_CELL_SECS: u64 = 7 * 86_400;
/// The most seconds between two attempts of a model request (an hour).
pub const MAX_RETRY_WAIT_SECS: u64 = 3_600;
/// The most retries of a model request.
pub const MAX_RETRIES: u64 = 100;
/// The most model requests in one turn.
pub const MAX_STEPS: u64 = 100_000;
/// The most jobs (cells, tasks, threads or requests at once).
pub const MAX_JOBS: u64 = 1_024;
/// The most tokens a flag can name: an answer's, a context window's (ten million, above any
/// real model's window).
pub const MAX_TOKENS: u64 = 10_000_000;
/// The most runs per arm of `ab` (the most seeds a range gives).
pub const MAX_RUNS: u64 = 10_000;
/// The most items `judge run --limit` takes.
pub const MAX_ITEMS: u64 = 100_000_000;
/// The most characters a tool output keeps in a judgement item (64 MiB).
pub const MAX_CHARS: u64 = 64 * 1024 * 1024;
/// The most human turns `replay --min-turns` asks for.
pub const MAX_TURNS: u64 = 1_000_000;

/// A flag's bounds, as its refusal names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// The flag (`--jobs`).
    pub flag: &'static str,
    /// The unit, plural, with an optional note: `seconds (a day)`.
    pub unit: &'static str,
    /// The least value taken.
    pub min: u64,
    /// The most value taken.
    pub max: u64,
}

/// Why a flag's value is refused (clap prints it after `invalid value 'V' for '--FLAG <V>': `).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LimitError {
    /// Not a whole number (a sign, a point, a letter, nothing).
    #[error(
        "`{value}` is not a whole number of {}; give {} to {}",
        unit_word(.bounds.unit),
        .bounds.min,
        .bounds.max
    )]
    NotWhole {
        /// The value as given.
        value: String,
        /// The flag's bounds.
        bounds: Bounds,
    },
    /// More than the flag takes (or more than a number holds).
    #[error(
        "{value} is more than {} {}, the most {} takes; give {} to {}",
        .bounds.max,
        .bounds.unit,
        .bounds.flag,
        .bounds.min,
        .bounds.max
    )]
    TooLarge {
        /// The value, trimmed.
        value: String,
        /// The flag's bounds.
        bounds: Bounds,
    },
    /// Less than the flag takes.
    #[error(
        "{value} is less than {}, the least {} takes; give {} to {}",
        .bounds.min,
        .bounds.flag,
        .bounds.min,
        .bounds.max
    )]
    TooSmall {
        /// The value, trimmed.
        value: String,
        /// The flag's bounds.
        bounds: Bounds,
    },
}

/// `value` as a whole number from `min` to `max`; `flag` and `unit` (plural, with an optional
/// note: `seconds (a day)`) name it in the refusal.
fn whole(
    value: &str,
    min: u64,
    max: u64,
    flag: &'static str,
    unit: &'static str,
) -> Result<u64, LimitError> {
    let bounds = Bounds {
        flag,
        unit,
        min,
        max,
    };
    let v = value.trim();
    if v.is_empty() || !v.bytes().all(|b| b.is_ascii_digit()) {
        return Err(LimitError::NotWhole {
            value: value.to_string(),
            bounds,
        });
    }
    let value = v.to_string();
    match v.parse::<u64>() {
        Ok(n) if n > max => Err(LimitError::TooLarge { value, bounds }),
        Ok(n) if n < min => Err(LimitError::TooSmall { value, bounds }),
        Ok(n) => Ok(n),
        Err(_) => Err(LimitError::TooLarge { value, bounds }),
    }
}

/// The unit without its note: `seconds (a day)` → `seconds`.
fn unit_word(unit: &str) -> &str {
    unit.split(" (").next().unwrap_or(unit)
}

fn usize_of(n: u64) -> usize {
    usize::try_from(n).unwrap_or(usize::MAX)
}

fn u32_of(n: u64) -> u32 {
    u32::try_from(n).unwrap_or(u32::MAX)
}

/// `--tool-timeout`: 1 to [`MAX_CALL_SECS`] seconds.
pub fn tool_timeout(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CALL_SECS, "--tool-timeout", "seconds (a day)")
}

/// `--cell-timeout`: 1 to [`MAX_CELL_SECS`] seconds.
pub fn cell_timeout(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CELL_SECS, "--cell-timeout", "seconds (a week)")
}

/// `--request-timeout`: 1 to [`MAX_CALL_SECS`] seconds.
pub fn request_timeout(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CALL_SECS, "--request-timeout", "seconds (a day)")
}

/// `judge run --timeout`: 1 to [`MAX_CALL_SECS`] seconds.
pub fn judge_timeout(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CALL_SECS, "--timeout", "seconds (a day)")
}

/// `--max-retry-wait`: 0 to [`MAX_RETRY_WAIT_SECS`] seconds.
pub fn max_retry_wait(s: &str) -> Result<u64, LimitError> {
    whole(
        s,
        0,
        MAX_RETRY_WAIT_SECS,
        "--max-retry-wait",
        "seconds (an hour)",
    )
}

/// `--retries`: 0 to [`MAX_RETRIES`].
pub fn retries(s: &str) -> Result<u32, LimitError> {
    whole(s, 0, MAX_RETRIES, "--retries", "retries").map(u32_of)
}

/// `--max-steps`: 1 to [`MAX_STEPS`] requests.
pub fn max_steps(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_STEPS, "--max-steps", "requests").map(usize_of)
}

/// `--jobs`: 1 to [`MAX_JOBS`].
pub fn jobs(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_JOBS, "--jobs", "jobs").map(usize_of)
}

/// `--max-output-tokens`: 1 to [`MAX_TOKENS`].
pub fn max_output_tokens(s: &str) -> Result<u32, LimitError> {
    whole(s, 1, MAX_TOKENS, "--max-output-tokens", "tokens").map(u32_of)
}

/// `judge run --max-answer-tokens`: 1 to [`MAX_TOKENS`].
pub fn max_answer_tokens(s: &str) -> Result<u32, LimitError> {
    whole(s, 1, MAX_TOKENS, "--max-answer-tokens", "tokens").map(u32_of)
}

/// `replay --window`: 1 to [`MAX_TOKENS`] tokens.
pub fn window(s: &str) -> Result<u64, LimitError> {
    whole(
        s,
        1,
        MAX_TOKENS,
        "--window",
        "tokens (above any model's window)",
    )
}

/// `judge run --max-context`: 1 to [`MAX_TOKENS`] tokens.
pub fn max_context(s: &str) -> Result<u64, LimitError> {
    whole(
        s,
        1,
        MAX_TOKENS,
        "--max-context",
        "tokens (above any model's window)",
    )
}

/// `ab --runs`: 1 to [`MAX_RUNS`].
pub fn runs(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_RUNS, "--runs", "runs")
}

/// `judge run --limit`: 1 to [`MAX_ITEMS`] items.
pub fn items(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_ITEMS, "--limit", "items").map(usize_of)
}

/// `--max-tool-output`: 1 to [`MAX_CHARS`] characters.
pub fn chars(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_CHARS, "--max-tool-output", "characters (64 MiB)").map(usize_of)
}

/// The most MiB `proxy --answer-cap-mib` takes (4 GiB).
pub const MAX_ANSWER_MIB: u64 = 4096;

/// `proxy --answer-cap-mib`: 1 to [`MAX_ANSWER_MIB`] MiB.
pub fn answer_cap_mib(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_ANSWER_MIB, "--answer-cap-mib", "MiB (4 GiB)").map(usize_of)
}

/// `proxy --answer-time`: 1 to [`MAX_CALL_SECS`] seconds.
pub fn answer_time(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CALL_SECS, "--answer-time", "seconds (a day)")
}

/// The most conversations `proxy --max-conversations` holds in memory.
pub const MAX_HELD_CONVERSATIONS: u64 = 1_000_000;

/// The most MiB `proxy --max-held-mib` holds (1 TiB).
pub const MAX_HELD_MIB: u64 = 1 << 20;

/// `proxy --idle-secs`: 1 to [`MAX_CELL_SECS`] seconds.
pub fn idle_secs(s: &str) -> Result<u64, LimitError> {
    whole(s, 1, MAX_CELL_SECS, "--idle-secs", "seconds (a week)")
}

/// `proxy --max-conversations`: 1 to [`MAX_HELD_CONVERSATIONS`] conversations.
pub fn held_conversations(s: &str) -> Result<usize, LimitError> {
    whole(
        s,
        1,
        MAX_HELD_CONVERSATIONS,
        "--max-conversations",
        "conversations",
    )
    .map(usize_of)
}

/// `proxy --max-held-mib`: 1 to [`MAX_HELD_MIB`] MiB.
pub fn held_mib(s: &str) -> Result<usize, LimitError> {
    whole(s, 1, MAX_HELD_MIB, "--max-held-mib", "MiB (1 TiB)").map(usize_of)
}

/// `replay --min-turns`: 0 to [`MAX_TURNS`] turns.
pub fn turns(s: &str) -> Result<u32, LimitError> {
    whole(s, 0, MAX_TURNS, "--min-turns", "turns").map(u32_of)
}

/// `judge run --price`: `[SCHEME:]PRICE` as replay's `--price` (one parser,
/// [`harness_core::prices::parse_price`]), each number from 0 to the cap `MAX_PRICE` of
/// `harness_core::prices`, dollars per million tokens.
pub fn price(s: &str) -> Result<harness_core::metrics::Price, harness_core::prices::PriceError> {
    harness_core::prices::parse_price(s, None)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_proxys_memory_limits_are_bounded() {
        assert_eq!(idle_secs("60").unwrap(), 60);
        assert_eq!(
            idle_secs("0").unwrap_err().to_string(),
            "0 is less than 1, the least --idle-secs takes; give 1 to 604800"
        );
        assert_eq!(held_conversations("500").unwrap(), 500);
        assert!(held_conversations("0")
            .unwrap_err()
            .to_string()
            .contains("--max-conversations"));
        assert_eq!(held_mib("1024").unwrap(), 1024);
        assert!(held_mib("2000000")
            .unwrap_err()
            .to_string()
            .contains("give 1 to 1048576"));
    }

    #[test]
    fn values_past_the_maximum_are_refused_with_the_range() {
        let e = tool_timeout("18446744073709551615")
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "18446744073709551615 is more than 86400 seconds (a day), the most --tool-timeout takes; give 1 to 86400"
        );
        let e = cell_timeout("99999999999999999999999")
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("more than 604800 seconds") && e.contains("give 1 to 604800"),
            "{e}"
        );
        assert_eq!(
            jobs("0").unwrap_err().to_string(),
            "0 is less than 1, the least --jobs takes; give 1 to 1024"
        );
        assert_eq!(
            retries("-1").unwrap_err().to_string(),
            "`-1` is not a whole number of retries; give 0 to 100"
        );
        assert!(request_timeout("1.5")
            .unwrap_err()
            .to_string()
            .contains("not a whole number of seconds; give 1 to 86400"));
        assert!(price("NaN")
            .unwrap_err()
            .to_string()
            .contains("outside 0 to"));
        assert!(price("inf")
            .unwrap_err()
            .to_string()
            .contains("outside 0 to"));
    }

    #[test]
    fn values_inside_are_taken() {
        assert_eq!(tool_timeout(" 30 "), Ok(30));
        assert_eq!(tool_timeout("86400"), Ok(86_400));
        assert_eq!(max_retry_wait("0"), Ok(0));
        assert_eq!(retries("0"), Ok(0));
        assert_eq!(max_steps("80"), Ok(80));
        assert_eq!(max_output_tokens("10000000"), Ok(10_000_000));
        assert_eq!(price("3").map(|p| p.input), Ok(3.0));
    }
}
