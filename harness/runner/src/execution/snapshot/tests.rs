//! The snapshot's tests: states, changes applied and worked out, the carried workspace.
use super::*;

fn tree() -> tempfile::TempDir {
    let d = tempfile::tempdir().unwrap();
    let p = d.path();
    fs::create_dir_all(p.join("src/deep")).unwrap();
    fs::create_dir_all(p.join("gone/inner")).unwrap();
    fs::write(p.join("src/a.txt"), "a\n").unwrap();
    fs::write(p.join("src/deep/b.bin"), [0u8, 159, 146, 150]).unwrap();
    fs::write(p.join("gone/inner/x"), "x").unwrap();
    fs::write(p.join("run.sh"), "#!/bin/sh\n").unwrap();
    std::os::unix::fs::symlink("src/a.txt", p.join("link")).unwrap();
    fs::create_dir_all(p.join(".git")).unwrap();
    fs::write(p.join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
    d
}

/// Runs the same edits on two copies, records the changes on the first and applies them to
/// the second: both end with the same snapshot.
#[test]
fn applying_the_changes_of_a_call_gives_the_state_the_call_left() {
    let (a, b) = (tree(), tree());
    let before = Snapshot::take(a.path()).unwrap();
    assert_eq!(before, Snapshot::take(b.path()).unwrap());
    let p = a.path();
    fs::write(p.join("src/a.txt"), format!("root is {}\n", p.display())).unwrap();
    fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o755)).unwrap();
    fs::remove_dir_all(p.join("gone")).unwrap();
    fs::create_dir_all(p.join("new/sub")).unwrap();
    fs::write(p.join("new/sub/c.csv"), "x,y\n").unwrap();
    fs::remove_file(p.join("src/deep/b.bin")).unwrap();
    fs::create_dir(p.join("src/deep/b.bin")).unwrap();
    fs::remove_file(p.join("link")).unwrap();
    std::os::unix::fs::symlink("run.sh", p.join("link")).unwrap();
    fs::write(p.join("bytes"), [0xffu8, 0, 1]).unwrap();
    fs::set_permissions(p.join("src/deep"), fs::Permissions::from_mode(0o700)).unwrap();
    let after = Snapshot::take(p).unwrap();
    assert_ne!(before.state(), after.state());
    let root_a = p.display().to_string();
    let root_b = b.path().display().to_string();
    let changes: Vec<Change> = changes(&before, &after, p)
        .unwrap()
        .unwrap()
        .iter()
        .map(|c| c.replaced(&root_a, &root_b))
        .collect();
    apply(b.path(), &changes).unwrap();
    let got = Snapshot::take(b.path()).unwrap();
    assert_eq!(
        fs::read_to_string(b.path().join("src/a.txt")).unwrap(),
        format!("root is {root_b}\n")
    );
    // Same tree apart from the one file that names its own root.
    let mut want = after.clone();
    let sha: [u8; 32] = Sha256::digest(format!("root is {root_b}\n")).into();
    if let Some(Entry::File { sha: s, .. }) = want.tree.get_mut("src/a.txt") {
        *s = sha;
    }
    assert_eq!(got.tree, want.tree);
    assert_eq!(got.meta, after.meta);
    // And worked out without reading the disk, the same tree.
    assert_eq!(applied(before.tree.clone(), &changes), got.tree);
}

#[test]
fn a_tree_refreshed_at_a_written_path_is_the_tree_read_again() {
    let d = tree();
    let p = d.path();
    let known = Snapshot::take(p).unwrap().tree;
    // A new file in new folders (write_file), and a file rewritten in place (edit_file).
    fs::create_dir_all(p.join("made/deeper")).unwrap();
    fs::write(p.join("made/deeper/n.txt"), "new\n").unwrap();
    let t = refreshed(known, p, "made/deeper/n.txt").unwrap().unwrap();
    assert_eq!(t, work_tree(p).unwrap());
    fs::write(p.join("src/a.txt"), "edited\n").unwrap();
    let t = refreshed(t, p, "src/a.txt").unwrap().unwrap();
    assert_eq!(t, work_tree(p).unwrap());
    // Not read again elsewhere: a change beside it stays unseen, which is why only the
    // path a tool wrote is refreshed after it.
    fs::write(p.join("run.sh"), "changed behind its back\n").unwrap();
    let t = refreshed(t, p, "src/a.txt").unwrap().unwrap();
    assert_ne!(t, work_tree(p).unwrap());
    // Paths a file tool does not write leave the tree unknown; the archive is not in it.
    assert_eq!(refreshed(t.clone(), p, "src").unwrap(), None);
    assert_eq!(refreshed(t.clone(), p, "link/x").unwrap(), None);
    assert_eq!(refreshed(t.clone(), p, "../x").unwrap(), None);
    assert_eq!(
        refreshed(t.clone(), p, ".foldbench/archive/x").unwrap(),
        Some(t)
    );
}

