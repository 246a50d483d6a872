//! The request a judgement item sends to a model, and the settings of asking: shared by the
//! gathering ([`crate::judge`]) and the answering ([`crate::judge::answer`]).

use std::sync::Arc;

use harness_core::judge::Item;
use harness_core::metrics::Price;
use harness_core::tokens;
use harness_core::ToolSpec;
use harness_core::{Purpose, Request};

use crate::cell::SYSTEM_PROMPT;

/// The system prompt and tool list of every judgement request.
pub fn request_prefix() -> (Arc<str>, Arc<[ToolSpec]>, u32) {
    let mut tools = crate::tools::tool_specs();
    tools.extend(policies::fold_tools(false));
    let tools: Arc<[ToolSpec]> = Arc::from(tools);
    let system: Arc<str> = Arc::from(SYSTEM_PROMPT);
    let prefix = tokens::prefix_tokens(&system, &tools);
    (system, tools, prefix)
}

/// The request an item sends to a model.
pub fn request_for(item: &Item, cap: Option<usize>) -> Request {
    let (system, tools, prefix) = request_prefix();
    Request::new(
        system,
        tools,
        prefix,
        item.request_messages(cap),
        Purpose::Turn,
    )
}

/// Settings of [`crate::judge::judge_models`].
#[derive(Debug, Clone)]
pub struct JudgeOptions {
    /// Requests at once.
    pub jobs: usize,
    /// Extra cut of tool outputs.
    pub max_tool_output: Option<usize>,
    /// Prices.
    pub price: Price,
    /// Print a line per answered item to stderr.
    pub progress: bool,
    /// Fit every request into this many o200k tokens: the oldest whole turns of the context
    /// are left out, and a request too large even then is not sent.
    pub max_context: Option<u64>,
}
