//! `vecio fuse` run by an unprivileged user mounts through `fusermount3`, as libfuse does,
//! serves without passthrough (which needs `CAP_SYS_ADMIN`) and unmounts through it on SIGTERM.
//! Needs root (to become uid 65534) and `/dev/fuse`, which users may open on most systems
//! (mode 0666); where it is not, the test opens it up for its run and puts the mode back.

use std::fs;
use std::io::{BufRead, BufReader};
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const NOBODY: u32 = 65534;

fn why_not() -> Option<String> {
    let dev = match fs::metadata("/dev/fuse") {
        Ok(m) => m,
        Err(e) => return Some(format!("/dev/fuse: {e}")),
    };
    if fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0) {
        return Some("not root: cannot switch to another user".into());
    }
    let _ = dev;
    if Command::new("fusermount3").arg("-V").output().is_err() {
        return Some("fusermount3 is not installed (fuse3)".into());
    }
    None
}

/// `/dev/fuse` open to every user while it lives; its mode before, put back when dropped.
/// The tests here take turns (one's drop would close it under another).
struct OpenedUp(
    Option<u32>,
    #[allow(dead_code)] std::sync::MutexGuard<'static, ()>,
);

/// Held by the test that has `/dev/fuse` opened up.
static TURN: std::sync::Mutex<()> = std::sync::Mutex::new(());

impl OpenedUp {
    fn dev_fuse() -> OpenedUp {
        let turn = TURN.lock().unwrap_or_else(|p| p.into_inner());
        let mode = fs::metadata("/dev/fuse").unwrap().mode() & 0o7777;
        if mode & 0o006 == 0o006 {
            return OpenedUp(None, turn);
        }
        eprintln!("/dev/fuse is mode {mode:o}: opened to users (0666) for this test");
        fs::set_permissions("/dev/fuse", fs::Permissions::from_mode(0o666)).unwrap();
        OpenedUp(Some(mode), turn)
    }
}

impl Drop for OpenedUp {
    fn drop(&mut self) {
        if let Some(mode) = self.0 {
            let _ = fs::set_permissions("/dev/fuse", fs::Permissions::from_mode(mode));
        }
    }
}

fn mounted(mnt: &Path) -> bool {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    info.lines()
        .any(|l| l.split(' ').nth(4) == Some(mnt.to_str().unwrap()))
}

/// A scratch directory others may enter, holding `entries` (a path, and its contents for a
/// file or `None` for a directory) owned by uid 65534, and a copy of `vecio` the user can run
/// (the build's may sit under a directory the user cannot enter).
fn user_scratch(entries: &[(&str, Option<&[u8]>)]) -> (tempfile::TempDir, PathBuf) {
    let dir = tempfile::tempdir_in("/var/tmp").unwrap();
    fs::set_permissions(dir.path(), fs::Permissions::from_mode(0o755)).unwrap();
    for (name, contents) in entries {
        let p = dir.path().join(name);
        match contents {
            None => fs::create_dir_all(&p).unwrap(),
            Some(c) => fs::write(&p, c).unwrap(),
        }
        std::os::unix::fs::chown(&p, Some(NOBODY), Some(NOBODY)).unwrap();
    }
    let exe = dir.path().join("vecio");
    fs::copy(env!("CARGO_BIN_EXE_vecio"), &exe).unwrap();
    fs::set_permissions(&exe, fs::Permissions::from_mode(0o755)).unwrap();
    (dir, exe)
}

/// `vecio fuse EXTRA SRC MNT` as uid 65534 in a scratch directory, once it says it mounted:
/// the directory (holding `src/f` and `mnt`), the server and the mount point.
fn mount_as_user(extra: &[&str]) -> (tempfile::TempDir, std::process::Child, PathBuf) {
    let (dir, exe) = user_scratch(&[("src", None), ("mnt", None), ("src/f", Some(b"user data"))]);
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    let mut child = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        .arg("fuse")
        .args(extra)
        .arg(&src)
        .arg(&mnt)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("setpriv");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("mounted "), "no mount: {line:?}");
    (dir, child, mnt)
}

#[test]
fn a_user_mounts_through_fusermount3_and_sigterm_unmounts() {
    if let Some(why) = why_not() {
        eprintln!("skipping: {why}");
        return;
    }
    let _opened = OpenedUp::dev_fuse();
    let (_dir, mut child, mnt) = mount_as_user(&[]);
    assert_eq!(
        cat_as(NOBODY, &mnt.join("f")).as_deref(),
        Ok(&b"user data"[..])
    );
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    assert!(
        info.contains("user_id=65534"),
        "not mounted for the user:\n{info}"
    );
    // SAFETY: kill(2) on our child; no memory involved.
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = Command::new("umount").arg("-l").arg(&mnt).status();
            panic!("vecio fuse did not exit after SIGTERM");
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut said = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut said).unwrap();
    assert!(status.success(), "exit {status}: {said}");
    assert!(!mounted(&mnt), "still mounted after SIGTERM");
    // Without CAP_SYS_ADMIN no backing file can be registered: passthrough is not offered,
    // so no open pays for a registration that must fail.
    let serving = said
        .lines()
        .find(|l| l.starts_with("vecio: serving "))
        .unwrap_or_else(|| panic!("no serving line: {said}"));
    assert!(!serving.contains("passthrough"), "{serving}");
    // Without root there are no namespaces to enter: said there, once, not as a warning.
    assert!(serving.contains("no namespace sandbox"), "{serving}");
    assert!(!said.contains("WARN"), "{said}");
}

