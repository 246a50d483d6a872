//! `fold` and `fold+strategies` (the essay's "How a fold works" and "Strategies: the context as a
//! call stack").
//!
//! - **Card**: when `card_after_tool_calls` (default 20) tool calls or `card_after_tokens`
//!   (default 100,000) tokens have built up in the turns since the last fold, a card is attached
//!   to the next user message. `timing: eager` offers it as soon as a threshold is reached;
//!   `timing: pressure` only when the request is above `pressure_tokens` (default half the
//!   window). The card lists every turn still in the context unfolded. An ignored card comes
//!   back at every user message (`card_repeat: turn`) or after another threshold's worth of
//!   work (`card_repeat: threshold`); `card_quote` cuts long prompts in the card.
//! - **fold_unit(from, to)** is checked for legality only ([`harness_core::fold::check_fold`]).
//! - **Splice** after the turn: the policy returns a [`Splice`]; the runner archives and flushes,
//!   then calls [`Policy::apply_splice`], which builds the result mechanically.
//! - **Emergency**: a request over the window compacts as `compact` does, counted separately.
//! - **Strategies** (`fold+strategies`): `strategy_request` appends the mode's rules at the tail
//!   (the system prompt and tool list never change), `strategy_report` replaces the report slot,
//!   `strategy_yield` or a user `/back` ends the mode: the branch is archived and replaced by the
//!   latest report exactly as written. `intent` is read-only.

use std::sync::Arc;

use harness_core::fold::{self, check_fold};
use harness_core::policy::{
    ArchiveRef, CardOffer, Mode, Plan, Policy, Splice, SpliceKind, ToolOutcome, ToolReply,
};
use harness_core::spec::{BACK, MODES};
use harness_core::tokens;
use harness_core::Context;
use harness_core::{Message, MessageKind, ToolCall, ToolSpec};
use serde_json::json;

use crate::compact::compactable;
use crate::error::ParamError;
use crate::params::Params;
use crate::registry::Entry;

/// The registry entry of `fold` (`strategies: false`) or `fold+strategies`.
pub(crate) fn entry(strategies: bool) -> Entry {
    let (name, summary) = if strategies {
        (
            "fold+strategies",
            "fold, and detours entered and left as stack frames that leave their report",
        )
    } else {
        ("fold", "the model is asked at counted moments whether work behind it is finished; finished work is archived and replaced by a mechanical result")
    };
    Entry::new(name, move |p, b| {
        Ok(Box::new(Fold::from_params(p, b.window, strategies)?))
    })
    .summary(summary)
    .source("foldbench (the essay's fold)")
    .param(
        "card_after_tool_calls",
        "20",
        "tool calls",
        "a card after this many calls since the last fold",
    )
    .param(
        "card_after_tokens",
        "100000",
        "tokens",
        "or after this many tokens of turns since the last fold",
    )
    .param(
        "timing",
        "eager",
        "eager|pressure",
        "offer cards at once, or only above `pressure_tokens`",
    )
    .param(
        "pressure_tokens",
        "(half the window)",
        "tokens",
        "the request size `timing=pressure` waits for",
    )
    .param(
        "window",
        "(the model's)",
        "tokens",
        "the window of the emergency compaction",
    )
    .param(
        "card_repeat",
        "turn",
        "turn|threshold",
        "an ignored card returns at every user message, or after another threshold",
    )
    .param(
        "card_quote",
        "0",
        "characters",
        "quote prompts in the card up to this many characters (0: whole)",
    )
}

/// When cards are offered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Timing {
    /// As soon as a threshold is reached.
    Eager,
    /// Only when the request is above `pressure_tokens`.
    Pressure,
}

#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
struct ActiveMode {
    name: String,
    goal: String,
    since_turn: u32,
    report: Option<String>,
    yielded: bool,
}

