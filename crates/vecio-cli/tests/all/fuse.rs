//! `vecio fuse` as a user runs it: it prints `mounted SOURCE on MOUNTPOINT` once mounted,
//! serves, and on SIGTERM unmounts and exits 0 (pid file removed; a mount still held is
//! served until a second signal); after `kill -9` the mount
//! reports ENOTCONN until `fusermount3 -u` (or `umount -l`) removes it; bad input exits 1 with
//! one line and mounts nothing.

use crate::common;

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Output, Stdio};
use std::time::{Duration, Instant};

/// Why FUSE mounts cannot be tested here, if they cannot.
pub(super) fn skip(test: &str) -> bool {
    let why = if fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
        "not root: mount(2) of a FUSE file system needs CAP_SYS_ADMIN"
    } else if !Path::new("/dev/fuse").exists() {
        "/dev/fuse is missing"
    } else {
        return false;
    };
    eprintln!("skipping {test}: {why}");
    true
}

/// True while something is mounted on `mnt` (from mountinfo, without touching the mount).
pub(super) fn is_mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_str().unwrap();
    info.lines().any(|l| l.split(' ').nth(4) == Some(want))
}

/// Lazily unmounts whatever is on `mnt`.
fn force_unmount(mnt: &Path) {
    if is_mounted(mnt) {
        let _ = Command::new("umount").arg("-l").arg(mnt).status();
    }
}

/// A `vecio fuse` process; killed, and its mount removed, however the test ends.
pub(super) struct Mounted {
    child: Option<Child>,
    mnt: PathBuf,
}

impl Mounted {
    pub(super) fn child(&mut self) -> &mut Child {
        self.child.as_mut().expect("server running")
    }

    /// Waits up to `limit` for the process to exit.
    pub(super) fn wait(&mut self, limit: Duration) -> Option<ExitStatus> {
        let end = Instant::now() + limit;
        loop {
            if let Some(s) = self.child().try_wait().unwrap() {
                self.child = None;
                return Some(s);
            }
            if Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(10));
        }
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        if let Some(c) = &mut self.child {
            let _ = c.kill();
            let _ = c.wait();
        }
        force_unmount(&self.mnt);
    }
}

/// Scratch `DIR` with `DIR/src` (holding `hello`) and an empty `DIR/mnt`.
pub(super) fn layout() -> (tempfile::TempDir, PathBuf, PathBuf) {
    let dir = common::scratch_dir("vecio-fuse-cli-");
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&mnt).unwrap();
    fs::write(src.join("hello"), "hello\n").unwrap();
    (dir, src, mnt)
}

/// Starts `vecio fuse ARGS SRC MNT` and waits for its first line.
pub(super) fn start(src: &Path, mnt: &Path, args: &[&str]) -> (Mounted, String) {
    start_with(src, mnt, args, Stdio::inherit())
}

/// [`start`] with the server's standard error going to `stderr`.
fn start_with(src: &Path, mnt: &Path, args: &[&str], stderr: Stdio) -> (Mounted, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .args(args)
        .arg(src)
        .arg(mnt)
        .stdout(Stdio::piped())
        .stderr(stderr)
        .spawn()
        .expect("running vecio fuse");
    let stdout = child.stdout.take().unwrap();
    let mut m = Mounted {
        child: Some(child),
        mnt: mnt.to_path_buf(),
    };
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line).unwrap();
    if line.is_empty() {
        panic!(
            "vecio fuse printed nothing: {:?}",
            m.wait(Duration::from_secs(5))
        );
    }
    (m, line.trim_end().to_string())
}

pub(super) fn pid_of(m: &mut Mounted) -> String {
    m.child().id().to_string()
}

#[test]
fn serves_until_sigterm_then_unmounts_and_exits_0() {
    if skip("serves_until_sigterm") {
        return;
    }
    let (dir, src, mnt) = layout();
    let pid_file = dir.path().join("pid");
    let (mut m, line) = start(
        &src,
        &mnt,
        &["--threads", "2", "--pid-file", pid_file.to_str().unwrap()],
    );
    assert_eq!(
        line,
        format!("mounted {} on {}", src.display(), mnt.display())
    );
    let pid = pid_of(&mut m);
    assert_eq!(fs::read_to_string(&pid_file).unwrap().trim(), pid);
    assert!(is_mounted(&mnt));
    assert_eq!(fs::read_to_string(mnt.join("hello")).unwrap(), "hello\n");
    fs::write(mnt.join("new"), "new\n").unwrap();
    assert_eq!(fs::read_to_string(src.join("new")).unwrap(), "new\n");
    let mut names: Vec<_> = fs::read_dir(&mnt)
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["hello", "new"]);

    assert!(Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .unwrap()
        .success());
    let status = m
        .wait(Duration::from_secs(10))
        .expect("vecio fuse did not exit within 10 s of SIGTERM");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!is_mounted(&mnt), "still mounted after SIGTERM");
    assert!(!pid_file.exists(), "pid file left behind");
    assert_eq!(fs::read_dir(&mnt).unwrap().count(), 0);
    assert_eq!(fs::read_to_string(src.join("new")).unwrap(), "new\n");
}

