//! `vecio nbd --fork`: the command returns once the socket listens, the server goes on in
//! a child (found through --pid-file), serves nbdinfo, and stops on SIGTERM, removing its
//! socket and pid file; the pid file is whole the moment the command returns.

use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// A scratch directory holding `disk.img`, a sparse image of `len` bytes.
fn image(prefix: &str, len: u64) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image).unwrap().set_len(len).unwrap();
    (dir, image)
}

/// `vecio nbd IMAGE -U SOCK --fork --pid-file PID_FILE`, its standard error dropped: the
/// parent's output once it has returned.
fn start_forked(image: &Path, sock: &Path, pid_file: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .arg(image)
        .arg("-U")
        .arg(sock)
        .arg("--fork")
        .arg("--pid-file")
        .arg(pid_file)
        .stderr(Stdio::null())
        .output()
        .unwrap()
}

#[test]
fn fork_returns_once_listening_and_the_child_serves_until_sigterm() {
    let have = Command::new("nbdinfo")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !have {
        eprintln!("SKIP: nbdinfo is not installed (scripts/setup installs it)");
        return;
    }
    let (dir, image) = image("vecio-nbd-fork-", 2 << 20);
    let sock = dir.path().join("fork.sock");
    let pid_file = dir.path().join("nbd.pid");
    let out = start_forked(&image, &sock, &pid_file);
    assert!(out.status.success(), "{out:?}");
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), uri);
    let pid: i32 = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let size = Command::new("nbdinfo").arg("--size").arg(&uri).output();
    // SAFETY: kill(2) on the pid the server wrote.
    let alive = unsafe { libc::kill(pid, 0) } == 0;
    // SAFETY: as above.
    unsafe { libc::kill(pid, libc::SIGTERM) };
    let size = size.unwrap();
    assert!(alive, "the child {pid} runs");
    assert_eq!(String::from_utf8_lossy(&size.stdout).trim(), "2097152");
    let deadline = Instant::now() + Duration::from_secs(10);
    // SAFETY: as above (signal 0 only checks the process exists).
    while unsafe { libc::kill(pid, 0) } == 0 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!sock.exists(), "the socket is removed at SIGTERM");
    assert!(!pid_file.exists(), "the pid file is removed at SIGTERM");
}

/// The pid file is whole from the moment `--fork` returns: read as fast as it can be for 100
/// ms after each of ten starts, it always holds the child's pid. (The child used to write it a
/// second time, truncating it first, after the parent had exited: a script reading it then
/// met an empty file, as a test here once did.)
#[test]
fn the_pid_file_is_whole_from_the_moment_fork_returns() {
    let (dir, image) = image("vecio-nbd-pidfile-", 1 << 20);
    let (sock, pid_file) = (dir.path().join("p.sock"), dir.path().join("p.pid"));
    for round in 0..10 {
        let out = start_forked(&image, &sock, &pid_file);
        assert!(out.status.success(), "round {round}: {out:?}");
        let read = || std::fs::read_to_string(&pid_file).unwrap();
        let first = read();
        let pid: i32 = first.trim().parse().unwrap_or(0);
        let end = Instant::now() + Duration::from_millis(100);
        let mut reads = 0;
        while Instant::now() < end {
            let now = read();
            reads += 1;
            if now != first {
                // SAFETY: kill(2) on the pid the server wrote first, if it parsed.
                unsafe { libc::kill(pid, libc::SIGTERM) };
                panic!("round {round}, read {reads}: {now:?} after {first:?}");
            }
        }
        assert!(pid > 0, "round {round}: the pid file held {first:?}");
        // SAFETY: kill(2) on the child's pid, from its pid file.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        // The server removes its pid file as it exits (the process itself then waits to be
        // reaped by whoever adopted it, which takes up to a second in some containers).
        let deadline = Instant::now() + Duration::from_secs(10);
        while pid_file.exists() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(5));
        }
        assert!(!pid_file.exists(), "round {round}: removed at SIGTERM");
    }
}