#[test]
#[cfg(debug_assertions)]
fn a_known_tree_that_is_not_the_workspaces_is_caught_when_used() {
    let d = tree();
    let known = Known::tree(work_tree(d.path()).unwrap());
    assert_eq!(
        known.clone().or_read(d.path()).unwrap(),
        work_tree(d.path()).unwrap()
    );
    fs::write(d.path().join("src/a.txt"), "changed\n").unwrap();
    let caught = std::panic::catch_unwind(|| known.or_read(d.path()));
    assert!(caught.is_err(), "a stale tree passed as the workspace's");
    // And `.git` and the archive, carried beside it.
    let known = Known::of(Snapshot::take(d.path()).unwrap());
    assert_eq!(
        known.clone().snapshot(d.path()).unwrap(),
        Snapshot::take(d.path()).unwrap()
    );
    fs::create_dir_all(d.path().join(".foldbench/archive")).unwrap();
    fs::write(d.path().join(".foldbench/archive/f"), "turns").unwrap();
    let caught = std::panic::catch_unwind(|| known.clone().snapshot(d.path()));
    assert!(caught.is_err(), "a stale archive passed as the workspace's");
    let mut forgot = known;
    forgot.forget_meta();
    assert_eq!(
        forgot.snapshot(d.path()).unwrap(),
        Snapshot::take(d.path()).unwrap()
    );
}

#[test]
fn the_state_sees_modes_folders_links_and_git_but_not_the_index() {
    let d = tree();
    let p = d.path();
    fs::write(p.join(".git/index"), "stat cache").unwrap();
    let s0 = Snapshot::take(p).unwrap().state();
    fs::write(p.join(".git/index"), "other stat cache").unwrap();
    assert_eq!(Snapshot::take(p).unwrap().state(), s0);
    for edit in [
        &|p: &Path| fs::create_dir(p.join("empty")).unwrap() as _,
        &|p: &Path| {
            fs::set_permissions(p.join("run.sh"), fs::Permissions::from_mode(0o700)).unwrap()
        },
        &|p: &Path| {
            fs::remove_file(p.join("link")).unwrap();
            std::os::unix::fs::symlink("elsewhere", p.join("link")).unwrap();
        },
        &|p: &Path| fs::write(p.join(".git/HEAD"), "ref: refs/heads/other\n").unwrap(),
        &|p: &Path| {
            fs::create_dir_all(p.join(".foldbench/archive")).unwrap();
            fs::write(p.join(".foldbench/archive/f"), "turns").unwrap();
        },
    ] as [&dyn Fn(&Path); 5]
    {
        let before = Snapshot::take(p).unwrap().state();
        edit(p);
        assert_ne!(Snapshot::take(p).unwrap().state(), before);
    }
}

#[test]
fn a_file_over_the_hash_limit_is_known_by_size_and_samples_and_makes_the_snapshot_inexact() {
    let d = tree();
    let big = d.path().join("big.bin");
    let f = fs::File::create(&big).unwrap();
    f.set_len(HASH_WHOLE_MAX + 1).unwrap();
    let (sha, whole) = hash_file(&big).unwrap();
    assert!(!whole);
    let snap = Snapshot::take(d.path()).unwrap();
    assert!(!snap.exact);
    assert_eq!(
        snap.tree.get("big.bin"),
        Some(&Entry::File {
            mode: 0o644 & !umask(),
            sha,
            whole: false
        })
    );
    // The samples see a change at either end.
    std::os::unix::fs::FileExt::write_at(&f, b"x", HASH_WHOLE_MAX).unwrap();
    assert_ne!(hash_file(&big).unwrap().0, sha);
    // At the limit, the whole file.
    f.set_len(HASH_WHOLE_MAX).unwrap();
    assert!(hash_file(&big).unwrap().1);
    assert!(Snapshot::take(d.path()).unwrap().exact);
    // Under `.git` too.
    fs::rename(&big, d.path().join(".git/bigref")).unwrap();
    f.set_len(HASH_WHOLE_MAX + 1).unwrap();
    assert!(!Snapshot::take(d.path()).unwrap().exact);
}