/// The fold policy, with or without strategies.
#[derive(Debug)]
pub(crate) struct Fold {
    strategies: bool,
    after_calls: usize,
    after_tokens: u64,
    timing: Timing,
    pressure_tokens: u64,
    window: u64,
    repeat: Repeat,
    quote: Option<usize>,
    /// The turn whose user message carried the last card.
    last_card: Option<u32>,
    pending: Vec<(u32, u32)>,
    mode: Option<ActiveMode>,
}

/// When an ignored card comes back.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Repeat {
    /// At every user message while the work since the last fold is over a threshold (the
    /// issue's reading: the count runs from the last fold).
    Turn,
    /// Only after another threshold's worth of work since the last card (the essay's reading of
    /// an ignored card: "about 250 tokens and that is all").
    Threshold,
}

/// The rules message of a strategy mode.
pub(crate) fn mode_rules(mode: &str, goal: &str) -> String {
    let rules = match mode {
        "errand" => "Do only this task. Keep your report current with strategy_report (each call replaces the last). Call strategy_yield when you are done.",
        "triage" => "Work through the queue one item at a time; the user decides each item. Keep your report current with strategy_report. Call strategy_yield when the queue is empty.",
        "intent" => "Read-only: agree with the user on what to build. Edits and writes are refused in this mode. Keep the agreed intent in strategy_report. Call strategy_yield when it is agreed.",
        _ => "Think the hard problem through carefully before acting. Keep your conclusions in strategy_report. Call strategy_yield when you have an answer.",
    };
    format!("[strategy {mode}] Goal: {goal}\n{rules}\nWhen the mode ends, this branch is archived and only your latest report stays.")
}

impl Fold {
    /// From `card_after_tool_calls`, `card_after_tokens`, `timing`, `pressure_tokens`, `window`,
    /// `card_repeat`, `card_quote`.
    pub(crate) fn from_params(
        p: &mut Params,
        window: u64,
        strategies: bool,
    ) -> Result<Fold, ParamError> {
        let window = p.take_u64("window")?.unwrap_or(window);
        let timing = match p.take_choice("timing", &["eager", "pressure"])?.as_deref() {
            Some("pressure") => Timing::Pressure,
            _ => Timing::Eager,
        };
        Ok(Fold {
            strategies,
            after_calls: usize::try_from(p.take_u64("card_after_tool_calls")?.unwrap_or(20))
                .unwrap_or(usize::MAX),
            after_tokens: p.take_u64("card_after_tokens")?.unwrap_or(100_000),
            timing,
            pressure_tokens: p.take_u64("pressure_tokens")?.unwrap_or(window / 2),
            window,
            repeat: match p
                .take_choice("card_repeat", &["turn", "threshold"])?
                .as_deref()
            {
                Some("threshold") => Repeat::Threshold,
                _ => Repeat::Turn,
            },
            quote: match p.take_u64("card_quote")? {
                None | Some(0) => None,
                Some(n) => Some(usize::try_from(n).unwrap_or(usize::MAX)),
            },
            last_card: None,
            pending: Vec::new(),
            mode: None,
        })
    }

    fn fold_tool(&mut self, ctx: &Context, call: &ToolCall) -> ToolReply {
        let num = |k: &str| {
            call.args.get(k).and_then(|v| {
                v.as_u64()
                    .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
            })
        };
        let (Some(from), Some(to)) = (num("from"), num("to")) else {
            let reason = fold::FoldRefusal::NeedsTurns.to_string();
            return ToolReply {
                text: reason.clone(),
                is_error: true,
                outcome: ToolOutcome::FoldRejected { reason },
                append: Vec::new(),
            };
        };
        let (from, to) = (
            u32::try_from(from).unwrap_or(u32::MAX),
            u32::try_from(to).unwrap_or(u32::MAX),
        );
        let mut rule = check_fold(ctx, from, to, &self.pending).map_err(|e| e.to_string());
        if rule.is_ok() {
            if let Some(m) = &self.mode {
                if to >= m.since_turn {
                    rule = Err(format!("error: turns {}–{} are the open {} strategy; it ends with strategy_yield, not a fold", m.since_turn, ctx.turn, m.name));
                }
            }
        }
        match rule {
            Ok(()) => {
                self.pending.push((from, to));
                let range = if from == to {
                    format!("turn {from}")
                } else {
                    format!("turns {from}–{to}")
                };
                ToolReply {
                    text: format!("ok: {range} will be folded when this turn ends; the originals go to an archive you can read back"),
                    is_error: false,
                    outcome: ToolOutcome::FoldAccepted { from, to },
                    append: Vec::new(),
                }
            }
            Err(reason) => ToolReply {
                text: reason.clone(),
                is_error: true,
                outcome: ToolOutcome::FoldRejected { reason },
                append: Vec::new(),
            },
        }
    }

