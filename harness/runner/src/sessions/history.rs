//! Your own history: the folders Claude Code and Codex write their sessions to, read when
//! `replay`, `analyze` or `judge build --from history` is given no path, and the filters that
//! pick sessions out of them (`--since`, `--until`, `--project`, `--session`).
//!
//! The default places, each read only when it is a folder:
//!
//! - Claude Code: every entry of `$CLAUDE_CONFIG_DIR` (a comma-separated list, as ccusage reads
//!   it) with `/projects` appended; when the variable is unset or empty, `~/.config/claude/projects`
//!   and `~/.claude/projects`;
//! - Codex: `$CODEX_HOME/sessions`, else `~/.codex/sessions`.

use std::path::PathBuf;

use harness_core::metrics::Price;
use harness_core::prices::{PriceSource, PriceTable, Source};
use harness_import::ImportedSession;
use serde::Serialize;

use super::SessionsError;

/// A folder the default places name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Place {
    /// The folder.
    pub(crate) path: PathBuf,
    /// Whose sessions it holds (`Claude Code`, `Codex`).
    pub(crate) agent: &'static str,
    /// Where its name came from (`CLAUDE_CONFIG_DIR`, `HOME`, `CODEX_HOME`).
    pub(crate) from: &'static str,
}

/// The default places, from the environment `var` reads (`std::env::var` in the binary; a map
/// in tests), whether or not they exist.
pub(crate) fn places(var: impl Fn(&str) -> Option<String>) -> Vec<Place> {
    let set = |k: &str| var(k).filter(|v| !v.trim().is_empty());
    let home = set("HOME").map(PathBuf::from);
    let mut out = Vec::new();
    match set("CLAUDE_CONFIG_DIR") {
        Some(list) => {
            for dir in list.split(',').map(str::trim).filter(|d| !d.is_empty()) {
                out.push(Place {
                    path: PathBuf::from(dir).join("projects"),
                    agent: "Claude Code",
                    from: "CLAUDE_CONFIG_DIR",
                });
            }
        }
        None => {
            if let Some(h) = &home {
                for rel in [".config/claude/projects", ".claude/projects"] {
                    out.push(Place {
                        path: h.join(rel),
                        agent: "Claude Code",
                        from: "HOME",
                    });
                }
            }
        }
    }
    match set("CODEX_HOME") {
        Some(dir) => out.push(Place {
            path: PathBuf::from(dir.trim()).join("sessions"),
            agent: "Codex",
            from: "CODEX_HOME",
        }),
        None => {
            if let Some(h) = &home {
                out.push(Place {
                    path: h.join(".codex/sessions"),
                    agent: "Codex",
                    from: "HOME",
                });
            }
        }
    }
    out
}

/// The default places that exist, after saying through `say` which were read; when none
/// exists, the error says where it looked and what to pass instead (`command` names the
/// command in its example).
pub fn resolve(command: &str, say: &dyn Fn(&str)) -> Result<Vec<PathBuf>, SessionsError> {
    let all = places(|k| std::env::var(k).ok());
    let (found, missing): (Vec<&Place>, Vec<&Place>) = all.iter().partition(|p| p.path.is_dir());
    if found.is_empty() {
        return Err(SessionsError::NoFolder {
            looked: all,
            command: command.to_string(),
        });
    }
    let read: Vec<String> = found
        .iter()
        .map(|p| format!("{} ({})", p.path.display(), p.agent))
        .collect();
    say(&format!("reading {}", read.join(", ")));
    if !missing.is_empty() {
        let names: Vec<String> = missing
            .iter()
            .map(|p| p.path.display().to_string())
            .collect();
        say(&format!("not present: {}", names.join(", ")));
    }
    Ok(found.into_iter().map(|p| p.path.clone()).collect())
}