#[test]
fn sigint_stops_a_read_only_mount_and_external_unmounts_stop_the_server() {
    if skip("sigint") {
        return;
    }
    let (_dir, src, mnt) = layout();
    let (mut m, _) = start(&src, &mnt, &["-o", "ro,noexec", "--engine", "sync"]);
    assert_eq!(fs::read_to_string(mnt.join("hello")).unwrap(), "hello\n");
    let e = fs::write(mnt.join("new"), "x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(30), "want EROFS: {e}");
    let pid = pid_of(&mut m);
    assert!(Command::new("kill")
        .args(["-INT", &pid])
        .status()
        .unwrap()
        .success());
    let status = m
        .wait(Duration::from_secs(10))
        .expect("SIGINT did not stop it");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!is_mounted(&mnt));

    // Unmounted by someone else: the server ends, successfully.
    let (mut m, _) = start(&src, &mnt, &[]);
    assert_eq!(fs::read_to_string(mnt.join("hello")).unwrap(), "hello\n");
    let o = Command::new("umount").arg(&mnt).output().unwrap();
    assert!(o.status.success(), "umount: {o:?}");
    let status = m
        .wait(Duration::from_secs(10))
        .expect("the server did not notice the unmount");
    assert_eq!(status.code(), Some(0), "{status:?}");
}

#[test]
fn kill_9_leaves_an_enotconn_mount_that_fusermount3_removes() {
    if skip("kill_9") {
        return;
    }
    let (_dir, src, mnt) = layout();
    let (mut m, _) = start(&src, &mnt, &[]);
    assert_eq!(fs::read_to_string(mnt.join("hello")).unwrap(), "hello\n");
    m.child().kill().unwrap();
    let status = m
        .wait(Duration::from_secs(10))
        .expect("kill -9 did not end it");
    assert_eq!(
        std::os::unix::process::ExitStatusExt::signal(&status),
        Some(9)
    );

    assert!(is_mounted(&mnt), "the kernel removed the mount by itself");
    // On /dev/fuse the kernel answers ENOTCONN; when the connection served FUSE over io_uring
    // (the default where the kernel has it), its teardown aborts the connection: ECONNABORTED,
    // or ECANCELED for a request that met the rings while they were being cancelled (seen once
    // under CI's load).
    let dead = |e: &std::io::Error| {
        [libc::ENOTCONN, libc::ECONNABORTED, libc::ECANCELED]
            .contains(&e.raw_os_error().unwrap_or(0))
    };
    let e = fs::read_dir(&mnt).unwrap_err();
    assert!(dead(&e), "{e}");
    let e = fs::read(mnt.join("hello")).unwrap_err();
    assert!(dead(&e), "{e}");
    let ls = Command::new("ls").arg(&mnt).output().unwrap();
    let said = String::from_utf8_lossy(&ls.stderr);
    assert!(
        said.contains("Transport endpoint is not connected")
            || said.contains("Software caused connection abort"),
        "ls said {said:?}"
    );
    // A new server on it is refused with what happened there and how to remove it.
    let again = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .arg(&src)
        .arg(&mnt)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&again.stderr);
    assert_eq!(again.status.code(), Some(1), "{err}");
    assert!(err.contains("whose server is gone"), "{err}");
    assert!(err.contains("fusermount3 -u"), "{err}");

    let how = match Command::new("fusermount3").arg("-u").arg(&mnt).output() {
        Ok(o) => {
            assert!(o.status.success(), "fusermount3 -u: {o:?}");
            "fusermount3 -u"
        }
        Err(_) => {
            eprintln!("fusermount3 is not installed: using umount -l");
            let o = Command::new("umount").arg("-l").arg(&mnt).output().unwrap();
            assert!(o.status.success(), "umount -l: {o:?}");
            "umount -l"
        }
    };
    assert!(!is_mounted(&mnt), "still mounted after {how}");
    assert_eq!(fs::read_dir(&mnt).unwrap().count(), 0);
    assert_eq!(fs::read_to_string(src.join("hello")).unwrap(), "hello\n");
}

