//! The plain-data events the session loop emits. Metrics, the transcript writer and the progress
//! display are consumers of these; nothing else crosses from the loop to them.

use serde::{Deserialize, Serialize};

use crate::request::{Purpose, Request, Response, Usage};
use crate::spec::TurnSpec;

/// One thing that happened in a cell, in order.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "event", rename_all = "snake_case")]
pub enum Event {
    /// A user turn started.
    TurnStarted {
        /// Turn number.
        turn: u32,
        /// The user's words.
        user: String,
        /// Tokens of the card attached to the message, if one was.
        card_tokens: Option<u32>,
        /// Turns the card offered.
        #[serde(default, skip_serializing_if = "Vec::is_empty")]
        card_turns: Vec<u32>,
    },
    /// A request was sent.
    Request(RequestRecord),
    /// The model answered.
    Response {
        /// Index of the request.
        index: usize,
        /// o200k output tokens.
        output_tokens: u64,
        /// Provider usage, when reported.
        usage: Option<Usage>,
        /// Milliseconds the model took.
        model_ms: u64,
    },
    /// A tool call was executed (or refused).
    ToolCall(ToolCallRecord),
    /// The context was compacted.
    Compaction {
        /// Turn in progress.
        turn: u32,
        /// A fold policy's emergency path.
        emergency: bool,
        /// Input tokens of the summary call.
        input_tokens: u64,
        /// Output tokens of the summary.
        output_tokens: u64,
        /// Tokens rewritten into the cache because of the edit.
        rewritten_tokens: u64,
    },
    /// A range was folded (or a strategy branch replaced by its report).
    Fold {
        /// Turn during which it was decided.
        turn: u32,
        /// First turn.
        from: u32,
        /// Last turn.
        to: u32,
        /// Archive path.
        archive: String,
        /// Archive sha256.
        sha256: String,
        /// Tokens of the replaced messages.
        folded_tokens: u64,
        /// Tokens of the result message.
        result_tokens: u64,
        /// Tokens rewritten into the cache because of the edit.
        rewritten_tokens: u64,
        /// `fold` or `strategy`.
        kind: String,
    },
    /// A splice could not be made (the archive could not be written); the context is unchanged.
    SpliceFailed {
        /// Turn.
        turn: u32,
        /// Why.
        reason: String,
    },
    /// A strategy mode started.
    StrategyEntered {
        /// Turn.
        turn: u32,
        /// Mode.
        mode: String,
    },
    /// A strategy mode ended.
    StrategyEnded {
        /// Turn.
        turn: u32,
        /// Mode.
        mode: String,
        /// Whether the user ended it with `/back`.
        via_back: bool,
        /// Tokens of the report that replaced the branch.
        report_tokens: u64,
    },
    /// The facts the turn needs (its own and its steps'), checked by the harness against the
    /// text of the turn's first request and the tool results of the turn. Emitted at its end.
    Needs {
        /// Turn.
        turn: u32,
        /// One entry per distinct fact, in the order the spec lists them.
        facts: Vec<FactSeen>,
    },
    /// A call the agent said it built from the request's text (a scripted agent's recovery or
    /// re-check, [`crate::request::Response::from_request`]) has arguments the request does not
    /// show: the agent used something it could not have seen.
    UnseenArguments {
        /// Turn.
        turn: u32,
        /// Index of the request whose answer made the call.
        request: usize,
        /// Call id.
        id: String,
        /// Tool name.
        name: String,
        /// The arguments the request does not show.
        arguments: Vec<String>,
    },
    /// The turn ended.
    TurnEnded {
        /// Turn.
        turn: u32,
        /// The closing message.
        closing: String,
        /// Whether the step limit ended it.
        step_limit: bool,
        /// The strategy mode the policy is in after the turn.
        mode: Option<String>,
    },
    /// A request that got no answer from the model (an error status, a stream cut short, an
    /// upstream that could not be reached or answered out of form): counted apart, never in the
    /// request sizes, the cache accounting or the cost.
    RequestFailed {
        /// Index of the request.
        index: usize,
        /// The status the upstream answered with, when it answered one.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        status: Option<u16>,
        /// What went wrong, in words.
        reason: String,
    },
    /// The host stopped answering the policy's own tools in a turn: after `rejected` refused
    /// calls its card was taken off and the model was not asked again for them.
    PolicyToolStopped {
        /// Turn.
        turn: u32,
        /// Refused calls of the policy's tools in the turn.
        rejected: usize,
    },
    /// A check ran.
    Check {
        /// What was checked.
        label: String,
        /// Whether it held.
        passed: bool,
        /// Output or reason when it failed.
        detail: String,
    },
}

impl Event {
    /// The [`Event::UnseenArguments`] of an answer to request `index` of turn `turn`: one for
    /// each call the answer lists in [`Response::from_request`] whose arguments
    /// [`Request::unseen_arguments`] finds missing from the request.
    pub fn unseen_arguments(turn: u32, index: usize, req: &Request, resp: &Response) -> Vec<Event> {
        resp.tool_calls
            .iter()
            .filter(|c| resp.from_request.contains(&c.id))
            .filter_map(|c| {
                let arguments = req.unseen_arguments(c);
                (!arguments.is_empty()).then(|| Event::UnseenArguments {
                    turn,
                    request: index,
                    id: c.id.clone(),
                    name: c.name.clone(),
                    arguments,
                })
            })
            .collect()
    }
}

/// The harness's watch over the facts a turn needs: visible in the turn's first request, or
/// brought by a tool result of the turn. Measured here, never reported by the model.
pub struct NeedWatch {
    facts: Vec<FactSeen>,
    checked: bool,
}

