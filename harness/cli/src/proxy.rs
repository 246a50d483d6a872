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
    /// folder the agent's requests name.
    #[arg(long)]
    workdir: Option<PathBuf>,
    /// The model's context window the policy assumes.
    #[arg(long, default_value_t = 200_000)]
    window: u64,
}

/// Serves until SIGINT or SIGTERM, then writes the records.
pub async fn cmd(a: ProxyArgs) -> Result<Code, Error> {
    let policy = policies::parse_policy(&a.policy)
        .map_err(|e| Error::policy(format!("--policy {}: ", a.policy), e))?;
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
    cfg.window = a.window;
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
    eprintln!(
        "{} request(s), {} conversation(s) recorded in {}",
        summary.requests,
        summary.cells.len(),
        summary.out.display()
    );
    Ok(Code::Ok)
}
