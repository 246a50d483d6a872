//! Stopping a run on SIGINT or SIGTERM, at any point: a thread of its own with its own runtime
//! watches for them, so a run whose every worker thread is busy or blocked still stops at once.

use std::sync::Arc;

/// Runs `fut` until it ends or SIGINT/SIGTERM arrives. On a signal the run stops: the calls in
/// flight are ended (their process groups and descendants killed), this process's workspaces are
/// removed, and the process exits 130 (SIGINT) or 143 (SIGTERM). The run folder stays
/// consistent: what was recorded is complete, and the same command resumes it.
///
/// The signals are watched by a thread of their own with its own runtime ([`watch_signals`]),
/// so a run whose every worker thread is busy or blocked (a snapshot hashing a huge file, a read
/// that does not return) still stops at once.
pub(crate) async fn interruptible<T>(fut: impl std::future::Future<Output = T>) -> T {
    if let Err(e) = watch_signals() {
        eprintln!(
            "warning: SIGINT/SIGTERM cannot be watched ({e}); a signal ends the run as it is"
        );
    }
    let out = fut.await;
    if STOPPING.load(std::sync::atomic::Ordering::SeqCst) {
        // A signal came while the run was ending: the cells it stopped may have let the run
        // finish first, and this thread must not exit with the run's code while the signal
        // thread removes the workspaces. That thread exits the process with the signal's code.
        loop {
            std::thread::park();
        }
    }
    out
}

/// Set by [`stop`] before it ends anything: the run is being stopped by a signal.
static STOPPING: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Why the signals cannot be watched (the run goes on without, and a signal ends it as it is).
#[derive(Debug, Clone, thiserror::Error)]
enum WatchError {
    /// The thread, its runtime or a handler could not be made.
    #[error(transparent)]
    Io(Arc<std::io::Error>),
    /// The thread ended before it said whether its handlers are installed.
    #[error("the thread did not start")]
    NotStarted,
}

impl From<std::io::Error> for WatchError {
    fn from(e: std::io::Error) -> WatchError {
        WatchError::Io(Arc::new(e))
    }
}

/// Starts the thread that stops the run on SIGINT or SIGTERM (once per process), and returns
/// when its handlers are installed.
fn watch_signals() -> Result<(), WatchError> {
    static STARTED: std::sync::OnceLock<Result<(), WatchError>> = std::sync::OnceLock::new();
    STARTED
        .get_or_init(|| {
            let (ready_tx, ready_rx) = std::sync::mpsc::channel::<Result<(), WatchError>>();
            std::thread::Builder::new()
                .name("signals".into())
                .spawn(move || {
                    use tokio::signal::unix::{signal, SignalKind};
                    let rt = match tokio::runtime::Builder::new_current_thread()
                        .enable_all()
                        .build()
                    {
                        Ok(rt) => rt,
                        Err(e) => {
                            let _ = ready_tx.send(Err(e.into()));
                            return;
                        }
                    };
                    rt.block_on(async move {
                        let (mut int, mut term) = match (
                            signal(SignalKind::interrupt()),
                            signal(SignalKind::terminate()),
                        ) {
                            (Ok(i), Ok(t)) => (i, t),
                            (Err(e), _) | (_, Err(e)) => {
                                let _ = ready_tx.send(Err(e.into()));
                                return;
                            }
                        };
                        let _ = ready_tx.send(Ok(()));
                        let code = tokio::select! {
                            _ = int.recv() => 130,
                            _ = term.recv() => 143,
                        };
                        stop(code)
                    })
                })
                .map_err(WatchError::from)?;
            ready_rx.recv().unwrap_or(Err(WatchError::NotStarted))
        })
        .clone()
}

/// Ends the run after a signal: every call in flight (and any that starts) ended, this
/// process's workspaces removed (none made afterwards), then exits with `code`.
fn stop(code: i32) -> ! {
    STOPPING.store(true, std::sync::atomic::Ordering::SeqCst);
    harness_runner::execution::end_all_calls();
    let removed = harness_runner::execution::close_and_sweep_own(
        &harness_runner::execution::workspaces_dir(),
    );
    eprintln!(
        "\nstopped by {}; removed {removed} workspace{}; the same command resumes the run",
        if code == 130 { "SIGINT" } else { "SIGTERM" },
        if removed == 1 { "" } else { "s" }
    );
    std::process::exit(code)
}
