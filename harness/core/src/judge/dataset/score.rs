//! Scoring an answer: each `fold_unit` call judged against the gold, baselines' answers, the
//! judged record of one model on one item, and a model's aggregate.

use super::*;
use crate::fold::FoldRefusal;

/// What became of one `fold_unit` call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Legal, no open turn, and every closed unit it touches lies wholly inside it.
    Exact,
    /// Legal, no open turn, but it cuts a closed unit in two.
    Partial,
    /// Legal, but it holds a turn of a unit still open.
    Premature,
    /// Rejected by the host's legality check (or unreadable arguments).
    Illegal,
}

/// One `fold_unit` call and its verdict.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CallVerdict {
    /// `from`, when readable.
    pub from: Option<u32>,
    /// `to`, when readable.
    pub to: Option<u32>,
    /// The verdict.
    pub verdict: Verdict,
    /// For an illegal call, the host's error; for a premature one, the open turns it holds.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// The scores of one answer.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ItemScore {
    /// The folded turns are exactly the closed turns, and no call was illegal.
    pub exact: bool,
    /// Closed units on the card.
    pub(crate) closed_units: usize,
    /// Closed units wholly inside legal folds that are not premature.
    pub(crate) folded_units: usize,
    /// Closed units left unfolded or cut (late or missed).
    pub missed_units: usize,
    /// Legal folds holding a turn of an open unit.
    pub premature: usize,
    /// Illegal calls.
    pub illegal: usize,
    /// `fold_unit` calls.
    pub(crate) folds: usize,
    /// No `fold_unit` call at all: the card was ignored.
    pub ignored: bool,
    /// A text answer that is none of the accepted forms ([`crate::judge::AnswerMode::Text`]).
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub unparsable: bool,
}

/// Reads `from` and `to` of a `fold_unit` call as the fold policy does (numbers, or numbers in
/// strings).
pub(crate) fn fold_args(call: &ToolCall) -> Result<(u32, u32), FoldRefusal> {
    let num = |k: &str| {
        call.args.get(k).and_then(|v| {
            v.as_u64()
                .or_else(|| v.as_str().and_then(|s| s.trim().parse().ok()))
        })
    };
    match (num("from"), num("to")) {
        (Some(a), Some(b)) => Ok((
            u32::try_from(a).unwrap_or(u32::MAX),
            u32::try_from(b).unwrap_or(u32::MAX),
        )),
        _ => Err(FoldRefusal::NeedsTurns),
    }
}

/// An answer judged: each `fold_unit` call's verdict, other calls, and the scores.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Judged {
    /// The `fold_unit` calls in order.
    pub calls: Vec<CallVerdict>,
    /// Names of other tool calls (which answer nothing).
    pub other_calls: Vec<String>,
    /// The scores.
    pub score: ItemScore,
}