/// Which sessions to keep (all fields optional; every given one must hold).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Filter {
    /// Keep sessions active on or after this day (midnight UTC, in milliseconds).
    pub(crate) since_ms: Option<i64>,
    /// Keep sessions active on or before this day (the end of the day UTC, exclusive).
    pub(crate) until_ms: Option<i64>,
    /// A substring (case-insensitive) of the session's working folder or project folder.
    pub(crate) project: Option<String>,
    /// A prefix of the session's id or of its parent's.
    pub(crate) session: Option<String>,
}

const DAY_MS: i64 = 86_400_000;

/// Parses `--since`/`--until`: a date `YYYY-MM-DD`.
pub(crate) fn parse_date(flag: &'static str, text: &str) -> Result<i64, SessionsError> {
    let t = text.trim();
    let ok = t.len() == 10 && t.as_bytes()[4] == b'-' && t.as_bytes()[7] == b'-';
    match harness_import::timestamp_ms(t).filter(|_| ok) {
        // `2025-02-30` parses as a day of March: refuse what does not round-trip.
        Some(ms) if harness_import::date_of_ms(ms) == t => Ok(ms),
        _ => Err(SessionsError::BadDate {
            flag,
            text: text.to_string(),
        }),
    }
}

impl Filter {
    /// The filter of the command-line words (dates checked).
    pub fn new(
        since: Option<&str>,
        until: Option<&str>,
        project: Option<&str>,
        session: Option<&str>,
    ) -> Result<Filter, SessionsError> {
        let since_ms = since.map(|d| parse_date("--since", d)).transpose()?;
        let until_ms = until
            .map(|d| parse_date("--until", d).map(|ms| ms + DAY_MS))
            .transpose()?;
        if let (Some(s), Some(u)) = (since_ms, until_ms) {
            if u <= s {
                return Err(SessionsError::UntilBeforeSince {
                    since: since.unwrap_or_default().to_string(),
                    until: until.unwrap_or_default().to_string(),
                });
            }
        }
        Ok(Filter {
            since_ms,
            until_ms,
            project: project.map(str::to_lowercase).filter(|p| !p.is_empty()),
            session: session.map(str::to_string).filter(|s| !s.is_empty()),
        })
    }

    /// Whether any filter is given.
    pub(crate) fn is_active(&self) -> bool {
        *self != Filter::default()
    }

    /// What of this filter can be tested on a file before it is imported (the session
    /// prefix, the project text, `--since` against the file's modification time): files it
    /// rules out are read but never parsed or tokenized, and the sessions kept are the same.
    pub(crate) fn prefilter(&self) -> harness_import::Prefilter {
        harness_import::Prefilter {
            modified_since_ms: self.since_ms,
            session: self.session.clone(),
            project: self.project.clone(),
            until_ms: self.until_ms,
        }
    }

    /// Whether dates are filtered.
    pub(crate) fn by_date(&self) -> bool {
        self.since_ms.is_some() || self.until_ms.is_some()
    }

    /// Whether `s` passes. A session is kept by date when its activity (first to last
    /// timestamp) overlaps the days asked for; a session without timestamps does not pass a
    /// date filter.
    pub(crate) fn keeps(&self, s: &ImportedSession) -> bool {
        if self.by_date() {
            let (Some(start), Some(end)) = (s.started_ms, s.ended_ms) else {
                return false;
            };
            if self.since_ms.is_some_and(|since| end < since)
                || self.until_ms.is_some_and(|until| start >= until)
            {
                return false;
            }
        }
        if let Some(p) = &self.project {
            let cwd = s.cwd.as_deref().unwrap_or("").to_lowercase();
            if !cwd.contains(p) && !s.folder().to_lowercase().contains(p) {
                return false;
            }
        }
        if let Some(prefix) = &self.session {
            let parent = s.parent.as_deref().unwrap_or("");
            if !s.id.starts_with(prefix.as_str()) && !parent.starts_with(prefix.as_str()) {
                return false;
            }
        }
        true
    }
}

