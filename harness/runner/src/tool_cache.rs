//! A hermetic cache of shell commands, shared by the cells of a run (and, with `--tool-cache
//! DIR`, across runs).
//!
//! Five arms × three seeds walk the same workspace states and run the same commands in them, so
//! most of a matrix's shell processes compute an output that is already known. A command's output
//! is a function of its inputs when the task says so (`cache: false` marks the ones that are not:
//! clocks, randomness, the network), and the inputs are all in the key:
//!
//! - the command text, its time limit and output cap;
//! - the workspace's state before the call: the content fingerprint of the work tree, plus the
//!   size and modification time of every file under `.git` and the archive folder;
//! - the sandbox (bubblewrap or not, network or not) and the allowed environment (which names the
//!   interpreter's folder), with the workspace root written as a marker.
//!
//! **Only calls that leave the workspace as they found it are cached**: after a miss the state is
//! taken again, and a call that changed anything (wrote a file, committed, touched the archive)
//! is not stored, so a hit never has to replay file changes — it leaves the workspace exactly as
//! the real call did, untouched. Timed-out calls are never stored.
//!
//! The workspace's absolute path differs per cell; a stored output has it replaced by a marker
//! and a hit puts the current root back, so the text a cell sees is the text a real call would
//! have printed. Concurrent cells asking for the same key wait for the first to finish.

use std::collections::HashMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::sandbox::Sandbox;
use crate::tools::ShellRun;

/// Stands for the workspace root inside stored outputs.
const ROOT_MARK: &str = "\u{1}FOLDBENCH_WORKSPACE\u{1}";

/// Default size cap of the on-disk store.
pub const DEFAULT_DISK_CAP: u64 = 256 * 1024 * 1024;

/// One stored result: the output as the shell returned it and its wait status.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Stored {
    /// The merged, capped output, with the workspace root replaced by a marker.
    pub output: String,
    /// The raw wait status of `sh` (`None` when it was not collected).
    pub status: Option<i32>,
}

/// Where a shell result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Source {
    /// The command ran.
    Ran,
    /// The result was taken from the cache.
    Hit,
}

/// The cache of one run.
#[derive(Debug, Default)]
pub struct ToolCache {
    mem: Mutex<HashMap<String, Arc<OnceCell<Option<Stored>>>>>,
    disk: Option<DiskStore>,
    stats: Mutex<Stats>,
}

/// Counts of what the cache did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct Stats {
    /// Results served from memory or disk.
    pub hits: u64,
    /// Commands that ran.
    pub misses: u64,
    /// Commands that ran and changed the workspace, so were not stored.
    pub uncacheable: u64,
}

impl ToolCache {
    /// An in-memory cache.
    pub fn new() -> ToolCache {
        ToolCache::default()
    }

    /// A cache that also reads and writes `dir`, keeping it under `cap` bytes (oldest entries
    /// go first).
    pub fn with_disk(dir: &Path, cap: u64) -> io::Result<ToolCache> {
        std::fs::create_dir_all(dir)?;
        Ok(ToolCache {
            disk: Some(DiskStore {
                dir: dir.to_path_buf(),
                cap,
            }),
            ..ToolCache::default()
        })
    }

