//! A hermetic cache of shell commands, shared by the cells of a run (and, with `--tool-cache
//! DIR`, across runs).
//!
//! Five arms × three seeds walk the same workspace states and run the same commands in them, so
//! most of a matrix's shell processes compute an output that is already known. A command's output
//! is a function of its inputs when the task says so (`cache: false` marks the ones that are not:
//! clocks, randomness, the network), and the inputs are all in the key:
//!
//! - the command text, its time limit and output cap;
//! - the workspace's state before the call (`Snapshot::state`): every folder, file and symlink
//!   of the work tree with its mode and content, what identifies `.git`'s commits and refs, and
//!   the archive folder's names and sizes;
//! - the sandbox (bubblewrap or not, network or not) and the allowed environment (which names the
//!   interpreter's folder), with the workspace root written as a marker.
//!
//! **A result is the output, the exit status and the call's file changes**: after a miss the
//! workspace is looked at again and what the call created, rewrote, removed or re-moded in the
//! work tree is stored with the output; a hit applies those changes, so the workspace ends
//! exactly as the real call left it (same folders, files, contents, modes and links). A call that
//! changed `.git` or the archive folder is not stored (it runs every time), and neither is a
//! timed-out one.
//!
//! The workspace's absolute path differs per cell; a stored output and stored file contents have
//! it replaced by a marker and a hit puts the current root back, so the text a cell sees and the
//! files it gets are what a real call would have printed and written. Concurrent cells asking for
//! the same key wait for the first to finish.

use std::collections::HashMap;
use std::io;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::ExitStatus;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::sync::OnceCell;

use crate::execution::process::ShellRun;
use crate::execution::sandbox::Sandbox;
use crate::execution::snapshot::{self, Change, Snapshot};

/// Stands for the workspace root inside stored outputs.
const ROOT_MARK: &str = "\u{1}FOLDBENCH_WORKSPACE\u{1}";

/// Default size cap of the on-disk store.
pub const DEFAULT_DISK_CAP: u64 = 256 * 1024 * 1024;

/// One stored result: the output as the shell returned it, its wait status and the changes the
/// call made to the work tree.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct Stored {
    /// The merged, capped output, with the workspace root replaced by a marker.
    pub(crate) output: String,
    /// The raw wait status of `sh` (`None` when it was not collected).
    pub(crate) status: Option<i32>,
    /// What the call changed in the work tree, in the order to apply it, with the workspace root
    /// replaced by a marker in file contents (empty: it changed nothing).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub(crate) changes: Vec<Change>,
}

/// Where a shell result came from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Source {
    /// The command ran.
    Ran,
    /// The result was taken from the cache.
    Hit,
}

/// One key's result, filled by the first caller (`None`: the call could not be stored).
type Slot = Arc<OnceCell<Option<Arc<Stored>>>>;

/// The cache of one run.
#[derive(Debug, Default)]
pub struct ToolCache {
    mem: Mutex<HashMap<String, Slot>>,
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
    /// Commands that ran and were not stored: they changed `.git` or the archive folder, timed
    /// out, wrote more than the cache keeps (`snapshot::CHANGE_FILE_MAX`,
    /// `snapshot::CHANGES_MAX`), or ran where a file is too large to hash whole
    /// (`snapshot::HASH_WHOLE_MAX`).
    pub uncacheable: u64,
    /// Hits that applied file changes to the workspace.
    pub(crate) replayed: u64,
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