/// Judges a model's tool calls at an item. `ctx` is [`Item::context`].
pub fn judge_calls(item: &Item, ctx: &Context, calls: &[ToolCall]) -> Judged {
    let open: BTreeSet<u32> = item.gold.open.iter().copied().collect();
    let mut pending: Vec<(u32, u32)> = Vec::new();
    let mut out = Judged::default();
    let mut folded: BTreeSet<u32> = BTreeSet::new();
    let mut clean: BTreeSet<u32> = BTreeSet::new();
    for c in calls {
        if c.name != "fold_unit" {
            out.other_calls.push(c.name.clone());
            continue;
        }
        out.score.folds += 1;
        let (from, to) = match fold_args(c) {
            Ok(r) => r,
            Err(reason) => {
                out.score.illegal += 1;
                out.calls.push(CallVerdict {
                    from: None,
                    to: None,
                    verdict: Verdict::Illegal,
                    reason: reason.to_string(),
                });
                continue;
            }
        };
        if let Err(reason) = check_fold(ctx, from, to, &pending) {
            out.score.illegal += 1;
            out.calls.push(CallVerdict {
                from: Some(from),
                to: Some(to),
                verdict: Verdict::Illegal,
                reason: reason.to_string(),
            });
            continue;
        }
        pending.push((from, to));
        let inside: Vec<u32> = item
            .offered()
            .into_iter()
            .filter(|t| (from..=to).contains(t))
            .collect();
        folded.extend(inside.iter().copied());
        let held: Vec<u32> = inside
            .iter()
            .copied()
            .filter(|t| open.contains(t))
            .collect();
        let (verdict, reason) = if !held.is_empty() {
            out.score.premature += 1;
            (
                Verdict::Premature,
                format!(
                    "holds open turn{} {held:?}",
                    if held.len() == 1 { "" } else { "s" }
                ),
            )
        } else {
            clean.extend(inside.iter().copied());
            let cuts = item.gold.units.iter().any(|u| {
                let n = u.turns.iter().filter(|t| inside.contains(t)).count();
                n > 0 && n < u.turns.len()
            });
            if cuts {
                (Verdict::Partial, "cuts a closed unit".to_string())
            } else {
                (Verdict::Exact, String::new())
            }
        };
        out.calls.push(CallVerdict {
            from: Some(from),
            to: Some(to),
            verdict,
            reason,
        });
    }
    let closed: BTreeSet<u32> = item
        .gold
        .units
        .iter()
        .flat_map(|u| u.turns.iter().copied())
        .collect();
    out.score.closed_units = item.gold.units.len();
    out.score.folded_units = item
        .gold
        .units
        .iter()
        .filter(|u| u.turns.iter().all(|t| clean.contains(t)))
        .count();
    out.score.missed_units = out.score.closed_units - out.score.folded_units;
    out.score.ignored = out.score.folds == 0;
    out.score.exact = folded == closed && out.score.illegal == 0;
    out
}

/// The ranges a baseline folds at an item (the sim's judges, [`judge::ranges`]).
pub(crate) fn baseline_ranges(j: Judge, item: &Item) -> Vec<(u32, u32)> {
    let offered = item.offered();
    let user = |t: u32| item.typed(t).map(str::to_string);
    let unit = |t: u32| label_of(&item.labels, t);
    let p = CardPoint {
        offered: &offered,
        current: item.current,
        user: &user,
        unit: &unit,
        last_turn: (item.labels.len() as u32).max(item.current),
    };
    judge::ranges(j, &p)
}

/// `fold_unit` calls for ranges, as a response would carry them.
pub(crate) fn fold_calls(ranges: &[(u32, u32)]) -> Vec<ToolCall> {
    ranges
        .iter()
        .enumerate()
        .map(|(i, (a, b))| ToolCall {
            id: format!("fold-{}", i + 1),
            name: "fold_unit".into(),
            args: json!({ "from": a, "to": b }),
        })
        .collect()
}

/// A baseline's answer at an item, as a response (its output tokens counted).
pub(crate) fn baseline_response(j: Judge, item: &Item) -> Response {
    Response::new("", fold_calls(&baseline_ranges(j, item)), None)
}

/// Tokens a card adds to the user message it is attached to (as the session loop counts it).
pub fn card_tokens(card: &str) -> u64 {
    u64::from(tokens::count(card)) + 1
}

/// Cost in dollars of one request: the provider's usage when it reported one (cache reads and
/// writes priced by their multipliers), else the harness's own counts as uncached input.
pub fn cost(prompt_tokens: u64, output_tokens: u64, usage: Option<Usage>, price: &Price) -> f64 {
    let t = match usage {
        Some(u) => {
            u.input_tokens as f64
                + u.cache_write_tokens as f64 * price.cache_write
                + u.cache_read_tokens as f64 * price.cache_read
                + u.output_tokens as f64 * price.output
        }
        None => prompt_tokens as f64 + output_tokens as f64 * price.output,
    };
    t * price.input / 1e6
}

