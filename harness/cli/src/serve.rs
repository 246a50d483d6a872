//! `foldbench serve --sim`: the offline upstream on loopback (docs/agents.md), and the hidden
//! `foldbench agent-bridge` a real agent's sandbox runs (`harness_runner::agents::inside`).

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;

use harness_core::sim::SimConfig;
use harness_runner::run::parse_sim;
use harness_runner::SimServer;

use crate::error::{Code, Error};

/// `foldbench serve`.
#[derive(Debug, clap::Args)]
pub struct ServeArgs {
    /// Answer as the simulated agent (the only upstream `serve` has).
    #[arg(long, required = true)]
    sim: bool,
    /// The task whose script the answers follow.
    #[arg(long)]
    task: PathBuf,
    /// The sim's settings: `sim[:judge=oracle|eager|lexical|never,recheck=P]`.
    #[arg(long, default_value = "sim")]
    model: String,
    /// The seed of the sim's noise.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Where to listen (port 0: any free port, printed on standard output).
    #[arg(long, default_value = "127.0.0.1:8787")]
    listen: SocketAddr,
    /// Append every exchange (what each request was, how it was answered) to this file as JSON
    /// lines.
    #[arg(long)]
    log: Option<PathBuf>,
}

/// Serves until SIGINT or SIGTERM.
pub async fn cmd(a: ServeArgs) -> Result<Code, Error> {
    debug_assert!(a.sim);
    let settings = parse_sim(&a.model)
        .map_err(Error::refused)?
        .ok_or_else(|| {
            Error::Usage(format!(
                "--model {}: serve --sim takes a sim label (`sim`, `sim:judge=eager,recheck=0`)",
                a.model
            ))
        })?;
    let mut tasks = harness_runner::tasks::load_tasks(std::slice::from_ref(&a.task))
        .map_err(|p| crate::error::problems(&p, "the task spec"))?;
    if tasks.len() != 1 {
        return Err(Error::Usage(format!(
            "--task {}: give one task spec file ({} found)",
            a.task.display(),
            tasks.len()
        )));
    }
    let task = tasks.remove(0);
    let cfg = SimConfig {
        seed: a.seed,
        recheck: settings.recheck,
        judge: settings.judge,
        behaviour: Default::default(),
    };
    let server = SimServer::start(Arc::clone(&task.spec), cfg, a.listen, a.log.clone())
        .await
        .map_err(Error::refused)?;
    // Standard output that cannot take the URL ends the server: a caller reads it there.
    crate::out::line(&format!("http://{}", server.addr()))?;
    eprintln!(
        "serving task {} as the sim (seed {}) on http://{}: /v1/messages, /v1/chat/completions, /v1/responses; Ctrl-C stops",
        task.spec.name,
        a.seed,
        server.addr()
    );
    wait_for_signal().await;
    server.stop().await;
    Ok(Code::Ok)
}

pub(crate) async fn wait_for_signal() {
    use tokio::signal::unix::{signal, SignalKind};
    match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(mut int), Ok(mut term)) => {
            tokio::select! {
                _ = int.recv() => {}
                _ = term.recv() => {}
            }
        }
        _ => {
            let _ = tokio::signal::ctrl_c().await;
        }
    }
}

/// `foldbench agent-bridge` (hidden): run inside a real agent's sandbox.
#[derive(Debug, clap::Args)]
pub struct BridgeArgs {
    /// The unix socket the proxy is reached through.
    #[arg(long)]
    socket: PathBuf,
    /// The port to listen on, on the sandbox's own loopback.
    #[arg(long)]
    port: u16,
    /// The agent's command line.
    #[arg(last = true, required = true)]
    command: Vec<OsString>,
}

/// Runs the bridge and the agent; the agent's exit code is the bridge's.
pub async fn bridge(a: BridgeArgs) -> Result<Code, Error> {
    let code = harness_runner::agents::inside(a.socket, a.port, a.command).await;
    Ok(Code::Exit(u8::try_from(code).unwrap_or(1)))
}