impl NeedWatch {
    /// The facts of `turn` (its own and its steps', a delegation's child steps included: the
    /// detour run inline), none seen yet.
    pub fn new(turn: &TurnSpec) -> NeedWatch {
        NeedWatch::with_children(turn, true)
    }

    /// No fact to watch (a session whose script names none: a real model's child).
    pub fn empty() -> NeedWatch {
        NeedWatch {
            facts: Vec::new(),
            checked: false,
        }
    }

    /// The facts of `turn`; a delegation's child steps' only with `inline` (under an arm that
    /// delegates they are the child's, watched over the child's session).
    pub fn with_children(turn: &TurnSpec, inline: bool) -> NeedWatch {
        let mut facts: Vec<FactSeen> = Vec::new();
        let steps = turn.script.iter().flat_map(|s| {
            let nested: Vec<&crate::spec::Step> = if inline {
                s.with_nested().collect()
            } else {
                vec![s]
            };
            nested
        });
        for n in turn.needs.iter().chain(steps.flat_map(|s| &s.needs)) {
            if !facts.iter().any(|f| f.fact == n.fact) {
                facts.push(FactSeen {
                    fact: n.fact.clone(),
                    visible: false,
                    found_in: None,
                });
            }
        }
        NeedWatch {
            facts,
            checked: false,
        }
    }

    /// Checks the facts against the turn's first request (later requests do not count).
    pub fn first_request(&mut self, req: &Request) {
        self.first_request_by(|fact| req.contains_text(fact));
    }

    /// [`NeedWatch::first_request`] with the request's text searched by `contains` (a caller
    /// that holds the messages but no [`Request`]: the proxy).
    pub fn first_request_by(&mut self, contains: impl Fn(&str) -> bool) {
        if std::mem::replace(&mut self.checked, true) {
            return;
        }
        for f in &mut self.facts {
            f.visible = contains(&f.fact);
        }
    }

    /// Whether the turn's first request was checked.
    pub fn checked(&self) -> bool {
        self.checked
    }

    /// The facts as seen, for [`Event::Needs`].
    pub fn into_facts(self) -> Vec<FactSeen> {
        self.facts
    }

    /// Notes the first result of the turn that shows each fact missing at its start.
    pub fn result(&mut self, id: &str, text: &str) {
        for f in &mut self.facts {
            if !f.visible && f.found_in.is_none() && text.contains(f.fact.as_str()) {
                f.found_in = Some(id.to_string());
            }
        }
    }
}

/// Where the harness saw one needed fact during a turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FactSeen {
    /// The fact's text.
    pub(crate) fact: String,
    /// Whether it was in the text of the turn's first request.
    pub(crate) visible: bool,
    /// The id of the first tool call of the turn whose result contains it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) found_in: Option<String>,
}

/// What the harness recorded about one request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RequestRecord {
    /// 0-based index in the cell.
    pub index: usize,
    /// Turn in progress.
    pub turn: u32,
    /// Why it was made.
    pub purpose: Purpose,
    /// o200k tokens of the request.
    pub tokens: u64,
    /// Tokens read from the simulated prompt cache.
    pub cached_tokens: u64,
    /// Tokens written to the simulated prompt cache.
    pub written_tokens: u64,
    /// Messages in the request.
    pub messages: usize,
    /// Ids of tool calls whose results are visible in the request.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub visible_results: Vec<String>,
    /// What the policy did before the request.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub action: Option<String>,
    /// The strategy mode in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mode: Option<String>,
    /// The child session that made it (`child-1`: the first `delegate` call of the cell);
    /// `None` for the parent's own requests.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
    /// The model that answered it, when it is not the cell's (a child on a named model): its
    /// cost is priced at that model's price.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<String>,
}

/// What the harness recorded about one tool call.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolCallRecord {
    /// Turn.
    pub turn: u32,
    /// Index of the request whose answer asked for it.
    pub request: usize,
    /// Call id.
    pub id: String,
    /// Tool name.
    pub name: String,
    /// Canonical arguments.
    pub args: String,
    /// Workspace-relative target path, if any.
    pub target: Option<String>,
    /// Fingerprint of the workspace before the call (workspace tools only).
    pub fingerprint: Option<String>,
    /// Whether the target is inside the archive folder.
    pub archive_read: bool,
    /// Whether the result was an error.
    pub is_error: bool,
    /// A policy's own tool (fold_unit, strategy_*).
    pub policy_tool: bool,
    /// What a policy tool did (serialised [`crate::policy::ToolOutcome`]).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub outcome: Option<serde_json::Value>,
    /// o200k tokens of the result.
    pub result_tokens: u32,
    /// Whether the run's tool cache answered the call (a shell command whose result was known
    /// for this workspace state). A mark only: no metric depends on it.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub cached: bool,
    /// The child session that made the call (`child-1`); `None` for the parent's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub agent: Option<String>,
}

impl ToolCallRecord {
    /// The record of a policy's own tool call (`fold_unit`, `strategy_*`, `delegate`) that its
    /// host answered: no path or fingerprint, what it did as `outcome`, the result's tokens.
    pub fn policy_call(
        turn: u32,
        request: usize,
        call: &crate::ToolCall,
        is_error: bool,
        outcome: Option<serde_json::Value>,
        result_tokens: u32,
    ) -> Self {
        Self {
            turn,
            request,
            id: call.id.clone(),
            name: call.name.clone(),
            args: call.canonical_args(),
            target: None,
            fingerprint: None,
            archive_read: false,
            is_error,
            policy_tool: true,
            outcome,
            result_tokens,
            cached: false,
            agent: None,
        }
    }
}