    /// Runs `run` unless a result for `key` is known. `before` is the workspace snapshot the key
    /// was built from and `snap` takes it again after a miss: the call's changes to the work tree
    /// are stored with its output, and a hit applies them to `root`. A call that changed
    /// anything else (`.git`, the archive) or timed out is not stored. Also returns the work
    /// workspace the call left as far as it is known without reading it again: after a hit,
    /// `before` with the changes applied; after a run that went through the cache, the
    /// snapshot taken after it (see [`snapshot::Known`]).
    pub(crate) async fn run<F, Fut>(
        &self,
        root: &Path,
        key: &str,
        before: &Snapshot,
        snap: impl Fn() -> io::Result<Snapshot>,
        run: F,
    ) -> io::Result<(ShellRun, Source, snapshot::Known)>
    where
        F: Fn() -> Fut,
        Fut: std::future::Future<Output = io::Result<ShellRun>>,
    {
        let cell = {
            let mut mem = self.mem.lock().unwrap_or_else(|e| e.into_inner());
            Arc::clone(mem.entry(key.to_string()).or_default())
        };
        let root_text = root.display().to_string();
        let mut ran: Option<(ShellRun, Snapshot)> = None;
        let stored = cell
            .get_or_try_init(|| async {
                if let Some(s) = self.disk.as_ref().and_then(|d| d.get(key)) {
                    return Ok::<_, io::Error>(Some(Arc::new(s)));
                }
                let r = run().await?;
                let after = snap()?;
                let changes = if r.timed_out || after.meta != before.meta {
                    None
                } else {
                    snapshot::changes(before, &after, root)?
                };
                let keep = changes.map(|changes| {
                    Arc::new(Stored {
                        output: r.output.replace(&root_text, ROOT_MARK),
                        status: r.status.map(|s| s.into_raw()),
                        changes: changes
                            .iter()
                            .map(|c| c.replaced(&root_text, ROOT_MARK))
                            .collect(),
                    })
                });
                if let (Some(d), Some(s)) = (&self.disk, &keep) {
                    d.put(key, s);
                }
                self.count(|c| {
                    c.misses += 1;
                    c.uncacheable += u64::from(keep.is_none());
                });
                ran = Some((r, after));
                Ok(keep)
            })
            .await?;
        if let Some((r, after)) = ran {
            return Ok((r, Source::Ran, snapshot::Known::of(after)));
        }
        match stored {
            Some(s) => {
                let changes: Vec<Change> = s
                    .changes
                    .iter()
                    .map(|c| c.replaced(ROOT_MARK, &root_text))
                    .collect();
                snapshot::apply(root, &changes)?;
                self.count(|c| {
                    c.hits += 1;
                    c.replayed += u64::from(!changes.is_empty());
                });
                // A stored call changed neither `.git` nor the archive.
                let after = snapshot::Known::parts(
                    snapshot::applied(before.tree.clone(), &changes),
                    before.exact.then_some((before.meta, true)),
                );
                Ok((
                    ShellRun {
                        output: s.output.replace(ROOT_MARK, &root_text),
                        status: s.status.map(ExitStatus::from_raw),
                        timed_out: false,
                    },
                    Source::Hit,
                    after,
                ))
            }
            // The first caller's run could not be stored: this one runs for real.
            None => {
                self.count(|c| c.misses += 1);
                Ok((run().await?, Source::Ran, snapshot::Known::unknown()))
            }
        }
    }

    /// Counts a call that ran without the cache because its workspace's state does not
    /// determine the workspace (a file too large to hash whole: [`Snapshot::exact`]).
    pub(crate) fn count_unkeyed(&self) {
        self.count(|c| {
            c.misses += 1;
            c.uncacheable += 1;
        });
    }

    fn count(&self, f: impl FnOnce(&mut Stats)) {
        f(&mut self.stats.lock().unwrap_or_else(|e| e.into_inner()));
    }
}

