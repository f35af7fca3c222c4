//! A benchmark stopped by a signal leaves nothing behind: no scratch file, no `vecio-*`
//! directory, no mount, no child process. And a `--file` that does not exist is refused
//! instead of created, unless `--create` says so.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{mounts_under, processes_using, scratch_dir, vecio};

/// Starts `vecio ARGS` in `dir` without waiting for it.
fn start(dir: &Path, args: &[&str]) -> Child {
    Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args(args)
        .current_dir(dir)
        .env("VECIO_NO_PROGRESS", "1")
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .expect("starting vecio")
}

/// Waits until `ready()` holds, up to `limit`; false if it never did.
fn wait_for(limit: Duration, mut ready: impl FnMut() -> bool) -> bool {
    let start = Instant::now();
    while start.elapsed() < limit {
        if ready() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    false
}

/// Sends `sig` to the process alone (as `timeout` and CI runners do), not to its group.
fn signal(child: &Child, sig: i32) {
    // SAFETY: kill(2) on our own unreaped child; only integers are passed.
    let r = unsafe { libc::kill(child.id() as libc::pid_t, sig) };
    assert_eq!(r, 0, "kill");
}

/// Waits for `child` (at most 30 s) and returns its exit code and standard error.
fn finish(mut child: Child) -> (Option<i32>, String) {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().expect("waiting for vecio") {
            let mut err = String::new();
            if let Some(mut e) = child.stderr.take() {
                use std::io::Read;
                let _ = e.read_to_string(&mut err);
            }
            return (status.code(), err);
        }
        if start.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            panic!("vecio did not exit within 30 s of the signal");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Everything left in `dir`.
fn leftovers(dir: &Path) -> Vec<PathBuf> {
    std::fs::read_dir(dir)
        .map(|l| l.flatten().map(|e| e.path()).collect())
        .unwrap_or_default()
}

/// The scratch directory a run created in `dir`, once it holds a file.
fn scratch_in(dir: &Path, prefix: &str) -> bool {
    leftovers(dir).iter().any(|p| {
        p.file_name()
            .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
            && std::fs::read_dir(p).is_ok_and(|mut l| l.next().is_some())
    })
}

/// The same checks after every stopped run.
fn assert_nothing_left(dir: &Path) {
    // A child that got SIGKILL from its dying parent may take a moment to vanish.
    wait_for(Duration::from_secs(5), || processes_using(dir).is_empty());
    assert_eq!(processes_using(dir), Vec::<String>::new(), "processes left");
    // A mount left behind is detached before the assertion fails, so the scratch directory's
    // removal never walks into what it serves.
    let mounts = mounts_under(dir);
    vecio_bench::harness::cleanup::detach_mounts_under(dir);
    assert_eq!(mounts, Vec::<String>::new(), "mounts left");
    assert_eq!(leftovers(dir), Vec::<PathBuf>::new(), "files left");
}

#[test]
fn a_missing_file_is_refused_unless_create() {
    let dir = scratch_dir("vecio-stop-file");
    let path = dir.path().join("typo.img");
    let p = path.to_str().expect("utf-8 path");
    for args in [
        &["bench", "writev", "--file", p, "--size", "1M"][..],
        &["bench", "loop", "--file", p, "--size", "64M"][..],
    ] {
        let out = vecio(dir.path(), args);
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {err}");
        assert!(err.contains("--create"), "{err}");
        assert_eq!(err.lines().count(), 1, "one line: {err}");
        assert!(!path.exists(), "{args:?} created the file");
    }
    // With --create the file is made for the run and removed after it.
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "writev",
            "--file",
            p,
            "--create",
            "--size",
            "4M",
            "--runtime",
            "0.1",
            "--repeat",
            "1",
            "--no-fio",
            "--engines",
            "sync",
        ],
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(!path.exists(), "the created file is removed after the run");
    // --create without --file is a usage error too.
    let out = vecio(dir.path(), &["bench", "writev", "--create"]);
    assert_eq!(out.status.code(), Some(2));
}

#[test]
fn sigint_to_bench_writev_leaves_nothing() {
    let dir = scratch_dir("vecio-stop-writev");
    let d = dir.path().to_str().expect("utf-8 path");
    let child = start(
        dir.path(),
        &[
            "bench",
            "writev",
            "--dir",
            d,
            "--size",
            "256M",
            "--runtime",
            "2",
            "--repeat",
            "3",
        ],
    );
    assert!(
        wait_for(Duration::from_secs(60), || scratch_in(
            dir.path(),
            "vecio-scratch-"
        )),
        "no scratch file appeared"
    );
    // Into the fill or the measurement, with fio possibly running as a child.
    std::thread::sleep(Duration::from_millis(1500));
    signal(&child, libc::SIGINT);
    let (code, err) = finish(child);
    assert_eq!(code, Some(130), "exit status after SIGINT: {err}");
    assert!(err.contains("stopped by SIGINT"), "{err}");
    assert_nothing_left(dir.path());
}

#[test]
fn sigterm_during_the_fill_leaves_nothing() {
    let dir = scratch_dir("vecio-stop-fill");
    let d = dir.path().to_str().expect("utf-8 path");
    let child = start(
        dir.path(),
        &[
            "bench",
            "writev",
            "--dir",
            d,
            "--size",
            "2G",
            "--runtime",
            "1",
            "--no-fio",
        ],
    );
    assert!(
        wait_for(Duration::from_secs(60), || scratch_in(
            dir.path(),
            "vecio-scratch-"
        )),
        "no scratch file appeared"
    );
    signal(&child, libc::SIGTERM);
    let (code, err) = finish(child);
    assert_eq!(code, Some(143), "exit status after SIGTERM: {err}");
    assert_nothing_left(dir.path());
}

#[test]
fn sigint_to_bench_fuse_leaves_nothing() {
    if !rustix::process::geteuid().is_root() {
        println!("skipped: bench fuse mounts file systems and needs root");
        return;
    }
    if !Path::new("/dev/fuse").exists() {
        println!("skipped: no /dev/fuse here");
        return;
    }
    let dir = scratch_dir("vecio-stop-fuse");
    let d = dir.path().to_str().expect("utf-8 path");
    let child = start(
        dir.path(),
        &[
            "bench",
            "fuse",
            "--dir",
            d,
            "--size",
            "16M",
            "--runtime",
            "2",
            "--repeat",
            "3",
        ],
    );
    assert!(
        wait_for(Duration::from_secs(120), || mounts_under(dir.path()).len()
            >= 2),
        "bench fuse mounted nothing"
    );
    std::thread::sleep(Duration::from_millis(500));
    assert!(!processes_using(dir.path()).is_empty(), "servers run");
    signal(&child, libc::SIGINT);
    let (code, err) = finish(child);
    assert_eq!(code, Some(130), "exit status after SIGINT: {err}");
    assert_nothing_left(dir.path());
}

#[test]
fn free_space_is_checked_before_writing() {
    let dir = scratch_dir("vecio-stop-space");
    let d = dir.path().to_str().expect("utf-8 path");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "writev",
            "--dir",
            d,
            "--size",
            "900T",
            "--runtime",
            "1",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("free"), "{err}");
    assert_eq!(
        leftovers(dir.path()),
        Vec::<PathBuf>::new(),
        "nothing written"
    );
}

#[test]
fn a_dead_runs_leftovers_are_swept() {
    let dir = scratch_dir("vecio-stop-sweep");
    // Pid 2^22 + 1 is above the largest pid_max: the run that made this is gone.
    let stale = dir.path().join("vecio-scratch-4194305-AbCdEf");
    std::fs::create_dir(&stale).expect("mkdir");
    std::fs::write(stale.join("scratch.dat"), vec![1u8; 1 << 20]).expect("write");
    let d = dir.path().to_str().expect("utf-8 path");
    let out = vecio(
        dir.path(),
        &[
            "bench",
            "writev",
            "--dir",
            d,
            "--size",
            "4M",
            "--runtime",
            "0.1",
            "--repeat",
            "1",
            "--no-fio",
            "--engines",
            "sync",
        ],
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(err.contains("left by an earlier run"), "{err}");
    assert_eq!(leftovers(dir.path()), Vec::<PathBuf>::new());
}
