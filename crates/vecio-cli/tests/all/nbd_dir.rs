//! `vecio nbd --dir DIR` as a user runs it: FILE and --dir are exclusive and one is needed
//! (exit 2), as are a -x that is no file name and a -D with no -x to describe; a -x naming no
//! file of DIR or a missing DIR exit 1. The socket defaults to DIR.sock beside DIR; nbdinfo
//! lists the files, nbdcopy reads and writes two of them; SIGTERM flushes and exits 0; -x
//! makes "" mean a file; --fork and systemd socket activation serve a directory as they
//! serve a file.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::{scratch_dir, vecio};

fn have(prog: &str) -> bool {
    let ok = Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: {prog} is not installed (scripts/setup installs it)");
    }
    ok
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(29).wrapping_add(seed) ^ (i >> 9) as u8)
        .collect()
}

/// `root/images` with a.img (1 MiB) and b.img (2 MiB).
fn images(root: &Path) {
    let dir = root.join("images");
    std::fs::create_dir(&dir).unwrap();
    std::fs::write(dir.join("a.img"), pattern(1 << 20, 1)).unwrap();
    std::fs::write(dir.join("b.img"), pattern(2 << 20, 2)).unwrap();
}

/// Output of a command that must succeed.
fn ok(cmd: &mut Command) -> String {
    let out = cmd.output().unwrap();
    assert!(out.status.success(), "{cmd:?}: {out:?}");
    String::from_utf8_lossy(&out.stdout).into_owned()
}

/// Starts `vecio nbd ARGS` in `dir`; returns it with its first line (printed once listening).
fn serve(dir: &Path, args: &[&str]) -> (Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line.trim().to_string())
}

fn sigterm(pid: u32) {
    // SAFETY: kill(2) on a process this test started.
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
}

