//! Locks served by the backing file system: `flock(2)` and POSIX record locks taken through the
//! mount exclude other processes through the mount and on the host, a waiting lock is granted
//! when the holder lets go, and a signal ends the wait.

use crate::common;

use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::Fixture;

fn flock(args: &[&str]) -> std::process::ExitStatus {
    Command::new("flock")
        .args(args)
        .status()
        .expect("running flock")
}

/// Holds an exclusive `flock` on `path` in a child process for `secs` seconds; returns once
/// it is held.
fn hold_flock(path: &str, secs: u32) -> std::process::Child {
    let child = Command::new("flock")
        .args(["-x", path, "sh", "-c", &format!("echo held; sleep {secs}")])
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut child = child;
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    child
}

fn setup(name: &str) -> Option<(Fixture, String, String)> {
    let fx = common::mount(name, common::config())?;
    std::fs::write(fx.m("f"), "lock me\n").unwrap();
    let m = fx.m("f").to_str().unwrap().to_string();
    let s = fx.s("f").to_str().unwrap().to_string();
    Some((fx, m, s))
}

#[test]
fn flock_through_the_mount_excludes_the_mount_and_the_host() {
    let Some((fx, m, s)) = setup("flock") else {
        return;
    };
    let mut holder = hold_flock(&m, 3);
    assert!(
        !flock(&["-n", "-x", &m, "true"]).success(),
        "a second flock through the mount"
    );
    assert!(
        !flock(&["-n", "-s", &s, "true"]).success(),
        "a flock on the host file"
    );
    // A waiting flock through the mount is granted when the holder exits.
    let t = Instant::now();
    assert!(flock(&["-w", "20", "-x", &m, "true"]).success());
    assert!(
        t.elapsed() >= Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
    holder.wait().unwrap();
    // The kernel sends RELEASE after the last close without waiting for it: the lock goes
    // with the server's descriptor a moment later (a loaded machine makes it longer).
    let freed = (0..100).any(|_| {
        std::thread::sleep(Duration::from_millis(50));
        flock(&["-n", "-x", &s, "true"]).success()
    });
    assert!(freed, "free again on the host");
    // A wait ended by a signal (flock -w uses an alarm): refused, not hung.
    let mut holder = hold_flock(&m, 4);
    let t = Instant::now();
    assert!(!flock(&["-w", "1", "-x", &m, "true"]).success());
    assert!(t.elapsed() < Duration::from_secs(3), "{:?}", t.elapsed());
    holder.kill().unwrap();
    holder.wait().unwrap();
    drop(fx);
}

/// `lockf` (POSIX record locks) through Python: a byte range locked by one process is refused
/// to another through the mount and on the host, and free once the holder closes the file.
#[test]
fn posix_record_locks_exclude_other_processes() {
    let Some((fx, m, s)) = setup("posix-locks") else {
        return;
    };
    // The holder keeps the lock until its standard input closes: no timer the probes could
    // outlast on a loaded machine.
    let holder_py = format!(
        "import fcntl,sys\nf=open('{m}','r+')\nfcntl.lockf(f,fcntl.LOCK_EX,4,2)\nprint('held',flush=True)\nsys.stdin.read()\n"
    );
    let mut holder = Command::new("python3")
        .args(["-c", &holder_py])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    let probe = |path: &str, start: u32, len: u32| {
        let py = format!(
            "import fcntl\nf=open('{path}','r+')\ntry:\n fcntl.lockf(f,fcntl.LOCK_EX|fcntl.LOCK_NB,{len},{start})\n print('got')\nexcept OSError:\n print('busy')\n"
        );
        let o = Command::new("python3").args(["-c", &py]).output().unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    assert_eq!(probe(&m, 2, 4), "busy", "the same range through the mount");
    assert_eq!(probe(&s, 3, 1), "busy", "an overlapping range on the host");
    assert_eq!(probe(&m, 6, 2), "got", "the bytes after the range");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(probe(&m, 2, 4), "got", "after the holder closed the file");
    drop(fx);
}

/// Runs a Python program that takes an OFD write lock (`F_OFD_SETLK`) on the whole of `path`
/// and reports `got` or `busy`.
fn ofd_probe(path: &str) -> String {
    let py = format!(
        "import fcntl,os,struct\nfd=os.open('{path}',os.O_RDWR)\ntry:\n fcntl.fcntl(fd,37,struct.pack('hhqqi4x',fcntl.F_WRLCK,0,0,0,0))\n print('got')\nexcept OSError:\n print('busy')\n"
    );
    let o = Command::new("python3").args(["-c", &py]).output().unwrap();
    String::from_utf8_lossy(&o.stdout).trim().to_string()
}

/// An OFD lock belongs to its open file description: it holds while any descriptor of that
/// description is open (closing a duplicate changes nothing) and goes with the last close, as
/// natively. Before, it outlived its holder (the kernel names no lock owner when it releases a
/// file), and the next `F_OFD_SETLKW` on the file waited forever.
#[test]
fn ofd_locks_go_with_the_last_close_of_their_file() {
    let Some((fx, m, s)) = setup("ofd-locks") else {
        return;
    };
    let holder_py = format!(
        "import fcntl,os,struct,time\nfd=os.open('{m}',os.O_RDWR)\nfcntl.fcntl(fd,38,struct.pack('hhqqi4x',fcntl.F_WRLCK,0,0,0,0))\nos.close(os.dup(fd))\nprint('held',flush=True)\nimport sys\nsys.stdin.read()\n"
    );
    // The holder keeps its lock until its standard input closes, however slow the probes are.
    let mut holder = Command::new("python3")
        .args(["-c", &holder_py])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(holder.stdout.as_mut().unwrap()),
        &mut line,
    )
    .unwrap();
    assert_eq!(line.trim(), "held");
    assert_eq!(ofd_probe(&m), "busy", "held through the mount");
    assert_eq!(ofd_probe(&s), "busy", "held on the host");
    drop(holder.stdin.take());
    holder.wait().unwrap();
    assert_eq!(
        ofd_probe(&m),
        "got",
        "free through the mount once its holder exited"
    );
    assert_eq!(
        ofd_probe(&s),
        "got",
        "free on the host once its holder exited"
    );
    drop(fx);
}
