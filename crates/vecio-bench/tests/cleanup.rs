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