    fn strategy_tool(&mut self, ctx: &Context, call: &ToolCall) -> ToolReply {
        match call.name.as_str() {
            "strategy_request" => {
                let (Some(name), Some(goal)) = (call.str_arg("name"), call.str_arg("goal")) else {
                    return ToolReply::refused(
                        "error: strategy_request needs `name` and `goal`".into(),
                    );
                };
                if let Some(m) = &self.mode {
                    return ToolReply::refused(format!(
                        "error: already in the {} strategy; strategies do not nest: yield it first",
                        m.name
                    ));
                }
                if !MODES.contains(&name) {
                    return ToolReply::refused(format!(
                        "error: unknown strategy `{name}`; the modes are {}",
                        MODES.join(", ")
                    ));
                }
                self.mode = Some(ActiveMode {
                    name: name.into(),
                    goal: goal.into(),
                    since_turn: ctx.turn,
                    report: None,
                    yielded: false,
                });
                let rules = Message::host(
                    ctx.turn,
                    mode_rules(name, goal),
                    MessageKind::StrategyRules { mode: name.into() },
                );
                ToolReply {
                    text: format!("entered the {name} strategy; its rules follow"),
                    is_error: false,
                    outcome: ToolOutcome::StrategyEntered {
                        mode: name.into(),
                        goal: goal.into(),
                    },
                    append: vec![rules],
                }
            }
            "strategy_report" => {
                let Some(text) = call.str_arg("text") else {
                    return ToolReply::refused("error: strategy_report needs `text`".into());
                };
                let Some(m) = &mut self.mode else {
                    return ToolReply::refused(
                        "error: no strategy is open; strategy_report belongs inside one".into(),
                    );
                };
                m.report = Some(text.to_string());
                let n = tokens::count(text);
                ToolReply {
                    text: format!("report saved ({n} tokens); it replaces the previous one"),
                    is_error: false,
                    outcome: ToolOutcome::StrategyReported { tokens: n },
                    append: Vec::new(),
                }
            }
            _ => {
                let reason = call.str_arg("reason").unwrap_or("").to_string();
                let Some(m) = &mut self.mode else {
                    return ToolReply::refused(
                        "error: no strategy is open; there is nothing to yield".into(),
                    );
                };
                m.yielded = true;
                ToolReply {
                    text: format!("the {} strategy ends with this turn; the branch will be replaced by your latest report", m.name),
                    is_error: false,
                    outcome: ToolOutcome::StrategyYielded { reason },
                    append: Vec::new(),
                }
            }
        }
    }
}

