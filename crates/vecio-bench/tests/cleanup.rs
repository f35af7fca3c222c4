//! What a stopped benchmark undoes: `cleanup::remove_all` (what SIGINT, SIGTERM and a panic in
//! `vecio bench` call) removes registered scratch directories, detaches mounts under them and
//! stops registered child processes; an entry its owner dropped is left alone.

use std::path::Path;
use std::process::Command;

use vecio_bench::harness::cleanup::{self, ScratchDir};

#[test]
fn remove_all_undoes_what_is_still_registered() {
    let parent = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a scratch dir");
    let dir = ScratchDir::new_in("scratch", parent.path()).expect("a scratch dir");
    let path = dir.path().to_path_buf();
    std::fs::write(path.join("scratch.dat"), vec![7u8; 1 << 16]).expect("write");
    let mut cmd = Command::new("sleep");
    cmd.arg("60");
    cleanup::die_with_parent(&mut cmd);
    let child = cmd.spawn().expect("sleep");
    let pid = child.id();
    let _tracked = cleanup::track_child(pid);
    // A file whose owner already removed it and dropped its entry stays untouched.
    let kept = parent.path().join("kept");
    std::fs::write(&kept, b"mine").expect("write");
    drop(cleanup::track_path(&kept));

    // A mount under the scratch directory, where this test may mount (root).
    let mnt = path.join("mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let mounted = rustix::process::geteuid().is_root()
        && Command::new("mount")
            .args(["-t", "tmpfs", "vecio-test", mnt.to_str().expect("utf-8")])
            .status()
            .is_ok_and(|s| s.success());
    if !mounted {
        println!("not root or no mount(8): the mount part is skipped");
    }

    let undone = cleanup::remove_all();
    assert!(undone >= 2, "{undone} entries undone");
    assert!(!path.exists(), "the scratch directory is gone");
    assert!(cleanup::mounts_under(&path).is_empty(), "mounts detached");
    assert!(
        !Path::new(&format!("/proc/{pid}")).exists(),
        "the child was stopped and reaped"
    );
    assert_eq!(std::fs::read(&kept).expect("kept"), b"mine");
    drop(dir);
    std::mem::forget(child);
}

/// `remove_tree` never removes what a mount under the directory holds, even a mount that
/// appears after the mounts were detached (as a FUSE server's may while a stopped run cleans
/// up): it detaches the mount and removes only what lies on the directory's own file system.
#[test]
fn remove_tree_never_crosses_into_a_mount() {
    if !rustix::process::geteuid().is_root() {
        println!("SKIP: mounting a tmpfs needs root");
        return;
    }
    let parent = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).expect("a scratch dir");
    let dir = parent.path().join("tree");
    std::fs::create_dir_all(dir.join("a/b")).expect("mkdir");
    std::fs::write(dir.join("a/b/own"), b"removed").expect("write");
    let mnt = dir.join("a/mnt");
    std::fs::create_dir(&mnt).expect("mkdir");
    let ok = Command::new("mount")
        .args(["-t", "tmpfs", "vecio-test", mnt.to_str().expect("utf-8")])
        .status()
        .is_ok_and(|s| s.success());
    assert!(ok, "mount -t tmpfs");
    std::fs::write(mnt.join("served"), b"must stay").expect("write");
    // Held open, so the detached mount's file can be looked at afterwards.
    let held = std::fs::File::open(&mnt).expect("open the mount");
    cleanup::remove_tree(&dir).expect("remove_tree");
    assert!(!dir.exists(), "the directory is gone");
    let served = rustix::fs::statat(&held, c"served", rustix::fs::AtFlags::empty());
    assert!(served.is_ok(), "the file inside the mount was removed");
}