/// One model the sessions name, with its price (dollars per million tokens of each kind).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelPrice {
    /// The model as recorded (`null`: requests that name no model).
    pub(crate) model: Option<String>,
    /// Recorded requests of that model.
    pub(crate) requests: usize,
    /// Where the price came from: `override`, `built_in` or `default` (the model is unknown).
    pub(crate) source: PriceSource,
    /// For a built-in price: the table row's scheme (`anthropic`, `openai`) and source (`url`,
    /// `read`, `note`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) listed: Option<Listed>,
    /// Input.
    pub(crate) input: f64,
    /// Cache write.
    pub(crate) cache_write: f64,
    /// Cache read.
    pub(crate) cache_read: f64,
    /// Output.
    pub(crate) output: f64,
}

/// A built-in price's row: its scheme and where its figures were read.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub(crate) struct Listed {
    /// The row's name (`claude-sonnet-4`).
    pub(crate) row: &'static str,
    /// The provider's scheme.
    pub(crate) scheme: harness_core::prices::Scheme,
    /// The page and the date it was read.
    #[serde(flatten)]
    pub(crate) source: Source,
}

/// The models the sessions' requests name, each with its price, most requests first.
pub fn model_prices(sessions: &[ImportedSession], table: &PriceTable) -> Vec<ModelPrice> {
    let mut counts: std::collections::BTreeMap<Option<&str>, usize> = Default::default();
    for r in sessions.iter().flat_map(|s| &s.requests) {
        *counts.entry(r.model.as_deref()).or_default() += 1;
    }
    let mut out: Vec<ModelPrice> = counts
        .into_iter()
        .map(|(model, requests)| {
            let (p, source) = table.lookup(model);
            let listed = model
                .filter(|_| source == PriceSource::BuiltIn)
                .and_then(harness_core::prices::builtin)
                .map(|b| Listed {
                    row: b.name,
                    scheme: b.scheme,
                    source: *b.source,
                });
            ModelPrice {
                model: model.map(str::to_string),
                requests,
                source,
                listed,
                input: p.input,
                cache_write: p.input * p.cache_write,
                cache_read: p.input * p.cache_read,
                output: p.input * p.output,
            }
        })
        .collect();
    out.sort_by(|a, b| b.requests.cmp(&a.requests).then(a.model.cmp(&b.model)));
    out
}

fn dollars(x: f64) -> String {
    let s = format!("{x:.3}");
    let s = s.trim_end_matches('0');
    format!("${}", s.strip_suffix('.').unwrap_or(s))
}

/// `$3 in / $3.75 cache write / $0.3 cache read / $15 out per M`.
pub(crate) fn describe(p: &ModelPrice) -> String {
    format!(
        "{} in / {} cache write / {} cache read / {} out per M",
        dollars(p.input),
        dollars(p.cache_write),
        dollars(p.cache_read),
        dollars(p.output)
    )
}

fn requests(r: usize) -> String {
    if r == 1 {
        "1 request".to_string()
    } else {
        format!("{r} requests")
    }
}

/// Where a built-in price was read, short: `Anthropic's pricing page, read 2026-12`.
fn cite(l: &Listed) -> String {
    let whose = if l.source.note.starts_with("secondary source") {
        "secondary source"
    } else {
        l.source.note
    };
    format!(
        "{} scheme, {whose}, read {}",
        l.scheme.name(),
        l.source.read
    )
}