/// One model's answer at one item, judged: a line of `judge run -o records.jsonl`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JudgedRecord {
    /// [`RECORD_VERSION`].
    pub(crate) version: u32,
    /// The model (`oracle`, `lexical`, `eager`, `never`, `openai:NAME`, ...).
    pub model: String,
    /// How the model was asked to answer (version 1 records: `tool`).
    #[serde(default)]
    pub answer_mode: crate::judge::AnswerMode,
    /// Whether a grammar constrained the answer (text mode on a server that takes one).
    #[serde(default)]
    pub constrained: bool,
    /// The item's id.
    pub item: String,
    /// The item's source.
    pub(crate) source: String,
    /// The turn in progress.
    pub(crate) current: u32,
    /// Whether the counting threshold showed a card here.
    pub(crate) threshold: bool,
    /// The turns on the card.
    pub(crate) offered: Vec<u32>,
    /// Gold: the closed ranges.
    pub(crate) gold_closed: Vec<(u32, u32)>,
    /// Gold: the open turns.
    pub(crate) gold_open: Vec<u32>,
    /// The answer's text.
    #[serde(default)]
    pub text: String,
    /// The `fold_unit` calls with their verdicts.
    #[serde(default)]
    pub calls: Vec<CallVerdict>,
    /// Other tool calls the answer made (names).
    #[serde(default)]
    pub other_calls: Vec<String>,
    /// The scores (all zero when `error` is set).
    #[serde(default)]
    pub score: ItemScore,
    /// Tokens of the card.
    pub(crate) card_tokens: u64,
    /// Tokens of the request (the provider's count when reported, else o200k).
    pub prompt_tokens: u64,
    /// Tokens of the answer.
    pub(crate) output_tokens: u64,
    /// Wall time of the model call, in milliseconds (0 for baselines).
    pub latency_ms: u64,
    /// Cost in dollars (0 for baselines).
    pub cost: f64,
    /// Why the model gave no answer (after the backend's retries).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Turns of the context left out to fit `judge run --max-context` (0: none).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub context_cut: u32,
    /// The request did not fit `--max-context` even without its context, so the model was not
    /// asked (`error` says the sizes); counted in its own column, not among the errors.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub too_long: bool,
}

fn is_zero(n: &u32) -> bool {
    *n == 0
}

impl JudgedRecord {
    /// A record for an item; fill the answer with [`JudgedRecord::answered`] or set `error`.
    pub fn new(model: &str, item: &Item, card_tokens: u64) -> JudgedRecord {
        JudgedRecord {
            version: RECORD_VERSION,
            model: model.to_string(),
            answer_mode: crate::judge::AnswerMode::Tool,
            constrained: false,
            item: item.id.clone(),
            source: item.source.clone(),
            current: item.current,
            threshold: item.threshold,
            offered: item.offered(),
            gold_closed: item.gold.closed.clone(),
            gold_open: item.gold.open.clone(),
            text: String::new(),
            calls: Vec::new(),
            other_calls: Vec::new(),
            score: ItemScore::default(),
            card_tokens,
            prompt_tokens: 0,
            output_tokens: 0,
            latency_ms: 0,
            cost: 0.0,
            error: None,
            context_cut: 0,
            too_long: false,
        }
    }

    /// Judges a response at the item and stores it.
    pub fn answered(mut self, item: &Item, ctx: &Context, resp: &Response) -> JudgedRecord {
        let j = judge_calls(item, ctx, &resp.tool_calls);
        self.text = resp.text.clone();
        self.calls = j.calls;
        self.other_calls = j.other_calls;
        self.score = j.score;
        self.output_tokens = resp.output_tokens;
        self
    }
}

