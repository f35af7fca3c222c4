//! The command line as a user meets it: one line per error with the OS reason said once, exit
//! status 2 for every usage error, no colour codes when not on a terminal, `--version`
//! everywhere, `vecio fuse`'s libfuse options (-f, -d, -s, the -o list) and its refusal of a
//! mount point in use, manual pages and completions, and `vecio info` on procfs.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{scratch_dir, vecio};

fn stderr(out: &std::process::Output) -> String {
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn an_os_error_is_said_once_on_one_line() {
    let dir = scratch_dir("vecio-cl-");
    let missing = dir.path().join("missing.img");
    let sock = dir.path().join("x.sock");
    let out = vecio(
        dir.path(),
        &[
            "nbd",
            missing.to_str().unwrap(),
            "-U",
            sock.to_str().unwrap(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert_eq!(
        err.matches("No such file or directory").count(),
        1,
        "the reason once: {err}"
    );
    let out = vecio(dir.path(), &["info", missing.to_str().unwrap()]);
    let err = stderr(&out);
    assert_eq!(err.matches("os error 2").count(), 1, "{err}");
}

/// `vecio nbd DIR` (a directory where a file belongs) says that --dir serves a directory.
#[test]
fn a_directory_given_as_the_file_points_at_dir() {
    let dir = scratch_dir("vecio-cl-");
    let sock = dir.path().join("x.sock");
    let out = vecio(
        dir.path(),
        &[
            "nbd",
            dir.path().to_str().unwrap(),
            "-U",
            sock.to_str().unwrap(),
        ],
    );
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Is a directory"), "{err}");
    assert!(err.contains("--dir DIR serves"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
}

#[test]
fn bench_tree_names_a_peer_binary_that_cannot_run_before_it_starts() {
    let dir = scratch_dir("vecio-cl-");
    let started = Instant::now();
    for flag in ["--baseline", "--libfuse-hp"] {
        // A directory (a typo'd path to a build directory) is not a program.
        let out = vecio(
            dir.path(),
            &[
                "bench",
                "tree",
                "--files",
                "100",
                flag,
                dir.path().to_str().unwrap(),
            ],
        );
        let err = stderr(&out);
        assert_eq!(out.status.code(), Some(1), "{err}");
        if err.contains("cannot run") {
            // Not root, or no /dev/fuse: the experiment refuses before it reads its options.
            eprintln!("skipping: {err}");
            return;
        }
        assert!(err.contains(&format!("{flag} ")), "{err}");
        // --libfuse-hp also takes a libfuse source tree, which this directory is not.
        assert!(
            err.contains("not an executable file") || err.contains("not a libfuse source tree"),
            "{err}"
        );
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "said before any round"
    );
}

#[test]
fn usage_errors_exit_2_wherever_they_are_found() {
    let dir = scratch_dir("vecio-cl-");
    let d = dir.path().to_str().unwrap();
    for args in [
        &["fuse", "-o", "bogus", d, d][..],
        &["fuse", "--threads", "0", d, d][..],
        &["fuse", "-s", "--threads", "2", d, d][..],
        &["bench", "nowait", "--threads", "0"][..],
        &["bench", "nowait", "--depth", "0"][..],
        &["bench", "writev", "--size", "0"][..],
        &["bench", "writev", "--runtime", "0"][..],
        &["bench", "writev", "--repeat", "0"][..],
        &["bench", "fuse", "--size", "0"][..],
        &["bench", "loop", "--runtime", "-1"][..],
        &["bench", "all", "--size", "0"][..],
        &["bench", "writev", "--file", "/nonexistent-vecio/x.img"][..],
    ] {
        let out = vecio(dir.path(), args);
        assert_eq!(out.status.code(), Some(2), "{args:?}: {}", stderr(&out));
    }
    assert!(
        std::fs::read_dir(dir.path()).unwrap().next().is_none(),
        "a usage error writes nothing"
    );
}

#[test]
fn help_version_man_and_completions() {
    let dir = scratch_dir("vecio-cl-");
    let out = vecio(dir.path(), &["--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    assert!(help.contains("vecio fuse"), "{help}");
    let out = vecio(dir.path(), &["-h"]);
    assert!(String::from_utf8_lossy(&out.stdout).contains("fuse"));
    for sub in [
        &["nbd"][..],
        &["fuse"][..],
        &["info"][..],
        &["bench", "writev"][..],
        &["bench", "all"][..],
    ] {
        let mut args = sub.to_vec();
        args.push("--version");
        let out = vecio(dir.path(), &args);
        assert!(out.status.success(), "{args:?}: {}", stderr(&out));
        assert!(
            String::from_utf8_lossy(&out.stdout).contains(env!("CARGO_PKG_VERSION")),
            "{args:?}"
        );
    }
    let out = vecio(dir.path(), &["fuse", "--help"]);
    let help = String::from_utf8_lossy(&out.stdout);
    for opt in [
        "allow_other",
        "default_permissions",
        "fsname=NAME",
        "-f",
        "-d",
        "-s",
    ] {
        assert!(help.contains(opt), "fuse --help lacks {opt}");
    }
    let man = dir.path().join("man");
    let out = vecio(dir.path(), &["man", man.to_str().unwrap()]);
    assert!(out.status.success(), "{}", stderr(&out));
    for page in [
        "vecio.1",
        "vecio-nbd.1",
        "vecio-fuse.1",
        "vecio-bench-writev.1",
    ] {
        let text = std::fs::read_to_string(man.join(page)).unwrap_or_default();
        assert!(text.starts_with(".ie") || text.contains(".TH"), "{page}");
    }
    let page = std::fs::read_to_string(man.join("vecio-fuse.1")).unwrap();
    assert!(page.contains("allow_other"));
    for shell in ["bash", "zsh", "fish"] {
        let out = vecio(dir.path(), &["completions", shell]);
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(out.status.success() && text.contains("writev"), "{shell}");
    }
}

#[test]
fn no_colour_codes_when_not_on_a_terminal() {
    let dir = scratch_dir("vecio-cl-");
    let img = dir.path().join("x.img");
    std::fs::write(&img, vec![0u8; 1 << 20]).unwrap();
    // A log line at info level and an error, both to a pipe.
    let out = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args([
            "nbd",
            img.to_str().unwrap(),
            "-U",
            "/nonexistent-vecio/x.sock",
        ])
        .env("VECIO_LOG", "debug")
        .output()
        .unwrap();
    let err = stderr(&out);
    assert!(!err.is_empty());
    assert!(!err.contains('\x1b'), "colour codes in {err:?}");
}

#[test]
fn info_on_procfs_claims_no_alignment_o_direct_refuses() {
    let dir = scratch_dir("vecio-cl-");
    let out = vecio(dir.path(), &["info", "--json", "/proc/self/status"]);
    assert!(out.status.success(), "{}", stderr(&out));
    let i: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(i["capabilities"]["o_direct"]["outcome"], "refused");
    assert!(i["dio_align"].is_null(), "{}", i["dio_align"]);
    let out = vecio(dir.path(), &["info", "/proc/self/status"]);
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text
        .lines()
        .find(|l| l.starts_with("direct I/O"))
        .unwrap_or_default();
    assert!(line.contains("not available"), "{line}");
    assert!(!line.contains("4096"), "{line}");
}

#[test]
fn info_names_the_permission_it_lacked() {
    // Run as nobody where possible: root reads everything a file mode allows.
    let dir = scratch_dir("vecio-cl-");
    let secret = dir.path().join("secret");
    std::fs::write(&secret, b"x").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&secret, std::fs::Permissions::from_mode(0o600)).unwrap();
    if !can_run_as_nobody(dir.path()) {
        return;
    }
    let out = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(env!("CARGO_BIN_EXE_vecio"))
        .args(["info", secret.to_str().unwrap()])
        .output()
        .unwrap();
    let all = format!("{}{}", String::from_utf8_lossy(&out.stdout), stderr(&out));
    if all.contains("Permission denied") && !all.contains("EACCES") && !out.status.success() {
        println!("skipped: nobody cannot reach {}: {all}", secret.display());
        return;
    }
    assert!(all.contains("EACCES"), "{all}");
    assert!(all.contains("mode 600"), "{all}");
}

/// True when this test can run a command as nobody (65534) with `dir` reachable by it (made
/// traversable where a parent is closed to others); says why not otherwise.
fn can_run_as_nobody(dir: &Path) -> bool {
    use std::os::unix::fs::PermissionsExt;
    if !rustix::process::geteuid().is_root() {
        println!("skipped: needs root to run vecio as another user");
        return false;
    }
    if Command::new("setpriv").arg("--version").output().is_err() {
        println!("skipped: setpriv (util-linux) is not installed");
        return false;
    }
    let mut p = dir.to_path_buf();
    let mut dirs = vec![p.clone()];
    while p.pop() {
        dirs.push(p.clone());
    }
    let closed = dirs
        .iter()
        .any(|d| std::fs::metadata(d).is_ok_and(|m| m.permissions().mode() & 0o001 == 0));
    if closed {
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    true
}

/// `vecio nbd FILE` as nobody, FILE readable but not writable by it: refused with the hint
/// that -r exports it read-only; with -r it is served.
#[test]
fn a_file_the_user_may_not_write_is_refused_with_the_read_only_hint() {
    use std::os::unix::fs::PermissionsExt;
    let dir = scratch_dir("vecio-cl-");
    if !can_run_as_nobody(dir.path()) {
        return;
    }
    let image = dir.path().join("ro.img");
    std::fs::write(&image, vec![7u8; 1 << 16]).unwrap();
    std::fs::set_permissions(&image, std::fs::Permissions::from_mode(0o644)).unwrap();
    let socks = dir.path().join("socks");
    std::fs::create_dir(&socks).unwrap();
    std::fs::set_permissions(&socks, std::fs::Permissions::from_mode(0o777)).unwrap();
    let sock = socks.join("ro.sock");
    let as_nobody = |extra: &[&str]| {
        let mut c = Command::new("setpriv");
        c.args(["--reuid=65534", "--regid=65534", "--clear-groups"])
            .arg(env!("CARGO_BIN_EXE_vecio"))
            .args(["nbd", image.to_str().unwrap(), "-U", sock.to_str().unwrap()])
            .args(extra);
        c
    };
    let out = as_nobody(&[]).output().unwrap();
    let err = stderr(&out);
    if err.contains("cannot listen") {
        println!("skipped: nobody cannot reach {}: {err}", socks.display());
        return;
    }
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("Permission denied"), "{err}");
    assert!(err.contains("-r exports it read-only"), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    let mut child = as_nobody(&["-r"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let _ = child.kill();
    let _ = child.wait();
    assert!(
        line.starts_with("nbd+unix://"),
        "served read-only: {line:?}"
    );
}

/// Why FUSE mounts cannot be tried here, if they cannot.
fn no_fuse() -> bool {
    if !rustix::process::geteuid().is_root() || !Path::new("/dev/fuse").exists() {
        println!("skipped: mounting FUSE needs root and /dev/fuse");
        return true;
    }
    false
}

/// Starts `vecio fuse ARGS SRC MNT` with standard error piped; returns once it is mounted.
fn mount(src: &Path, mnt: &Path, args: &[&str]) -> (std::process::Child, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .args(args)
        .arg(src)
        .arg(mnt)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    (child, line)
}

/// SIGTERM, then waits for the exit and returns standard error.
fn stop(mut child: std::process::Child) -> String {
    // SAFETY: kill(2) on our own unreaped child.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut err = String::new();
    use std::io::Read;
    child
        .stderr
        .take()
        .unwrap()
        .read_to_string(&mut err)
        .unwrap();
    err
}

/// The FUSE worker threads (`vecio-fuse-N`) of `pid`, once `expect` of them have started or
/// five seconds have passed (workers start one after another; a loaded machine is slow).
fn workers_of(pid: u32, expect: usize) -> usize {
    let count = || {
        std::fs::read_dir(format!("/proc/{pid}/task"))
            .map(|d| {
                d.flatten()
                    .filter(|t| {
                        std::fs::read_to_string(t.path().join("comm"))
                            // /dev/fuse workers; not the io_uring queues' threads (the
                            // default where the kernel has them), one per CPU whatever -s says.
                            .is_ok_and(|c| {
                                c.starts_with("vecio-fuse-") && !c.starts_with("vecio-fuse-ring")
                            })
                    })
                    .count()
            })
            .unwrap_or(0)
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(5);
    let mut now = count();
    while now < expect && std::time::Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
        now = count();
    }
    // More than expected would show up a little later still.
    std::thread::sleep(Duration::from_millis(50));
    count()
}

#[test]
fn fuse_takes_libfuse_f_d_s_and_refuses_a_busy_mount_point() {
    if no_fuse() {
        return;
    }
    let dir = scratch_dir("vecio-cl-fuse-");
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    std::fs::create_dir(&src).unwrap();
    std::fs::create_dir(&mnt).unwrap();
    std::fs::write(src.join("hello"), "hello\n").unwrap();

    let (many, line) = mount(&src, &mnt, &["-f", "--threads", "4"]);
    assert!(line.starts_with("mounted "), "{line}");
    let many_threads = workers_of(many.id(), 4);
    // A second server on the same mount point is refused, and the first keeps serving.
    let out = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .arg(&src)
        .arg(&mnt)
        .output()
        .unwrap();
    let err = stderr(&out);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert!(err.contains("already a mount point"), "{err}");
    assert_eq!(
        std::fs::read_to_string(mnt.join("hello")).unwrap(),
        "hello\n"
    );
    stop(many);

    let (one, line) = mount(&src, &mnt, &["-f", "-d", "-s"]);
    assert!(line.starts_with("mounted "), "{line}");
    assert_eq!(
        std::fs::read_to_string(mnt.join("hello")).unwrap(),
        "hello\n"
    );
    let one_threads = workers_of(one.id(), 1);
    let err = stop(one);
    assert_eq!(
        (one_threads, many_threads),
        (1, 4),
        "workers with -s and --threads 4"
    );
    assert!(err.contains("DEBUG"), "-d logs at debug level: {err}");
    assert!(err.contains("threads=1"), "{err}");
    assert!(!err.contains('\x1b'), "no colour into a pipe");
}

/// `vecio`, the binary users deploy as a server, links nothing of the bench (its crate or its
/// plotting, histogram and runtime dependencies): `vecio bench` runs the separate `vecio-bench`.
/// Read from the binary's symbol table with `nm`; skipped, saying so, where binutils is absent.
#[test]
fn the_server_binary_links_none_of_the_bench() {
    let bin = env!("CARGO_BIN_EXE_vecio");
    let out = match Command::new("nm").args(["--demangle", bin]).output() {
        Ok(out) if out.status.success() => out,
        Ok(out) => panic!("nm {bin}: {}", stderr(&out)),
        Err(e) => {
            eprintln!("skipped: nm (binutils) cannot run: {e}");
            return;
        }
    };
    let symbols = String::from_utf8_lossy(&out.stdout);
    assert!(
        symbols.contains("vecio_nbd::"),
        "the binary has a symbol table to read (vecio_nbd's symbols are in it)"
    );
    for bench in [
        "vecio_bench::",
        "plotters::",
        "hdrhistogram::",
        "tokio_uring::",
    ] {
        let found: Vec<&str> = symbols
            .lines()
            .filter(|l| l.contains(bench))
            .take(3)
            .collect();
        assert!(found.is_empty(), "vecio links {bench}: {found:?}");
    }
}
