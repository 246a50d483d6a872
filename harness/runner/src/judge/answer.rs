//! How `judge run` asks a model to answer a card: `--answer tool` (the default: the workspace
//! tools and `fold_unit`, the answer is its calls) or `--answer text` (no tools, the context as a
//! plain conversation, the answer one line parsed strictly by [`harness_core::judge::judge_text`]), and
//! `--grammar` (text mode on an OpenAI-compatible server: the body carries llama.cpp's `grammar`
//! field with [`GRAMMAR`], so the model can only write a parsable line).
//!
//! A cassette recorded by `judge run --record DIR` gets `DIR/answer.json`, which says how its
//! answers were asked (`{"answer": "text", "constrained": true}`): the cassette key holds what
//! the model is shown, not the grammar, so this file is what tells a replay whether its figures
//! were constrained. `--model replay:DIR` takes its mode from the file (a flag that contradicts
//! it is an error), and recording into a folder whose file says otherwise is refused.

use std::collections::HashSet;
use std::path::Path;

use crate::file_error::FileError;
use std::sync::Arc;
use std::time::Instant;

use harness_core::judge::{
    card_tokens, cost, item_text_card, text_request_messages, AnswerMode, Item, Judge,
    JudgedRecord, GRAMMAR,
};
use harness_core::tokens;
use harness_core::{Purpose, Request};
use serde_json::{json, Map, Value};

use super::request::{request_for, JudgeOptions};
use crate::backends::model::SharedModel;
use crate::backends::{self, BackendOptions, OpenAiModel};
use crate::cell::SYSTEM_PROMPT;
use crate::judge::JudgeError;

/// The file in a cassette folder that says how its answers were asked.
pub(crate) const MARKER: &str = "answer.json";

/// The answer settings of `judge run` (`--answer tool|text`, `--grammar`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct AnswerArgs {
    /// How models answer the card (`None`: tool calls, or a cassette's `answer.json`).
    pub answer: Option<AnswerMode>,
    /// With text answers: constrain them with the GBNF grammar (`openai:` models only).
    pub grammar: bool,
    /// Stop an `openai:` model's answer after N tokens (the request's `max_tokens`): a small
    /// model can repeat `and 2-3` until its context is full. A text answer cut short does not
    /// parse and counts as unparsable.
    pub max_answer_tokens: Option<u32>,
}

/// How one model answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Answering {
    /// Tool calls or text.
    pub(crate) mode: AnswerMode,
    /// Whether a grammar constrains the text.
    pub(crate) constrained: bool,
}

impl Answering {
    fn to_json(self) -> Value {
        json!({"answer": self.mode.name(), "constrained": self.constrained})
    }

    fn from_json(v: &Value) -> Option<Answering> {
        Some(Answering {
            mode: AnswerMode::parse(v.get("answer")?.as_str()?)?,
            constrained: v.get("constrained")?.as_bool()?,
        })
    }
}

fn read_marker(dir: &Path) -> Result<Option<Answering>, JudgeError> {
    let path = dir.join(MARKER);
    let text = match std::fs::read_to_string(&path) {
        Ok(t) => t,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => return Err(FileError::on("read", &path)(source).into()),
    };
    match serde_json::from_str::<Value>(&text)
        .ok()
        .as_ref()
        .and_then(Answering::from_json)
    {
        Some(m) => Ok(Some(m)),
        None => Err(JudgeError::Marker { path }),
    }
}

/// Writes `dir/answer.json` for a recording; refuses a folder recorded with other answers.
pub fn mark_cassette(dir: &Path, how: Answering) -> Result<(), JudgeError> {
    if let Some(old) = read_marker(dir)? {
        if old != how {
            return Err(JudgeError::RecordedOtherwise {
                dir: dir.to_path_buf(),
                old: old.to_json(),
                new: how.to_json(),
            });
        }
    }
    std::fs::create_dir_all(dir).map_err(FileError::on("create", dir))?;
    let path = dir.join(MARKER);
    match std::fs::write(&path, format!("{}\n", how.to_json())) {
        Ok(()) => Ok(()),
        Err(source) => Err(FileError::on("write", &path)(source).into()),
    }
}