/// A baseline's record at an item.
pub fn baseline_record(j: Judge, item: &Item, ctx: &Context) -> JudgedRecord {
    let card = item.card();
    let resp = baseline_response(j, item);
    let mut r = JudgedRecord::new(j.name(), item, card_tokens(&card)).answered(item, ctx, &resp);
    r.prompt_tokens = item
        .messages
        .iter()
        .map(|m| u64::from(m.tokens))
        .sum::<u64>()
        + u64::from(Message::user(item.current, item.user.clone(), Some(card)).tokens);
    r
}

/// One model's scores over the items it answered.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct Aggregate {
    /// The model.
    pub model: String,
    /// Items asked.
    pub items: usize,
    /// Items with no answer (errors), the too-long ones aside.
    pub errors: usize,
    /// Items not asked: the request did not fit `--max-context` even without its context.
    pub too_long: usize,
    /// Items asked with the oldest turns of their context left out to fit `--max-context`.
    pub cut: usize,
    /// Items answered exactly.
    pub exact: usize,
    /// Closed units on the cards answered.
    pub closed_units: usize,
    /// Closed units folded.
    pub folded_units: usize,
    /// Closed units late or missed.
    pub missed_units: usize,
    /// Premature folds.
    pub premature: usize,
    /// Items with at least one premature fold.
    pub items_premature: usize,
    /// Illegal calls.
    pub illegal: usize,
    /// Unparsable text answers.
    pub unparsable: usize,
    /// How the model answered: `tool`, `text`, `text+grammar` (`–` for the baselines).
    pub answer: String,
    /// Folds asked for.
    pub folds: usize,
    /// Answered items where nothing was closed.
    pub nothing_closed: usize,
    /// Of those, the ones where the card was ignored.
    pub ignored_when_nothing_closed: usize,
    /// Mean card tokens.
    pub mean_card_tokens: f64,
    /// Mean output tokens of the answers.
    pub mean_output_tokens: f64,
    /// Median latency in milliseconds.
    pub median_latency_ms: f64,
    /// Total cost in dollars.
    pub cost: f64,
}

/// Aggregates the records of one model.
pub fn aggregate(model: &str, records: &[JudgedRecord]) -> Aggregate {
    let mine: Vec<&JudgedRecord> = records.iter().filter(|r| r.model == model).collect();
    let ok: Vec<&&JudgedRecord> = mine.iter().filter(|r| r.error.is_none()).collect();
    let too_long = mine.iter().filter(|r| r.too_long).count();
    let mut a = Aggregate {
        model: model.to_string(),
        items: mine.len(),
        errors: mine.len() - ok.len() - too_long,
        too_long,
        cut: ok.iter().filter(|r| r.context_cut > 0).count(),
        ..Aggregate::default()
    };
    for r in &ok {
        let s = &r.score;
        a.exact += usize::from(s.exact);
        a.closed_units += s.closed_units;
        a.folded_units += s.folded_units;
        a.missed_units += s.missed_units;
        a.premature += s.premature;
        a.items_premature += usize::from(s.premature > 0);
        a.illegal += s.illegal;
        a.unparsable += usize::from(s.unparsable);
        a.folds += s.folds;
        if r.gold_closed.is_empty() {
            a.nothing_closed += 1;
            a.ignored_when_nothing_closed += usize::from(s.ignored);
        }
    }
    let n = ok.len().max(1) as f64;
    a.mean_card_tokens = ok.iter().map(|r| r.card_tokens as f64).sum::<f64>() / n;
    a.mean_output_tokens = ok.iter().map(|r| r.output_tokens as f64).sum::<f64>() / n;
    let mut lat: Vec<f64> = ok.iter().map(|r| r.latency_ms as f64).collect();
    lat.sort_by(f64::total_cmp);
    a.median_latency_ms = match lat.len() {
        0 => 0.0,
        l if l % 2 == 1 => lat[l / 2],
        l => (lat[l / 2 - 1] + lat[l / 2]) / 2.0,
    };
    a.cost = mine.iter().map(|r| r.cost).sum();
    a.answer = crate::judge::answer::answer_label(model, &mine);
    a
}
