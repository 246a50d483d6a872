//! `foldbench proxy`: a model API proxy that applies a context policy to a real agent's requests
//! and records what it did as a run folder (`harness_runner::proxy`, docs/agents.md).

use std::net::SocketAddr;
use std::path::PathBuf;

use harness_runner::proxy::{Proxy, ProxyConfig};

use crate::error::{Code, Error};

/// `foldbench proxy`.
#[derive(Debug, clap::Args)]
pub struct ProxyArgs {
    /// The policy applied to the agent's conversation (`none`, `trim`, `fold`, …; `foldbench
    /// policies` lists them).
    #[arg(long)]
    policy: String,
    /// The model API the requests go on to (`https://api.anthropic.com`,
    /// `https://api.openai.com`, `http://127.0.0.1:8787` for `foldbench serve --sim`).
    #[arg(long)]
    upstream: String,
    /// Where to listen (port 0: any free port; the URL is printed on standard output).
    #[arg(long, default_value = "127.0.0.1:8788")]
    listen: SocketAddr,
    /// The run folder the records go to (continued when it holds an earlier proxy's).
    #[arg(long)]
    out: PathBuf,
    /// The agent's working folder, where archives go (`.foldbench/archive/`); default: the
    /// folder the agent's system prompt names (Claude Code's "Primary working directory"),
    /// when it is under --archives-under.
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// Without --workdir, archives are written only under this folder (default: the folder
    /// the proxy starts in); a working folder the agent names elsewhere is refused, and the
    /// record says so.
    #[arg(long, value_name = "DIR")]
    archives_under: Option<PathBuf>,
    /// The model's context window the policy assumes.
    #[arg(long, default_value_t = 200_000)]
    window: u64,
    /// The most of one upstream answer the proxy reads, in MiB (a stream is relayed as it
    /// comes; past this the agent gets an error that says so).
    #[arg(long, value_name = "MIB", default_value_t = harness_runner::proxy::ANSWER_CAP >> 20, value_parser = crate::limits::answer_cap_mib)]
    answer_cap_mib: usize,
    /// The longest one upstream answer may take, from the request to its last byte, in
    /// seconds (past it the agent gets an error that says so).
    #[arg(long, value_name = "SECS", default_value_t = harness_runner::proxy::ANSWER_TIME.as_secs(), value_parser = crate::limits::answer_time)]
    answer_time: u64,
    /// A conversation idle this many seconds leaves memory (its state is in its cell's
    /// `state.json`; the agent's next request of it brings it back, the same requests going
    /// upstream).
    #[arg(long, value_name = "SECS", default_value_t = harness_runner::proxy::IDLE.as_secs(), value_parser = crate::limits::idle_secs)]
    idle_secs: u64,
    /// The most conversations held in memory; past it the least recently used leave.
    #[arg(long, value_name = "N", default_value_t = harness_runner::proxy::MAX_HELD, value_parser = crate::limits::held_conversations)]
    max_conversations: usize,
    /// The most MiB of conversations held in memory (each counted as its last request's
    /// size); past it the least recently used leave.
    #[arg(long, value_name = "MIB", default_value_t = harness_runner::proxy::MAX_HELD_BYTES >> 20, value_parser = crate::limits::held_mib)]
    max_held_mib: usize,
}

/// Serves until SIGINT or SIGTERM, then writes the records.
pub async fn cmd(a: ProxyArgs) -> Result<Code, Error> {
    let policy = policies::parse_policy(&a.policy)
        .map_err(|e| Error::policy(format!("--policy {}", a.policy), e))?;
    if policy.delegate {
        return Err(Error::Usage(format!(
            "--policy {}: `+delegate` is foldbench's own loop's tool; an agent behind the proxy delegates with its own (give the policy without it)",
            a.policy
        )));
    }
    let upstream = a.upstream.trim();
    if !(upstream.starts_with("http://") || upstream.starts_with("https://")) {
        return Err(Error::Usage(format!(
            "--upstream {upstream}: give the model API's URL, starting with http:// or https://"
        )));
    }
    let mut cfg = ProxyConfig::new(policy, upstream, a.listen, &a.out);
    cfg.workdir = a.workdir;
    cfg.archives_under = a.archives_under;
    cfg.window = a.window;
    cfg.limits = harness_runner::proxy::AnswerLimits {
        bytes: a.answer_cap_mib << 20,
        time: std::time::Duration::from_secs(a.answer_time),
    };
    cfg.memory = harness_runner::proxy::MemoryLimits {
        idle: std::time::Duration::from_secs(a.idle_secs),
        conversations: a.max_conversations,
        bytes: a.max_held_mib << 20,
    };
    let proxy = Proxy::start(cfg).await.map_err(Error::refused)?;
    if let Err(e) = crate::out::line(&proxy.base_url()) {
        // Standard output that cannot take the URL ends the proxy: a caller reads it there.
        let _ = proxy.stop().await;
        return Err(e);
    }
    eprintln!(
        "proxy on {} → {upstream} under {}; records in {}; Ctrl-C stops",
        proxy.base_url(),
        a.policy,
        a.out.display()
    );
    crate::serve::wait_for_signal().await;
    let summary = proxy.stop().await.map_err(Error::failed)?;
    // The first figure is the one `report` counts for the folder.
    eprintln!(
        "{} request(s) to the model in {} conversation(s) (as `report` counts them); {} from the agent ({} side or pass-through); recorded in {}",
        summary.model_requests,
        summary.conversations,
        summary.requests,
        summary.side_requests,
        summary.out.display()
    );
    Ok(Code::Ok)
}