    /// What the cache has done so far.
    pub fn stats(&self) -> Stats {
        *self.stats.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Runs `run` unless a result for `key` is known. `state` takes the workspace state the key
    /// was built from; a result is stored only when the state after the call equals `before`.
    pub(crate) async fn run<F, Fut>(
        &self,
        root: &Path,
        key: &str,
        before: &str,
        state: impl Fn() -> io::Result<String>,
        run: F,
    ) -> io::Result<(ShellRun, Source)>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = io::Result<ShellRun>>,
    {
        let cell = {
            let mut mem = self.mem.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(mem.entry(key.to_string()).or_default())
        };
        let mut ran: Option<ShellRun> = None;
        let stored = cell
            .get_or_try_init(|| async {
                if let Some(s) = self.disk.as_ref().and_then(|d| d.get(key)) {
                    return Ok::<_, io::Error>(Some(s));
                }
                let r = run().await?;
                let after = state()?;
                let keep = (!r.timed_out && after == before).then(|| Stored {
                    output: r.output.replace(&root.display().to_string(), ROOT_MARK),
                    status: r.status.map(|s| s.into_raw()),
                });
                if let (Some(d), Some(s)) = (&self.disk, &keep) {
                    d.put(key, s);
                }
                self.count(|c| {
                    c.misses += 1;
                    c.uncacheable += u64::from(keep.is_none());
                });
                ran = Some(r);
                Ok(keep)
            })
            .await?;
        if let Some(r) = ran {
            return Ok((r, Source::Ran));
        }
        match stored {
            Some(s) => {
                self.count(|c| c.hits += 1);
                Ok((
                    ShellRun {
                        output: s.output.replace(ROOT_MARK, &root.display().to_string()),
                        status: s.status.map(ExitStatus::from_raw),
                        timed_out: false,
                    },
                    Source::Hit,
                ))
            }
            // The first caller's run changed the workspace: this one runs for real.
            None => {
                self.count(|c| c.misses += 1);
                Ok((run().await?, Source::Ran))
            }
        }
    }

    fn count(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// The key of a shell command in a workspace: everything its output can depend on. The
/// workspace's own path is not in it (outputs store it as a marker), so cells share results.
pub fn key(command: &str, state: &str, sandbox: &Sandbox, timeout: Duration, cap: usize) -> String {
    let mut text = format!(
        "v1\ncommand={command:?}\nstate={state}\nsandbox={sandbox:?}\ntimeout_ms={}\ncap={cap}\n",
        timeout.as_millis()
    );
    for (k, v) in sandbox.env(Path::new(ROOT_MARK)) {
        text.push_str(&format!("env {k}={v:?}\n"));
    }
    harness_core::digest::sha256_hex(text.as_bytes())
}

/// Results stored as files named by key, under a size cap.
#[derive(Debug)]
struct DiskStore {
    dir: PathBuf,
    cap: u64,
}

impl DiskStore {
    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    fn get(&self, key: &str) -> Option<Stored> {
        let bytes = std::fs::read(self.path(key)).ok()?;
        serde_json::from_slice(&bytes).ok()
    }

    /// Writes an entry (aside, then renamed: readers never see half a file) and trims the store
    /// to its cap. Failures only cost a future miss, so they are ignored.
    fn put(&self, key: &str, s: &Stored) {
        let Ok(bytes) = serde_json::to_vec(s) else {
            return;
        };
        let Ok(mut tmp) = tempfile::NamedTempFile::new_in(&self.dir) else {
            return;
        };
        if io::Write::write_all(&mut tmp, &bytes).is_ok() {
            let _ = tmp.persist(self.path(key));
        }
        self.trim();
    }

    fn trim(&self) {
        let Ok(entries) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let mut files: Vec<(std::time::SystemTime, u64, PathBuf)> = entries
            .flatten()
            .filter(|e| e.path().extension().is_some_and(|x| x == "json"))
            .filter_map(|e| {
                let m = e.metadata().ok()?;
                Some((m.modified().ok()?, m.len(), e.path()))
            })
            .collect();
        let mut total: u64 = files.iter().map(|f| f.1).sum();
        files.sort();
        for (_, len, path) in files {
            if total <= self.cap {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn done(output: &str, code: i32) -> ShellRun {
        ShellRun {
            output: output.to_string(),
            status: Some(ExitStatus::from_raw(code << 8)),
            timed_out: false,
        }
    }

    #[tokio::test]
    async fn a_hit_returns_what_the_run_returned_with_the_callers_root() {
        let cache = ToolCache::new();
        let runs = AtomicUsize::new(0);
        let a = Path::new("/tmp/ws-a");
        let (r, src) = cache
            .run(
                a,
                "k",
                "s0",
                || Ok("s0".into()),
                || async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(done("error in /tmp/ws-a/src/x.py\n", 1))
                },
            )
            .await
            .unwrap();
        assert_eq!(src, Source::Ran);
        assert_eq!(r.output, "error in /tmp/ws-a/src/x.py\n");
        let b = Path::new("/tmp/ws-b");
        let (r, src) = cache
            .run(
                b,
                "k",
                "s0",
                || Ok("s0".into()),
                || async {
                    runs.fetch_add(1, Ordering::SeqCst);
                    Ok(done("never", 0))
                },
            )
            .await
            .unwrap();
        assert_eq!(src, Source::Hit);
        assert_eq!(r.output, "error in /tmp/ws-b/src/x.py\n");
        assert_eq!(r.status.unwrap().code(), Some(1));
        assert_eq!(runs.load(Ordering::SeqCst), 1);
        assert_eq!(
            cache.stats(),
            Stats {
                hits: 1,
                misses: 1,
                uncacheable: 0
            }
        );
    }

    #[tokio::test]
    async fn a_call_that_changed_the_workspace_or_timed_out_is_not_stored() {
        let cache = ToolCache::new();
        let root = Path::new("/w");
        for _ in 0..2 {
            let (_, src) = cache
                .run(
                    root,
                    "writes",
                    "s0",
                    || Ok("s1".into()),
                    || async { Ok(done("", 0)) },
                )
                .await
                .unwrap();
            assert_eq!(src, Source::Ran);
        }
        for _ in 0..2 {
            let (_, src) = cache
                .run(
                    root,
                    "slow",
                    "s0",
                    || Ok("s0".into()),
                    || async {
                        Ok(ShellRun {
                            output: String::new(),
                            status: None,
                            timed_out: true,
                        })
                    },
                )
                .await
                .unwrap();
            assert_eq!(src, Source::Ran);
        }
        assert_eq!(cache.stats().hits, 0);
        assert_eq!(cache.stats().uncacheable, 2);
    }

    #[tokio::test]
    async fn concurrent_callers_of_one_key_run_it_once() {
        let cache = Arc::new(ToolCache::new());
        let runs = Arc::new(AtomicUsize::new(0));
        let mut tasks = Vec::new();
        for _ in 0..8 {
            let (cache, runs) = (Arc::clone(&cache), Arc::clone(&runs));
            tasks.push(tokio::spawn(async move {
                cache
                    .run(
                        Path::new("/w"),
                        "k",
                        "s",
                        || Ok("s".into()),
                        || async {
                            runs.fetch_add(1, Ordering::SeqCst);
                            tokio::time::sleep(Duration::from_millis(50)).await;
                            Ok(done("out", 0))
                        },
                    )
                    .await
                    .unwrap()
                    .0
                    .output
            }));
        }
        for t in tasks {
            assert_eq!(t.await.unwrap(), "out");
        }
        assert_eq!(runs.load(Ordering::SeqCst), 1);
    }

    #[tokio::test]
    async fn the_disk_store_serves_a_new_run_and_keeps_under_its_cap() {
        let dir = tempfile::tempdir().unwrap();
        let first = ToolCache::with_disk(dir.path(), 10_000).unwrap();
        first
            .run(
                Path::new("/w"),
                "k1",
                "s",
                || Ok("s".into()),
                || async { Ok(done("from disk", 0)) },
            )
            .await
            .unwrap();
        let second = ToolCache::with_disk(dir.path(), 10_000).unwrap();
        let (r, src) = second
            .run(
                Path::new("/w"),
                "k1",
                "s",
                || Ok("s".into()),
                || async { Ok(done("ran again", 0)) },
            )
            .await
            .unwrap();
        assert_eq!((r.output.as_str(), src), ("from disk", Source::Hit));
        // A tiny cap keeps at most what fits.
        let small = ToolCache::with_disk(dir.path(), 100).unwrap();
        for i in 0..5 {
            small
                .run(
                    Path::new("/w"),
                    &format!("big{i}"),
                    "s",
                    || Ok("s".into()),
                    || async { Ok(done(&"x".repeat(60), 0)) },
                )
                .await
                .unwrap();
        }
        let total: u64 = std::fs::read_dir(dir.path())
            .unwrap()
            .flatten()
            .map(|e| e.metadata().unwrap().len())
            .sum();
        assert!(total <= 100, "{total} bytes on disk");
    }

    #[tokio::test]
    async fn shell_calls_hit_unless_marked_uncached_or_they_change_the_workspace() {
        use crate::tools::{run_shell_for, ToolLimits};
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("a.txt"), "one\n").unwrap();
        let mut limits = ToolLimits {
            cache: Some(Arc::new(ToolCache::new())),
            ..ToolLimits::default()
        };
        let t = Duration::from_secs(10);
        let go = |l: ToolLimits, cmd: &'static str| {
            let root = dir.path().to_path_buf();
            async move { run_shell_for(&root, cmd, t, &l).await.unwrap() }
        };
        // A read: the second call is a hit with the same output.
        let (a, s1) = go(limits.clone(), "cat a.txt; echo $RANDOM >/dev/null").await;
        let (b, s2) = go(limits.clone(), "cat a.txt; echo $RANDOM >/dev/null").await;
        assert_eq!((s1, s2), (Source::Ran, Source::Hit));
        assert_eq!(a.output, b.output);
        // A clock, marked `cache: false`: it runs every time.
        let clock = "date +%s%N";
        limits.uncached = Arc::from(vec![clock.to_string()]);
        let (x, s1) = go(limits.clone(), clock).await;
        let (y, s2) = go(limits.clone(), clock).await;
        assert_eq!((s1, s2), (Source::Ran, Source::Ran));
        assert_ne!(x.output, y.output);
        // A write: never stored, and the file it changes changes the next key anyway.
        let (_, s1) = go(limits.clone(), "echo two >> a.txt").await;
        let (_, s2) = go(limits.clone(), "echo two >> a.txt").await;
        assert_eq!((s1, s2), (Source::Ran, Source::Ran));
        assert_eq!(
            std::fs::read_to_string(dir.path().join("a.txt")).unwrap(),
            "one\ntwo\ntwo\n"
        );
    }

    #[test]
    fn the_key_changes_with_every_input() {
        let sb = Sandbox::unconfined();
        let t = Duration::from_secs(30);
        let base = key("ls", "s", &sb, t, 100);
        assert_eq!(base, key("ls", "s", &sb, t, 100));
        for other in [
            key("ls -l", "s", &sb, t, 100),
            key("ls", "s2", &sb, t, 100),
            key("ls", "s", &sb.for_task(true, &[]), t, 100),
            key(
                "ls",
                "s",
                &sb.for_task(false, &[("A".into(), "1".into())]),
                t,
                100,
            ),
            key("ls", "s", &sb, Duration::from_secs(5), 100),
            key("ls", "s", &sb, t, 99),
        ] {
            assert_ne!(base, other);
        }
    }
}