#[test]
fn usage_errors_exit_2_and_a_missing_directory_or_default_exit_1() {
    let root = scratch_dir("vecio-nbd-dir-");
    images(root.path());
    let img = "images/a.img";
    for args in [
        &["nbd", img, "--dir", "images"][..],
        &["nbd", "--dir"],
        &["nbd", "--dir", "images", "-D", "what does this describe?"],
        &["nbd", "--dir", "images", "-x", "../images/a.img"],
        &["nbd", "--dir", "images", "-x", "."],
    ] {
        let out = vecio(root.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {out:?}");
    }
    for args in [
        &["nbd", "--dir", "nothing", "-U", "x.sock"][..],
        &["nbd", "--dir", "images", "-x", "c.img", "-U", "x.sock"],
        &["nbd", "--dir", img, "-U", "x.sock"],
    ] {
        let out = vecio(root.path(), args);
        assert_eq!(out.status.code(), Some(1), "{args:?}: {out:?}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert_eq!(err.trim().lines().count(), 1, "{err}");
    }
}

#[test]
fn serves_each_file_and_flushes_at_sigterm() {
    if !have("nbdinfo") || !have("nbdcopy") {
        return;
    }
    let root = scratch_dir("vecio-nbd-dir-");
    images(root.path());
    // A trailing slash still puts the socket beside the directory.
    let (child, uri) = serve(root.path(), &["--dir", "images/", "--aio=pool"]);
    let sock = root.path().join("images.sock");
    assert_eq!(uri, format!("nbd+unix:///?socket={}", sock.display()));
    let at = |name: &str| format!("nbd+unix:///{name}?socket={}", sock.display());
    let list = ok(Command::new("nbdinfo").args(["--list", "--json", &uri]));
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    let names: Vec<&str> = v["exports"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e["export-name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a.img", "b.img"]);
    // No default export without -x.
    let default = Command::new("nbdinfo").arg(&uri).output().unwrap();
    assert!(!default.status.success());
    let out = root.path().join("b.copy");
    ok(Command::new("nbdcopy").arg(at("b.img")).arg(&out));
    assert_eq!(std::fs::read(&out).unwrap(), pattern(2 << 20, 2));
    let src = root.path().join("new-a");
    std::fs::write(&src, pattern(1 << 20, 7)).unwrap();
    ok(Command::new("nbdcopy")
        .arg("--connections=4")
        .arg(&src)
        .arg(at("a.img")));
    sigterm(child.id());
    let status = child.wait_with_output().unwrap().status;
    assert!(status.success(), "{status:?}");
    assert!(!sock.exists(), "socket left behind");
    let a = std::fs::read(root.path().join("images/a.img")).unwrap();
    assert_eq!(a, pattern(1 << 20, 7));
}

#[test]
fn x_names_the_default_export_and_d_describes_it() {
    if !have("nbdinfo") {
        return;
    }
    let root = scratch_dir("vecio-nbd-dir-");
    images(root.path());
    let args = [
        "--dir", "images", "-x", "b.img", "-D", "disk b", "-r", "-U", "d.sock",
    ];
    let (mut child, uri) = serve(root.path(), &args);
    let sock = root.path().join("d.sock");
    assert_eq!(uri, format!("nbd+unix:///b.img?socket={}", sock.display()));
    let plain = format!("nbd+unix:///?socket={}", sock.display());
    let size = ok(Command::new("nbdinfo").args(["--size", &plain]));
    let list = ok(Command::new("nbdinfo").args(["--list", "--json", &plain]));
    let ro = Command::new("nbdinfo")
        .args(["--is", "read-only", &uri])
        .status()
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(size.trim(), (2 << 20).to_string());
    let v: serde_json::Value = serde_json::from_str(&list).unwrap();
    assert_eq!(v["exports"][1]["export-name"], "b.img");
    assert_eq!(v["exports"][1]["description"], "disk b");
    assert!(ro.success(), "-r applies to every export");
}

#[test]
fn fork_and_socket_activation_serve_a_directory() {
    if !have("nbdinfo") {
        return;
    }
    let root = scratch_dir("vecio-nbd-dir-");
    images(root.path());
    // Standard error stays the forked server's: not a pipe this test would wait on.
    let out = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args([
            "nbd",
            "--dir",
            "images",
            "-U",
            "f.sock",
            "--fork",
            "--pid-file",
            "pid",
        ])
        .current_dir(root.path())
        .stderr(Stdio::null())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    let pid: u32 = std::fs::read_to_string(root.path().join("pid"))
        .unwrap()
        .trim()
        .parse()
        .unwrap();
    let sock = root.path().join("f.sock");
    let uri = format!("nbd+unix:///a.img?socket={}", sock.display());
    let size = Command::new("nbdinfo").args(["--size", &uri]).output();
    sigterm(pid);
    let size = size.unwrap();
    assert_eq!(String::from_utf8_lossy(&size.stdout).trim(), "1048576");
    let deadline = Instant::now() + Duration::from_secs(10);
    while sock.exists() && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!sock.exists(), "the forked server stops at SIGTERM");

    if !have("systemd-socket-activate") {
        return;
    }
    let sock = root.path().join("ssa.sock");
    let mut launcher = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&sock)
        .arg(env!("CARGO_BIN_EXE_vecio"))
        .args(["nbd", "--dir"])
        .arg(root.path().join("images"))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    while !sock.exists() && Instant::now() < deadline + Duration::from_secs(10) {
        std::thread::sleep(Duration::from_millis(20));
    }
    let uri = format!("nbd+unix:///b.img?socket={}", sock.display());
    // Bounded: a server that ignored the passed socket would leave nbdinfo waiting.
    let size = Command::new("timeout")
        .args(["20", "nbdinfo", "--size", &uri])
        .output();
    let _ = launcher.kill();
    let _ = launcher.wait();
    let size = size.unwrap();
    assert!(size.status.success(), "{size:?}");
    assert_eq!(String::from_utf8_lossy(&size.stdout).trim(), "2097152");
}