/// Runs `vecio fuse ARGS` expecting it to exit by itself within 10 s.
fn run_fuse(args: &[&Path], mnt: &Path) -> Output {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("fuse")
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let end = Instant::now() + Duration::from_secs(10);
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > end {
            let _ = child.kill();
            let _ = child.wait();
            force_unmount(mnt);
            panic!("vecio fuse {args:?} is still running after 10 s");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// Checks that `vecio fuse ARGS` exits `code` with one line on stderr holding `needle`, and
/// leaves nothing mounted on `mnt`.
fn refused(args: &[&str], mnt: &Path, code: i32, needle: &str) {
    let paths: Vec<&Path> = args.iter().map(Path::new).collect();
    let out = run_fuse(&paths, mnt);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(code), "{args:?}: {err}");
    assert!(out.stdout.is_empty(), "{args:?} printed {:?}", out.stdout);
    assert!(!is_mounted(mnt), "{args:?} mounted something");
    if code == 1 {
        assert_eq!(
            err.lines().count(),
            1,
            "{args:?}: want one line, got {err:?}"
        );
        assert!(err.starts_with("vecio: "), "{args:?}: {err:?}");
    }
    assert!(err.contains(needle), "{args:?}: {err:?} lacks {needle:?}");
}

#[test]
fn bad_input_exits_1_with_one_line_and_usage_errors_2() {
    if skip("bad_input") {
        return;
    }
    let (dir, src, mnt) = layout();
    let (s, m) = (src.to_str().unwrap(), mnt.to_str().unwrap());
    let file = dir.path().join("file");
    fs::write(&file, "").unwrap();
    let f = file.to_str().unwrap();
    let missing = dir.path().join("missing");
    let missing = missing.to_str().unwrap();

    refused(&["-o", "allow_otter", s, m], &mnt, 2, "allow_otter");
    refused(&["-o", "ro,fsname=", s, m], &mnt, 2, "fsname=");
    refused(&[s, f], &mnt, 1, "not a directory");
    refused(&[s, missing], &mnt, 1, missing);
    refused(&[missing, m], &mnt, 1, missing);
    // Usage errors exit 2, whether clap finds them or a value's own check does.
    refused(&["--threads", "0", s, m], &mnt, 2, "--threads");
    refused(&["--max-pages", "0", s, m], &mnt, 2, "--max-pages");
    refused(&["--timeout=-1", s, m], &mnt, 2, "--timeout");
    refused(&["--timeout", "nan", s, m], &mnt, 2, "--timeout");
    refused(&[s], &mnt, 2, "MOUNTPOINT");
    refused(&["--engine", "warp", s, m], &mnt, 2, "warp");
}

/// The first SIGINT detaches a mount that something still holds open and goes on serving it,
/// saying so; the second stops the server at once, and what is open there then fails
/// (ENOTCONN, or ECONNABORTED or ECANCELED while the kernel ends the connection).
#[test]
fn a_held_mount_is_served_after_the_first_sigint_and_the_second_stops_at_once() {
    if skip("held_mount") {
        return;
    }
    let (dir, src, mnt) = layout();
    let log = dir.path().join("stderr");
    let pid_file = dir.path().join("pid");
    let stderr = Stdio::from(fs::File::create(&log).unwrap());
    let args = ["--pid-file", pid_file.to_str().unwrap()];
    let (mut m, line) = start_with(&src, &mnt, &args, stderr);
    assert!(line.starts_with("mounted"), "{line:?}");
    // The holder: the mount's root, open in this process, as a shell's working directory.
    let root = fs::File::open(&mnt).unwrap();
    let open_in_root = || {
        rustix::fs::openat(
            &root,
            "hello",
            rustix::fs::OFlags::RDONLY,
            rustix::fs::Mode::empty(),
        )
    };
    let pid = pid_of(&mut m);
    let sigint = || {
        assert!(Command::new("kill")
            .args(["-INT", &pid])
            .status()
            .unwrap()
            .success())
    };

    sigint();
    assert!(
        m.wait(Duration::from_millis(1500)).is_none(),
        "the server stopped while its mount was still held"
    );
    assert!(!is_mounted(&mnt), "not detached by the first SIGINT");
    assert!(open_in_root().is_ok(), "what is held is no longer served");
    let said = fs::read_to_string(&log).unwrap();
    assert!(said.contains("is detached"), "{said}");
    assert!(said.contains("signal again to stop now"), "{said}");

    sigint();
    let status = m
        .wait(Duration::from_secs(5))
        .expect("the second SIGINT did not stop the server");
    assert_eq!(status.code(), Some(0), "{status:?}");
    assert!(!pid_file.exists(), "pid file left behind");
    // ECONNABORTED while the kernel tears the aborted connection down (FUSE_ABORT_ERROR is
    // negotiated), ENOTCONN once it is gone; ECANCELED for a request that met the FUSE rings
    // (io_uring, the default here) while they were being cancelled, as kill -9's test saw too.
    let gone = open_in_root().unwrap_err();
    let dead = [
        rustix::io::Errno::NOTCONN,
        rustix::io::Errno::CONNABORTED,
        rustix::io::Errno::CANCELED,
    ];
    assert!(dead.contains(&gone), "{gone:?}");
    let said = fs::read_to_string(&log).unwrap();
    assert!(said.contains("stopping now"), "{said}");
}