/// The models `judge run --model` names, beside the baselines: the baselines' names left out
/// (they are always in the table), the sim and a model named twice refused, one model at most
/// with `--record` (`opts.record`), whose cassette gets `answer.json`, how it is asked. Each
/// comes with how it answers: the flags for live models, the cassette's `answer.json` for
/// `replay:DIR`.
pub fn run_models(
    specs: &[String],
    args: &AnswerArgs,
    opts: &BackendOptions,
) -> Result<Vec<(SharedModel, Answering)>, JudgeError> {
    let real: Vec<&String> = specs.iter().filter(|m| Judge::parse(m).is_none()).collect();
    if opts.record.is_some() && real.len() > 1 {
        return Err(JudgeError::RecordMany);
    }
    let mut seen: HashSet<&str> = HashSet::new();
    for m in &real {
        if m.trim() == "sim" || m.starts_with("sim:") {
            return Err(JudgeError::SimModel {
                spec: m.to_string(),
            });
        }
        if !seen.insert(m.as_str()) {
            return Err(JudgeError::ModelTwice {
                spec: m.to_string(),
            });
        }
    }
    let out = build_models(&real, args, opts)?;
    if let (Some(dir), Some((_, how))) = (&opts.record, out.first()) {
        mark_cassette(dir, *how)?;
    }
    Ok(out)
}

/// The models of a run, each with how it answers: the flags for live models, the cassette's
/// `answer.json` for `replay:DIR` (the flags when it has none). `--grammar` needs
/// `--answer text` and is sent to `openai:` models only.
pub fn build_models(
    specs: &[&String],
    args: &AnswerArgs,
    opts: &BackendOptions,
) -> Result<Vec<(SharedModel, Answering)>, JudgeError> {
    let asked = Answering {
        mode: args.answer.unwrap_or_default(),
        constrained: args.grammar,
    };
    if args.grammar && asked.mode != AnswerMode::Text {
        return Err(JudgeError::GrammarNeedsText);
    }
    let mut out = Vec::new();
    for spec in specs {
        let spec = spec.trim();
        let (prefix, rest) = spec.split_once(':').unwrap_or((spec, ""));
        let how = match prefix {
            "replay" => match read_marker(Path::new(rest))? {
                Some(m) if (args.answer.is_some() || args.grammar) && m != asked => {
                    return Err(JudgeError::ReplayedOtherwise {
                        spec: spec.to_string(),
                        recorded: m.to_json(),
                        asked: asked.to_json(),
                    })
                }
                Some(m) => m,
                None => asked,
            },
            _ => asked,
        };
        let model = match prefix {
            "openai" if how.constrained || args.max_answer_tokens.is_some() => {
                let mut extra = Map::new();
                if how.constrained {
                    extra.insert("grammar".into(), json!(GRAMMAR));
                }
                if let Some(n) = args.max_answer_tokens {
                    extra.insert("max_tokens".into(), json!(n));
                }
                let m = OpenAiModel::from_env(rest, opts)?.with_extra_body(extra);
                backends::with_recording(Arc::new(m), opts)?
            }
            "openai" | "replay" => backends::parse_model(spec, opts)?,
            _ if how.constrained => {
                return Err(JudgeError::GrammarNotOpenAi {
                    spec: spec.to_string(),
                })
            }
            _ => backends::parse_model(spec, opts)?,
        };
        out.push((model, how));
    }
    Ok(out)
}

/// The request an item sends in a mode: tool mode is `request_for`; text mode
/// has the same system prompt, no tools, and `text_request_messages`.
pub(crate) fn request_in(item: &Item, cap: Option<usize>, mode: AnswerMode) -> Request {
    match mode {
        AnswerMode::Tool => request_for(item, cap),
        AnswerMode::Text => {
            let system: Arc<str> = Arc::from(SYSTEM_PROMPT);
            let prefix = tokens::prefix_tokens(&system, &[]);
            Request::new(
                system,
                Arc::from(Vec::new()),
                prefix,
                text_request_messages(item, cap),
                Purpose::Turn,
            )
        }
    }
}