/// Schemas of the fold tool and the strategy tools.
pub fn fold_tools(strategies: bool) -> Vec<ToolSpec> {
    let mut t = vec![ToolSpec {
        name: "fold_unit".into(),
        description: "Fold a finished unit of work: turns from..to (as numbered on the card) go to an archive and are replaced by a result.".into(),
        parameters: json!({"type": "object", "properties": {"from": {"type": "integer"}, "to": {"type": "integer"}}, "required": ["from", "to"]}),
    }];
    if strategies {
        t.push(ToolSpec {
            name: "strategy_request".into(),
            description: format!("Enter a strategy mode ({}) for a detour with a goal.", MODES.join(", ")),
            parameters: json!({"type": "object", "properties": {"name": {"type": "string", "enum": MODES}, "goal": {"type": "string"}}, "required": ["name", "goal"]}),
        });
        t.push(ToolSpec {
            name: "strategy_report".into(),
            description: "Replace the strategy's report with the current state of the work.".into(),
            parameters: json!({"type": "object", "properties": {"text": {"type": "string"}}, "required": ["text"]}),
        });
        t.push(ToolSpec {
            name: "strategy_yield".into(),
            description: "End the strategy: the branch is archived and replaced by the latest report.".into(),
            parameters: json!({"type": "object", "properties": {"reason": {"type": "string"}}, "required": ["reason"]}),
        });
    }
    t
}

/// What a fold policy remembers between requests ([`Policy::saved_state`]).
#[derive(serde::Serialize, serde::Deserialize)]
struct FoldState {
    last_card: Option<u32>,
    pending: Vec<(u32, u32)>,
    mode: Option<ActiveMode>,
}

impl Policy for Fold {
    fn saved_state(&self) -> Option<serde_json::Value> {
        serde_json::to_value(FoldState {
            last_card: self.last_card,
            pending: self.pending.clone(),
            mode: self.mode.clone(),
        })
        .ok()
    }

    fn restore_state(&mut self, state: &serde_json::Value) {
        if let Ok(s) = serde_json::from_value::<FoldState>(state.clone()) {
            self.last_card = s.last_card;
            self.pending = s.pending;
            self.mode = s.mode;
        }
    }

    fn name(&self) -> String {
        let base = if self.strategies {
            "fold+strategies"
        } else {
            "fold"
        };
        let timing = match self.timing {
            Timing::Eager => "eager".to_string(),
            Timing::Pressure => format!("pressure,pressure_tokens={}", self.pressure_tokens),
        };
        let mut name = format!(
            "{base}:card_after_tool_calls={},card_after_tokens={},timing={timing}",
            self.after_calls, self.after_tokens
        );
        // The card's form, only when it is not the default (names of default runs stay put).
        if self.repeat == Repeat::Threshold {
            name.push_str(",card_repeat=threshold");
        }
        if let Some(q) = self.quote {
            name.push_str(&format!(",card_quote={q}"));
        }
        name
    }

    fn tools(&self) -> Vec<ToolSpec> {
        fold_tools(self.strategies)
    }

    fn card(&mut self, ctx: &Context, prefix_tokens: u32) -> Option<CardOffer> {
        let turns = ctx.closed_live_turns();
        let last_fold = ctx.last_folded_turn();
        // Work counts from the last fold; with `card_repeat=threshold`, from the last card too.
        let from = match (self.repeat, self.last_card) {
            (Repeat::Threshold, Some(card)) => last_fold.max(card.saturating_sub(1)),
            _ => last_fold,
        };
        let since: Vec<_> = turns.iter().filter(|t| t.turn > from).collect();
        let calls: usize = since.iter().map(|t| t.tool_calls).sum();
        let toks: u64 = since.iter().map(|t| t.tokens).sum();
        if turns.is_empty() || (calls < self.after_calls && toks < self.after_tokens) {
            return None;
        }
        if self.timing == Timing::Pressure
            && u64::from(prefix_tokens) + ctx.tokens() <= self.pressure_tokens
        {
            return None;
        }
        if let Some(m) = &self.mode {
            // Inside a strategy the open frame is not foldable; offer only what came before it.
            let before: Vec<_> = turns
                .into_iter()
                .filter(|t| t.turn < m.since_turn)
                .collect();
            if before.is_empty() {
                return None;
            }
            self.last_card = Some(ctx.turn);
            return Some(CardOffer {
                text: fold::render_card_for(&before, self.quote, ctx.tools.as_deref()),
                turns: before.iter().map(|t| t.turn).collect(),
            });
        }
        self.last_card = Some(ctx.turn);
        Some(CardOffer {
            text: fold::render_card_for(&turns, self.quote, ctx.tools.as_deref()),
            turns: turns.iter().map(|t| t.turn).collect(),
        })
    }

