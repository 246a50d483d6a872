//! The agent's one way out of its sandbox: a port on its own loopback forwarded to a unix socket,
//! and that socket forwarded to the cell's proxy.
//!
//! The agent runs in a network namespace of its own (bubblewrap's `--unshare-net`: a loopback
//! device and nothing else), so it can reach no address on the host or beyond. Inside, the
//! `foldbench agent-bridge` process ([`inside`]) listens on `127.0.0.1:PORT`, starts the agent
//! and copies every connection to a unix socket bound into the sandbox; outside, `outside`
//! accepts on that socket and copies each connection to the proxy's TCP address. Bytes pass
//! through unchanged (streams stay streams); the proxy sees one connection per agent connection.

use std::ffi::OsString;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};

use tokio::net::{TcpListener, TcpStream, UnixListener, UnixStream};

/// Copies connections from the unix socket at `socket` to `target` until the returned task is
/// aborted (or dropped with its runtime). The socket file is made here; the caller removes its
/// folder.
pub(crate) fn outside(
    socket: &Path,
    target: SocketAddr,
) -> std::io::Result<tokio::task::JoinHandle<()>> {
    let listener = UnixListener::bind(socket)?;
    Ok(tokio::spawn(async move {
        loop {
            let Ok((mut from, _)) = listener.accept().await else {
                continue;
            };
            tokio::spawn(async move {
                if let Ok(mut to) = TcpStream::connect(target).await {
                    let _ = tokio::io::copy_bidirectional(&mut from, &mut to).await;
                }
            });
        }
    }))
}

/// What `foldbench agent-bridge` runs inside the sandbox: listens on `127.0.0.1:port`, forwards
/// each connection to `socket`, runs `command` (its first element the program) and returns its
/// exit code (128 + the signal when a signal ended it, 127 when it could not be started).
pub async fn inside(socket: PathBuf, port: u16, command: Vec<OsString>) -> i32 {
    let listener = match TcpListener::bind(("127.0.0.1", port)).await {
        Ok(l) => l,
        Err(e) => {
            crate::progress::say(&format!(
                "foldbench agent-bridge: cannot listen on 127.0.0.1:{port}: {e}"
            ));
            return 127;
        }
    };
    let forward = tokio::spawn(async move {
        loop {
            let Ok((mut from, _)) = listener.accept().await else {
                continue;
            };
            let socket = socket.clone();
            tokio::spawn(async move {
                if let Ok(mut to) = UnixStream::connect(&socket).await {
                    let _ = tokio::io::copy_bidirectional(&mut from, &mut to).await;
                }
            });
        }
    });
    let Some((program, args)) = command.split_first() else {
        crate::progress::say("foldbench agent-bridge: no command to run after `--`");
        return 127;
    };
    let status = tokio::process::Command::new(program)
        .args(args)
        .stdin(std::process::Stdio::null())
        .status()
        .await;
    forward.abort();
    match status {
        Ok(s) => exit_code(s),
        Err(e) => {
            crate::progress::say(&format!(
                "foldbench agent-bridge: cannot start {}: {e}",
                Path::new(program).display()
            ));
            127
        }
    }
}

fn exit_code(s: std::process::ExitStatus) -> i32 {
    use std::os::unix::process::ExitStatusExt as _;
    s.code()
        .or_else(|| s.signal().map(|n| 128 + n))
        .unwrap_or(1)
}