/// Asks one model about one item and judges its answer.
pub(crate) async fn ask(
    item: &Item,
    model: &SharedModel,
    how: Answering,
    opts: &JudgeOptions,
) -> JudgedRecord {
    let req = request_in(item, opts.max_tool_output, how.mode);
    let card = match how.mode {
        AnswerMode::Tool => item.card(),
        AnswerMode::Text => item_text_card(item),
    };
    let mut rec = JudgedRecord::new(&model.name(), item, card_tokens(&card));
    rec.answer_mode = how.mode;
    rec.constrained = how.constrained;
    let req = match super::fit::fit(req, opts.max_context) {
        Ok((req, fitted)) => {
            rec.context_cut = fitted.turns_cut;
            req
        }
        Err(e) => {
            rec.too_long = true;
            rec.error = Some(harness_core::one_line(&e));
            return rec;
        }
    };
    let began = Instant::now();
    let got = model.respond(&req, &item.id).await;
    rec.latency_ms = u64::try_from(began.elapsed().as_millis()).unwrap_or(u64::MAX);
    match got {
        Ok(resp) => {
            // The provider's own time when the backend measured it: a request queued for a
            // local server's single slot is not slower for it, and a replay reports the
            // recorded time.
            if let Some(ms) = resp.model_ms {
                rec.latency_ms = ms;
            }
            let mut r = match how.mode {
                AnswerMode::Tool => rec.answered(item, &item.context(), &resp),
                AnswerMode::Text => {
                    rec.answered_text(item, &item.context(), &resp, how.constrained)
                }
            };
            r.prompt_tokens = resp.usage.map(|u| u.prompt_tokens()).unwrap_or(req.tokens);
            r.cost = cost(req.tokens, resp.output_tokens, resp.usage, &opts.price);
            r
        }
        Err(e) => {
            rec.prompt_tokens = req.tokens;
            rec.error = Some(harness_core::one_line(&e));
            rec
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cassette_marker_refuses_other_answers() {
        let dir = tempfile::tempdir().unwrap();
        let text = Answering {
            mode: AnswerMode::Text,
            constrained: true,
        };
        assert_eq!(read_marker(dir.path()).unwrap(), None);
        mark_cassette(dir.path(), text).unwrap();
        assert_eq!(read_marker(dir.path()).unwrap(), Some(text));
        mark_cassette(dir.path(), text).unwrap();
        let e = mark_cassette(dir.path(), Answering::default()).unwrap_err();
        assert!(matches!(e, JudgeError::RecordedOtherwise { .. }), "{e}");
        assert!(e.to_string().contains("record into another folder"), "{e}");
        std::fs::write(dir.path().join(MARKER), "{}").unwrap();
        let e = read_marker(dir.path()).unwrap_err();
        assert!(matches!(e, JudgeError::Marker { .. }), "{e}");
        assert!(e.to_string().contains("expected"), "{e}");
    }

    #[test]
    fn grammar_needs_text_and_a_replay_takes_its_marker() {
        let dir = tempfile::tempdir().unwrap();
        let spec = format!("replay:{}", dir.path().display());
        let opts = BackendOptions::default();
        let grammar_only = AnswerArgs {
            answer: None,
            grammar: true,
            max_answer_tokens: None,
        };
        let e = build_models(&[&spec], &grammar_only, &opts).err().unwrap();
        assert!(e.to_string().contains("--answer text"), "{e}");
        let text = Answering {
            mode: AnswerMode::Text,
            constrained: true,
        };
        mark_cassette(dir.path(), text).unwrap();
        let got = build_models(&[&spec], &AnswerArgs::default(), &opts).unwrap();
        assert_eq!(got[0].1, text, "the cassette says how it was asked");
        let tool = AnswerArgs {
            answer: Some(AnswerMode::Tool),
            grammar: false,
            max_answer_tokens: None,
        };
        let e = build_models(&[&spec], &tool, &opts).err().unwrap();
        assert!(e.to_string().contains("drop --answer"), "{e}");
        let anthropic = "anthropic:claude-haiku-4-5".to_string();
        let constrained = AnswerArgs {
            answer: Some(AnswerMode::Text),
            grammar: true,
            max_answer_tokens: None,
        };
        let e = build_models(&[&anthropic], &constrained, &opts)
            .err()
            .unwrap();
        assert!(e.to_string().contains("openai:NAME"), "{e}");
    }
}