fn umask() -> u32 {
    let d = tempfile::tempdir().unwrap();
    fs::write(d.path().join("f"), "").unwrap();
    !fs::metadata(d.path().join("f")).unwrap().mode() & 0o666
}

#[test]
fn changes_too_large_to_store_are_none() {
    let d = tree();
    let before = Snapshot::take(d.path()).unwrap();
    let f = fs::File::create(d.path().join("big.bin")).unwrap();
    f.set_len(CHANGE_FILE_MAX + 1).unwrap();
    let after = Snapshot::take(d.path()).unwrap();
    let too_large = |c: Option<Vec<Change>>| c.is_none();
    assert!(too_large(changes(&before, &after, d.path()).unwrap()));
    f.set_len(CHANGE_FILE_MAX).unwrap();
    let after = Snapshot::take(d.path()).unwrap();
    assert!(changes(&before, &after, d.path()).unwrap().is_some());
    // Several files under the per-file limit, together over the per-call one.
    for i in 0..(CHANGES_MAX / CHANGE_FILE_MAX) {
        let f = fs::File::create(d.path().join(format!("part{i}"))).unwrap();
        f.set_len(CHANGE_FILE_MAX).unwrap();
    }
    let after = Snapshot::take(d.path()).unwrap();
    assert!(too_large(changes(&before, &after, d.path()).unwrap()));
}

#[test]
fn a_git_folder_linked_elsewhere_is_not_followed() {
    let d = tree();
    let host = tempfile::tempdir().unwrap();
    fs::write(host.path().join("HEAD"), "ref: refs/heads/main\n").unwrap();
    fs::remove_dir_all(d.path().join(".git")).unwrap();
    std::os::unix::fs::symlink(host.path(), d.path().join(".git")).unwrap();
    let s0 = Snapshot::take(d.path()).unwrap().state();
    // The host folder's content is not what the workspace holds: changing it changes
    // nothing; pointing the link elsewhere does.
    fs::write(host.path().join("HEAD"), "ref: refs/heads/other\n").unwrap();
    fs::write(host.path().join("more"), "x").unwrap();
    assert_eq!(Snapshot::take(d.path()).unwrap().state(), s0);
    fs::remove_file(d.path().join(".git")).unwrap();
    std::os::unix::fs::symlink("/elsewhere", d.path().join(".git")).unwrap();
    assert_ne!(Snapshot::take(d.path()).unwrap().state(), s0);
}

#[test]
fn a_file_with_other_hard_links_is_replaced_not_written_through() {
    let d = tree();
    let other = tempfile::tempdir().unwrap();
    let outside = other.path().join("shared");
    fs::write(&outside, "fixture").unwrap();
    fs::hard_link(&outside, d.path().join("linked")).unwrap();
    apply(
        d.path(),
        &[Change::File {
            path: "linked".into(),
            mode: 0o644,
            content: Content::Text("new".into()),
        }],
    )
    .unwrap();
    assert_eq!(fs::read_to_string(&outside).unwrap(), "fixture");
    assert_eq!(fs::read_to_string(d.path().join("linked")).unwrap(), "new");
}

#[test]
fn content_survives_json_as_text_or_bytes() {
    for c in [
        Content::Text("line\n".into()),
        Content::Bytes(vec![0xff, 0, 7]),
    ] {
        let json = serde_json::to_string(&c).unwrap();
        assert_eq!(serde_json::from_str::<Content>(&json).unwrap(), c);
    }
    assert_eq!(
        replace_bytes(b"a/ROOT/b ROOT", b"ROOT", b"/w"),
        b"a//w/b /w".to_vec()
    );
}
