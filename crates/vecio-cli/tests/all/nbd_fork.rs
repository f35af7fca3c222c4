//! `vecio nbd --fork`: the command returns once the socket listens, the server goes on in
//! a child (found through --pid-file), serves nbdinfo, and stops on SIGTERM, removing its
//! socket and pid file.

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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
    let dir = tempfile::Builder::new()
        .prefix("vecio-nbd-fork-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(2 << 20)
        .unwrap();
    let sock = dir.path().join("fork.sock");
    let pid_file = dir.path().join("nbd.pid");
    let out = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .arg(&image)
        .arg("-U")
        .arg(&sock)
        .arg("--fork")
        .arg("--pid-file")
        .arg(&pid_file)
        .stderr(Stdio::null())
        .output()
        .unwrap();
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