/// The key of a shell command in a workspace: everything its output can depend on. The
/// workspace's own path is not in it (outputs store it as a marker), so cells share results.
pub(crate) fn key(
    command: &str,
    state: &str,
    sandbox: &Sandbox,
    timeout: Duration,
    cap: usize,
) -> String {
    // v3: the sandbox drops every capability and covers private host files; results stored
    // on disk under the older sandbox are not reused.
    let mut text = format!(
        "v3\ncommand={command:?}\nstate={state}\nsandbox={sandbox:?}\ntimeout_ms={}\ncap={cap}\n",
        timeout.as_millis()
    );
    for (k, v) in sandbox.env(Path::new(ROOT_MARK)) {
        text.push_str(&format!("env {k}={v:?}\n"));
    }
    harness_core::sha256_hex(text.as_bytes())
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
    use crate::execution::snapshot::Known;
    use std::collections::BTreeMap;
    use std::sync::atomic::{AtomicUsize, Ordering};

    fn done(output: &str, code: i32) -> ShellRun {
        ShellRun {
            output: output.to_string(),
            status: Some(ExitStatus::from_raw(code << 8)),
            timed_out: false,
        }
    }

    /// A snapshot of an empty work tree whose `.git` and archive digest is `meta`.
    fn snap(meta: u8) -> Snapshot {
        Snapshot {
            tree: BTreeMap::new(),
            meta: [meta; 32],
            exact: true,
        }
    }

    #[tokio::test]
    async fn a_hit_returns_what_the_run_returned_with_the_callers_root() {
        let cache = ToolCache::new();
        let runs = AtomicUsize::new(0);
        let a = Path::new("/tmp/ws-a");
        let (r, src, _) = cache
            .run(
                a,
                "k",
                &snap(0),
                || Ok(snap(0)),
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
        let (r, src, _) = cache
            .run(
                b,
                "k",
                &snap(0),
                || Ok(snap(0)),
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
                uncacheable: 0,
                replayed: 0,
            }
        );
    }

    #[tokio::test]
    async fn a_call_that_changed_git_or_the_archive_or_timed_out_is_not_stored() {
        let cache = ToolCache::new();
        let root = Path::new("/w");
        for _ in 0..2 {
            let (_, src, _) = cache
                .run(
                    root,
                    "commits",
                    &snap(0),
                    || Ok(snap(1)),
                    || async { Ok(done("", 0)) },
                )
                .await
                .unwrap();
            assert_eq!(src, Source::Ran);
        }
        for _ in 0..2 {
            let (_, src, _) = cache
                .run(
                    root,
                    "slow",
                    &snap(0),
                    || Ok(snap(0)),
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
                        &snap(0),
                        || Ok(snap(0)),
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
                &snap(0),
                || Ok(snap(0)),
                || async { Ok(done("from disk", 0)) },
            )
            .await
            .unwrap();
        let second = ToolCache::with_disk(dir.path(), 10_000).unwrap();
        let (r, src, _) = second
            .run(
                Path::new("/w"),
                "k1",
                &snap(0),
                || Ok(snap(0)),
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
                    &snap(0),
                    || Ok(snap(0)),
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

    /// Two workspaces with the same files: `a.txt` and a `.git` folder.
    fn twins() -> (tempfile::TempDir, tempfile::TempDir) {
        let make = || {
            // Under the canonical temp folder, as workspaces are, so `pwd` prints the root.
            let d = tempfile::tempdir_in(std::env::temp_dir().canonicalize().unwrap()).unwrap();
            std::fs::write(d.path().join("a.txt"), "one\n").unwrap();
            std::fs::create_dir(d.path().join(".git")).unwrap();
            d
        };
        (make(), make())
    }

    #[tokio::test]
    async fn shell_calls_hit_unless_marked_uncached_and_a_hit_replays_the_file_changes() {
        use crate::execution::shell::{run_shell_known, ToolLimits};
        let (a, b) = twins();
        let mut limits = ToolLimits {
            cache: Some(Arc::new(ToolCache::new())),
            ..ToolLimits::default()
        };
        let t = Duration::from_secs(10);
        let go = |l: ToolLimits, root: &Path, cmd: &'static str| {
            let root = root.to_path_buf();
            async move {
                let (run, source, _) = run_shell_known(&root, cmd, t, &l, Known::unknown())
                    .await
                    .unwrap();
                (run, source)
            }
        };
        // A read: the second call is a hit with the same output.
        let cat = "cat a.txt; echo $RANDOM >/dev/null";
        let (x, s1) = go(limits.clone(), a.path(), cat).await;
        let (y, s2) = go(limits.clone(), a.path(), cat).await;
        assert_eq!((s1, s2), (Source::Ran, Source::Hit));
        assert_eq!(x.output, y.output);
        // A clock, marked `cache: false`: it runs every time.
        let clock = "date +%s%N";
        limits.uncached = Arc::from(vec![clock.to_string()]);
        let (x, s1) = go(limits.clone(), a.path(), clock).await;
        let (y, s2) = go(limits.clone(), a.path(), clock).await;
        assert_eq!((s1, s2), (Source::Ran, Source::Ran));
        assert_ne!(x.output, y.output);
        // A call that writes files: it runs in `a`, and in `b` (same state) the hit makes the
        // same changes — including a file naming its own workspace — without running.
        let write = "echo two >> a.txt; mkdir -p out/x; pwd > out/x/where; rm -f gone; \
                     chmod +x a.txt; echo $RANDOM > out/rand";
        std::fs::write(a.path().join("gone"), "").unwrap();
        std::fs::write(b.path().join("gone"), "").unwrap();
        let (_, s1) = go(limits.clone(), a.path(), write).await;
        let (_, s2) = go(limits.clone(), b.path(), write).await;
        assert_eq!((s1, s2), (Source::Ran, Source::Hit));
        for d in [&a, &b] {
            let p = d.path();
            assert_eq!(
                std::fs::read_to_string(p.join("a.txt")).unwrap(),
                "one\ntwo\n"
            );
            assert_eq!(
                std::fs::read_to_string(p.join("out/x/where")).unwrap(),
                format!("{}\n", p.display())
            );
            assert!(!p.join("gone").exists());
        }
        assert_eq!(
            std::fs::read(a.path().join("out/rand")).unwrap(),
            std::fs::read(b.path().join("out/rand")).unwrap(),
            "the hit wrote what the real call wrote"
        );
        let (sa, sb) = (
            Snapshot::take(a.path()).unwrap(),
            Snapshot::take(b.path()).unwrap(),
        );
        assert_eq!(
            sa.tree.keys().collect::<Vec<_>>(),
            sb.tree.keys().collect::<Vec<_>>()
        );
        // A call that writes into `.git` is never stored.
        let git = "echo x > .git/marker";
        let (_, s1) = go(limits.clone(), a.path(), git).await;
        let (_, s2) = go(limits.clone(), b.path(), git).await;
        assert_eq!((s1, s2), (Source::Ran, Source::Ran));
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