    fn plan(&mut self, ctx: &Context, prefix_tokens: u32) -> Plan {
        if u64::from(prefix_tokens) + ctx.tokens() > self.window && compactable(ctx) {
            return Plan::Compact { emergency: true };
        }
        Plan::Send {
            messages: ctx.messages.clone(),
            action: None,
        }
    }

    fn apply_compaction(&mut self, ctx: &mut Context, summary: Arc<Message>) {
        ctx.compact(summary);
        self.pending.clear();
        if let Some(m) = &mut self.mode {
            m.since_turn = ctx.turn;
        }
    }

    fn owns_tool(&self, name: &str) -> bool {
        name == "fold_unit" || (self.strategies && name.starts_with("strategy_"))
    }

    fn handle_tool(&mut self, ctx: &Context, call: &ToolCall) -> ToolReply {
        if call.name == "fold_unit" {
            self.fold_tool(ctx, call)
        } else if self.strategies
            && matches!(
                call.name.as_str(),
                "strategy_request" | "strategy_report" | "strategy_yield"
            )
        {
            self.strategy_tool(ctx, call)
        } else {
            ToolReply::refused(format!("error: unknown tool `{}`", call.name))
        }
    }

    fn refuse_workspace_tool(&self, call: &ToolCall) -> Option<String> {
        let m = self.mode.as_ref()?;
        let writes = harness_core::tools::find(&call.name).is_some_and(|t| t.writes_its_path());
        (m.name == "intent" && writes)
            .then(|| format!("error: the intent strategy is read-only: {} is refused; yield the strategy to make changes", call.name))
    }

    fn end_turn(&mut self, ctx: &Context, next_user: Option<&str>) -> Vec<Splice> {
        let mut out: Vec<Splice> = std::mem::take(&mut self.pending)
            .into_iter()
            .filter_map(|(from, to)| {
                let (s, e) = ctx.turn_range(from, to)?;
                Some(Splice {
                    from,
                    to,
                    messages: ctx.messages[s..e].to_vec(),
                    kind: SpliceKind::Fold,
                })
            })
            .collect();
        let back = next_user.is_some_and(|u| u.trim() == BACK);
        if let Some(m) = &self.mode {
            if m.yielded || back {
                if let Some((s, e)) = ctx.turn_range(m.since_turn, ctx.turn) {
                    out.push(Splice {
                        from: m.since_turn,
                        to: ctx.turn,
                        messages: ctx.messages[s..e].to_vec(),
                        kind: SpliceKind::StrategyExit {
                            mode: m.name.clone(),
                            report: m
                                .report
                                .clone()
                                .unwrap_or_else(|| "(no report was written)".into()),
                            via_back: back && !m.yielded,
                        },
                    });
                }
            }
        }
        out
    }

    fn apply_splice(
        &mut self,
        ctx: &mut Context,
        splice: &Splice,
        archive: &ArchiveRef,
    ) -> Option<Arc<Message>> {
        match &splice.kind {
            SpliceKind::Fold => {
                fold::splice_fold(ctx, splice.from, splice.to, &archive.path, &archive.sha256)
            }
            SpliceKind::StrategyExit { mode, report, .. } => {
                let goal = self
                    .mode
                    .as_ref()
                    .map(|m| m.goal.clone())
                    .unwrap_or_default();
                self.mode = None;
                let (s, e) = ctx.turn_range(splice.from, splice.to)?;
                let range = if splice.from == splice.to {
                    format!("turn {}", splice.from)
                } else {
                    format!("turns {}–{}", splice.from, splice.to)
                };
                let text = format!(
                    "[strategy {mode} ended] {range} archived. Archive: {} (sha256 {})\nGoal: {goal}\nReport:\n{report}",
                    archive.path, archive.sha256
                );
                let msg = Message::host(
                    splice.to,
                    text,
                    MessageKind::StrategyReport {
                        mode: mode.clone(),
                        archive: archive.path.clone(),
                        sha256: archive.sha256.clone(),
                    },
                );
                ctx.splice(s, e, msg.clone());
                Some(msg)
            }
        }
    }