/// The lines that say which price each model was costed at, unknown models listed as such,
/// and the sessions whose requests name no model (`sessions`), with how to price them.
pub fn price_notes(
    models: &[ModelPrice],
    default: &Price,
    sessions: &[ImportedSession],
) -> Vec<String> {
    let mut out = Vec::new();
    let known: Vec<String> = models
        .iter()
        .filter(|m| m.source != PriceSource::Default)
        .map(|m| {
            let from = match &m.listed {
                Some(l) => format!("; {}", cite(l)),
                None => ", --price".to_string(),
            };
            format!(
                "{} ({}; {}{from})",
                m.model.as_deref().unwrap_or("?"),
                requests(m.requests),
                describe(m),
            )
        })
        .collect();
    if !known.is_empty() {
        out.push(format!(
            "Prices per model (built-in list prices, each with its source; docs/replay.md has the table and the pages): {}",
            known.join("; ")
        ));
    }
    let d = ModelPrice {
        model: None,
        requests: 0,
        source: PriceSource::Default,
        listed: None,
        input: default.input,
        cache_write: default.input * default.cache_write,
        cache_read: default.input * default.cache_read,
        output: default.input * default.output,
    };
    let unknown: Vec<String> = models
        .iter()
        .filter(|m| m.source == PriceSource::Default)
        .filter_map(|m| Some(format!("{} ({})", m.model.as_ref()?, requests(m.requests))))
        .collect();
    if !unknown.is_empty() {
        out.push(format!(
            "Unknown models, costed at the default price ({}; set one with --price MODEL=PRICE, e.g. --price MODEL=openai:1.75): {}",
            describe(&d),
            unknown.join("; ")
        ));
    }
    out.extend(no_model_note(sessions, &d));
    out
}

/// The sessions with requests that name no model: which, how many requests, the default they
/// were costed at and how to price them.
fn no_model_note(sessions: &[ImportedSession], default: &ModelPrice) -> Option<String> {
    let unnamed: Vec<String> = sessions
        .iter()
        .filter_map(|s| {
            let n = s.requests.iter().filter(|r| r.model.is_none()).count();
            (n > 0).then(|| {
                format!(
                    "{} {} ({}, {})",
                    s.project(),
                    harness_import::short_id(&s.id),
                    s.format.name(),
                    requests(n)
                )
            })
        })
        .collect();
    if unnamed.is_empty() {
        return None;
    }
    Some(format!(
        "Sessions that record no model, their requests costed at the default price ({}): {}; price them with --price PRICE, the default (e.g. --price openai:1.75 for a Codex session, --price anthropic:3 for Claude Code; --price MODEL=… does not reach a request that names no model)",
        describe(default),
        unnamed.join("; ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;

    fn env(pairs: &[(&str, &str)]) -> impl Fn(&str) -> Option<String> {
        let m: HashMap<String, String> = pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        move |k| m.get(k).cloned()
    }

    fn paths(ps: &[Place]) -> Vec<String> {
        ps.iter().map(|p| p.path.display().to_string()).collect()
    }

    #[test]
    fn home_gives_both_claude_folders_and_codex_sessions() {
        let ps = places(env(&[("HOME", "/h")]));
        assert_eq!(
            paths(&ps),
            [
                "/h/.config/claude/projects",
                "/h/.claude/projects",
                "/h/.codex/sessions"
            ]
        );
    }

    #[test]
    fn claude_config_dir_is_a_comma_list_and_codex_home_replaces_the_default() {
        let ps = places(env(&[
            ("HOME", "/h"),
            ("CLAUDE_CONFIG_DIR", "/a, /b,,"),
            ("CODEX_HOME", "/c"),
        ]));
        assert_eq!(paths(&ps), ["/a/projects", "/b/projects", "/c/sessions"]);
        assert_eq!(ps[0].from, "CLAUDE_CONFIG_DIR");
        assert!(places(env(&[])).is_empty());
    }

    #[test]
    fn dates_are_checked() {
        assert_eq!(parse_date("--since", "1970-01-02").ok(), Some(DAY_MS));
        for bad in ["2025-02-30", "2025-7-1", "July", "2025-07-01T00:00:00Z"] {
            assert_eq!(
                parse_date("--since", bad).unwrap_err().to_string(),
                format!("--since `{bad}`: expected a date YYYY-MM-DD (UTC), e.g. 2025-07-01")
            );
        }
        assert_eq!(
            Filter::new(Some("2025-07-02"), Some("2025-07-01"), None, None)
                .unwrap_err()
                .to_string(),
            "--until 2025-07-01 is before --since 2025-07-02"
        );
        assert!(Filter::new(Some("2025-07-01"), Some("2025-07-01"), None, None).is_ok());
    }
}