#[test]
fn a_users_killed_server_is_unmounted_with_auto_unmount() {
    if let Some(why) = why_not() {
        eprintln!("skipping: {why}");
        return;
    }
    let _opened = OpenedUp::dev_fuse();
    let (_dir, mut child, mnt) = mount_as_user(&["-o", "auto_unmount"]);
    // setpriv execs vecio: the child is the server itself.
    child.kill().unwrap();
    child.wait().unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while mounted(&mnt) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    if mounted(&mnt) {
        let _ = Command::new("umount").arg("-l").arg(&mnt).status();
        panic!("a user's mount stayed 5 s after its server was killed");
    }
}

/// `user_allow_other` in `/etc/fuse.conf` while it lives (the file put back as it was).
struct UsersMayAllowOthers(Option<String>);

impl UsersMayAllowOthers {
    fn set() -> UsersMayAllowOthers {
        let before = fs::read_to_string("/etc/fuse.conf").ok();
        let on = |l: &str| l.trim() == "user_allow_other";
        if before.as_deref().is_some_and(|c| c.lines().any(on)) {
            return UsersMayAllowOthers(None);
        }
        eprintln!("/etc/fuse.conf: user_allow_other added for this test");
        let mut conf = before.clone().unwrap_or_default();
        conf.push_str("\nuser_allow_other\n");
        fs::write("/etc/fuse.conf", conf).unwrap();
        UsersMayAllowOthers(Some(before.unwrap_or_default()))
    }
}

impl Drop for UsersMayAllowOthers {
    fn drop(&mut self) {
        if let Some(before) = &self.0 {
            let _ = fs::write("/etc/fuse.conf", before);
        }
    }
}

/// `cat PATH` as `uid`: its output, or what it said.
fn cat_as(uid: u32, path: &Path) -> Result<Vec<u8>, String> {
    let o = Command::new("setpriv")
        .arg(format!("--reuid={uid}"))
        .arg(format!("--regid={uid}"))
        .args(["--clear-groups", "cat"])
        .arg(path)
        .output()
        .unwrap();
    match o.status.success() {
        true => Ok(o.stdout),
        false => Err(String::from_utf8_lossy(&o.stderr).into_owned()),
    }
}

#[test]
fn allow_root_lets_root_in_beside_the_user_and_no_one_else() {
    if let Some(why) = why_not() {
        eprintln!("skipping: {why}");
        return;
    }
    let _opened = OpenedUp::dev_fuse();
    let _conf = UsersMayAllowOthers::set();
    let (_dir, mut child, mnt) = mount_as_user(&["-o", "allow_root"]);
    let file = mnt.join("f");
    let by_owner = cat_as(NOBODY, &file);
    let by_root = fs::read(&file).map_err(|e| e.to_string());
    let by_other = cat_as(NOBODY - 1, &file);
    let _ = child.kill();
    let _ = child.wait();
    let _ = Command::new("umount").arg("-l").arg(&mnt).status();
    assert_eq!(by_owner.as_deref(), Ok(&b"user data"[..]));
    assert_eq!(by_root.as_deref(), Ok(&b"user data"[..]));
    let refused = by_other.expect_err("another user read an allow_root mount");
    assert!(refused.contains("Permission denied"), "{refused}");
}

#[test]
fn a_user_mount_inside_its_source_shows_the_directory_beneath_without_a_hang() {
    if let Some(why) = why_not() {
        eprintln!("skipping: {why}");
        return;
    }
    let _opened = OpenedUp::dev_fuse();
    let (dir, exe) = user_scratch(&[
        ("src", None),
        ("src/mnt", None),
        ("src/mnt/beneath", Some(b"covered")),
    ]);
    let (src, inner) = (dir.path().join("src"), dir.path().join("src/mnt"));
    let mut server = Command::new("setpriv")
        .args(["--reuid=65534", "--regid=65534", "--clear-groups"])
        .arg(&exe)
        // `/dev/fuse`: were the hang back, SIGKILL would still end a caller waiting there
        // (over io_uring queues it did not: the test would hang, not fail).
        .args(["fuse", "-q", "--no-uring"])
        .arg(&src)
        .arg(&inner)
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(10);
    while !mounted(&inner) && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(10));
    }
    // Through the mount, `mnt` is the directory the mount covers (as root's private view of
    // the source shows it). Before, the server's own lookup of `mnt` crossed into its mount
    // and waited on itself: `ls` hung.
    let as_user = ["--reuid=65534", "--regid=65534", "--clear-groups"];
    let run = |args: &[&str], path: &Path| {
        Command::new("timeout")
            .args(["-s", "KILL", "10", "setpriv"])
            .args(as_user)
            .args(args)
            .arg(path)
            .output()
            .unwrap()
    };
    let listed = run(&["ls"], &inner.join("mnt"));
    let read = run(&["cat"], &inner.join("mnt/beneath"));
    let _ = server.kill();
    let _ = server.wait();
    let _ = Command::new("umount").arg("-l").arg(&inner).status();
    assert!(listed.status.success(), "ls through the mount: {listed:?}");
    assert_eq!(String::from_utf8_lossy(&listed.stdout).trim(), "beneath");
    assert_eq!(read.stdout, b"covered", "{read:?}");
}