    fn mode(&self) -> Option<Mode> {
        self.mode.as_ref().map(|m| Mode {
            name: m.name.clone(),
            since_turn: m.since_turn,
        })
    }

    fn window(&self) -> Option<u64> {
        Some(self.window)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::parse_policy;

    fn session(turns: u32, calls_per_turn: usize) -> Context {
        let mut c = Context::default();
        for t in 1..=turns {
            c.turn = t;
            c.push(Message::user(t, format!("do thing {t}"), None));
            for i in 0..calls_per_turn {
                let k = ToolCall {
                    id: format!("c{t}-{i}"),
                    name: "read_file".into(),
                    args: json!({"path": format!("f{t}.py")}),
                };
                c.push(Message::assistant(t, "", vec![k.clone()]));
                c.push(Message::tool_result(t, &k, format!("content {t}"), false));
            }
            c.push(Message::assistant(t, format!("finished {t}"), vec![]));
        }
        c
    }

    fn fold(spec: &str) -> Fold {
        Fold::from_params(
            &mut parse_policy(spec).unwrap().params(),
            200_000,
            spec.starts_with("fold+"),
        )
        .unwrap()
    }

    fn call(name: &str, args: serde_json::Value) -> ToolCall {
        ToolCall {
            id: "x".into(),
            name: name.into(),
            args,
        }
    }

    #[test]
    fn card_appears_after_the_threshold() {
        let mut f = fold("fold:card_after_tool_calls=5");
        let mut c = session(2, 2);
        c.turn = 3;
        assert!(f.card(&c, 0).is_none(), "4 calls < 5");
        let mut c = session(3, 2);
        c.turn = 4;
        let card = f.card(&c, 0).unwrap();
        assert_eq!(card.turns, vec![1, 2, 3]);
        let mut p = fold("fold:card_after_tool_calls=5,timing=pressure,pressure_tokens=1000000");
        assert!(p.card(&c, 0).is_none(), "below the pressure level");
    }

    #[test]
    fn an_ignored_card_comes_back_every_turn_or_after_another_threshold() {
        // 2 calls a turn, a threshold of 5: the first card comes at turn 4 (turns 1-3, 6 calls).
        let cards = |spec: &str| -> Vec<u32> {
            let mut f = fold(spec);
            (4..=9)
                .filter(|&t| {
                    let mut c = session(t - 1, 2);
                    c.turn = t;
                    f.card(&c, 0).is_some()
                })
                .collect()
        };
        assert_eq!(
            cards("fold:card_after_tool_calls=5"),
            vec![4, 5, 6, 7, 8, 9]
        );
        // From the last card: turns 4-6 make 6 calls again, so the next card is at turn 7.
        assert_eq!(
            cards("fold:card_after_tool_calls=5,card_repeat=threshold"),
            vec![4, 7]
        );
        assert!(fold("fold:card_repeat=threshold")
            .name()
            .ends_with(",card_repeat=threshold"));
        assert!(!fold("fold").name().contains("card_repeat"));
    }

    #[test]
    fn card_quote_cuts_long_user_messages() {
        let mut c = session(3, 7);
        c.turn = 4;
        let long = fold("fold:card_quote=5").card(&c, 0).unwrap().text;
        assert!(
            long.contains("user: \"do th\" … [5 more characters, in turn 1]"),
            "{long}"
        );
        let whole = fold("fold").card(&c, 0).unwrap().text;
        assert!(whole.contains("user: \"do thing 1\"\n"), "{whole}");
        assert_eq!(fold::card_turns(&long), fold::card_turns(&whole));
    }

    #[test]
    fn illegal_calls_are_rejected_and_legal_ones_spliced() {
        let mut f = fold("fold");
        let mut c = session(4, 1);
        for (args, want) in [
            (json!({"from": 3, "to": 1}), "reversed"),
            (json!({"from": 1, "to": 9}), "does not exist"),
            (json!({"from": 2, "to": 4}), "in progress"),
            (json!({"from": "a"}), "needs two turn numbers"),
        ] {
            let r = f.handle_tool(&c, &call("fold_unit", args));
            assert!(r.is_error && r.text.contains(want), "{}", r.text);
            assert!(matches!(r.outcome, ToolOutcome::FoldRejected { .. }));
        }
        let ok = f.handle_tool(&c, &call("fold_unit", json!({"from": 1, "to": 2})));
        assert!(!ok.is_error);
        let again = f.handle_tool(&c, &call("fold_unit", json!({"from": 2, "to": 3})));
        assert!(again.text.contains("already folded"), "{}", again.text);
        let splices = f.end_turn(&c, None);
        assert_eq!(splices.len(), 1);
        let msg = f
            .apply_splice(
                &mut c,
                &splices[0],
                &ArchiveRef {
                    path: "a.txt".into(),
                    sha256: "00".into(),
                },
            )
            .unwrap();
        assert!(msg.text.contains("turns 1–2"));
        assert_eq!(c.folded_turns(), vec![(1, 2)]);
        assert!(f
            .handle_tool(&c, &call("fold_unit", json!({"from": 2, "to": 3})))
            .text
            .contains("already folded"));
    }

    #[test]
    fn strategy_frame_is_replaced_by_the_latest_report() {
        let mut f = fold("fold+strategies");
        let mut c = session(2, 1);
        let tools_before = f.tools();
        let r = f.handle_tool(
            &c,
            &call(
                "strategy_request",
                json!({"name": "errand", "goal": "find out why CI is flaky"}),
            ),
        );
        assert_eq!(r.append.len(), 1);
        assert!(r.append[0].text.contains("Do only this task"));
        assert!(
            f.handle_tool(
                &c,
                &call("strategy_request", json!({"name": "errand", "goal": "x"}))
            )
            .is_error
        );
        f.handle_tool(
            &c,
            &call(
                "strategy_report",
                json!({"text": "3 failures, all EADDRINUSE"}),
            ),
        );
        f.handle_tool(
            &c,
            &call(
                "strategy_report",
                json!({"text": "tests share port 8080; fix: bind :0"}),
            ),
        );
        f.handle_tool(&c, &call("strategy_yield", json!({"reason": "done"})));
        let splices = f.end_turn(&c, None);
        assert_eq!(splices.len(), 1);
        f.apply_splice(
            &mut c,
            &splices[0],
            &ArchiveRef {
                path: "b.txt".into(),
                sha256: "11".into(),
            },
        )
        .unwrap();
        let last = c.messages.last().unwrap();
        assert!(last
            .text
            .ends_with("Report:\ntests share port 8080; fix: bind :0"));
        assert!(!last.text.contains("EADDRINUSE"));
        assert!(f.mode().is_none());
        assert_eq!(tools_before, f.tools(), "the tool list never changes");
    }

    #[test]
    fn intent_is_read_only_and_back_ends_the_mode() {
        let mut f = fold("fold+strategies");
        let c = session(1, 1);
        f.handle_tool(
            &c,
            &call(
                "strategy_request",
                json!({"name": "intent", "goal": "agree"}),
            ),
        );
        assert!(f
            .refuse_workspace_tool(&call("edit_file", json!({})))
            .is_some());
        assert!(f
            .refuse_workspace_tool(&call("read_file", json!({})))
            .is_none());
        let s = f.end_turn(&c, Some("/back"));
        assert!(matches!(
            &s[0].kind,
            SpliceKind::StrategyExit { via_back: true, .. }
        ));
    }
}
