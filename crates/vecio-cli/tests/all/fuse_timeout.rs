//! `vecio fuse -o timeout_s=N` (`FUSE_REQUEST_TIMEOUT`): a server that stops answering is
//! aborted by the kernel, so its callers get an error instead of hanging for ever. The kernel
//! looks at pending requests every 15 s, so the abort comes within N + 15 s.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[test]
fn a_hung_server_is_aborted_by_the_kernel() {
    if fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0)
        || !Path::new("/dev/fuse").exists()
    {
        eprintln!("skipping: needs root and /dev/fuse");
        return;
    }
    let dir = common::scratch_dir("vecio-fuse-timeout-");
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&mnt).unwrap();
    fs::write(src.join("f"), "x").unwrap();
    let mut server = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .arg(&src)
        .arg(&mnt)
        .args(["-o", "timeout_s=1"])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.as_mut().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("mounted"), "{line:?}");
    assert_eq!(fs::read_to_string(mnt.join("f")).unwrap(), "x");
    // The server stops answering; a caller asks for something the kernel has not cached.
    let pid = server.id().to_string();
    assert!(Command::new("kill")
        .args(["-STOP", &pid])
        .status()
        .unwrap()
        .success());
    // kill returns when the signal is sent; a worker answers the request in its hands before it
    // stops, so the probe waits until every thread of the server has stopped.
    assert!(
        all_threads_stopped(server.id(), Duration::from_secs(10)),
        "the server's threads did not all stop within 10 s of SIGSTOP"
    );
    let (tx, rx) = mpsc::channel();
    let probe = mnt.join("new-name");
    let started = Instant::now();
    std::thread::spawn(move || {
        let answer = fs::metadata(&probe).map(|_| ());
        let _ = tx.send((answer, started.elapsed()));
    });
    let got = rx.recv_timeout(Duration::from_secs(60));
    // What the mount table said when the caller had its answer: an answer other than the
    // abort's is told apart from a mount that was gone.
    let still_mounted = common::mounts_under(dir.path()).len();
    let _ = Command::new("kill").args(["-CONT", &pid]).status();
    let gone = server.wait_timeout_or_kill(Duration::from_secs(10));
    let _ = Command::new("umount").arg("-l").arg(&mnt).status();
    let (answer, after) =
        got.expect("the caller still waits after 60 s: the kernel did not abort the connection");
    let err = answer.expect_err("a stopped server answered");
    assert_eq!(
        err.raw_os_error(),
        Some(libc::ECONNABORTED),
        "after {after:?}: {err}; mounts under the test's directory then: {still_mounted}"
    );
    assert!(gone, "the server did not end with its connection");
}

/// Waits until every thread of process `pid` is in the stopped state (`T` in its
/// `/proc/PID/task/TID/stat`), for up to `limit`. The kernel's io_uring workers (`iou-*`), which
/// serve the ring rather than answer requests, are not waited for.
fn all_threads_stopped(pid: u32, limit: Duration) -> bool {
    let end = Instant::now() + limit;
    let stopped = || -> Option<bool> {
        for task in fs::read_dir(format!("/proc/{pid}/task")).ok()? {
            let task = task.ok()?.path();
            let comm = fs::read_to_string(task.join("comm")).ok()?;
            if comm.starts_with("iou-") {
                continue;
            }
            let stat = fs::read_to_string(task.join("stat")).ok()?;
            let state = stat.rsplit_once(") ")?.1.chars().next()?;
            if state != 'T' {
                return Some(false);
            }
        }
        Some(true)
    };
    while Instant::now() < end {
        if stopped() == Some(true) {
            return true;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
    false
}

/// Waits for a child for up to `limit`, killing it past that; true when it ended by itself.
trait WaitOrKill {
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> bool;
}

impl WaitOrKill for std::process::Child {
    fn wait_timeout_or_kill(&mut self, limit: Duration) -> bool {
        let end = Instant::now() + limit;
        while Instant::now() < end {
            if let Ok(Some(_)) = self.try_wait() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.kill();
        let _ = self.wait();
        false
    }
}
