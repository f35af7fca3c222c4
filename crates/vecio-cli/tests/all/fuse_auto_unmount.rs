//! `vecio fuse -o auto_unmount`: a server that is killed takes its mount with it, over
//! `/dev/fuse` and FUSE over io_uring (where `fusermount3`'s own auto-unmount loses a race
//! with the rings' teardown), and a mount made on the same point since is never touched.
//! Without the option the mount stays (`fuse::kill_9_leaves_an_enotconn_mount...`).

use std::fs;
use std::process::Command;
use std::time::{Duration, Instant};

use super::fuse::{is_mounted, layout, pid_of, skip, start};

/// The watcher a server started: a process named `auto_unmount` whose parent is `server`.
fn watcher_of(server: u32) -> Option<u32> {
    fs::read_dir("/proc").ok()?.flatten().find_map(|e| {
        let pid: u32 = e.file_name().to_str()?.parse().ok()?;
        let stat = fs::read_to_string(e.path().join("stat")).ok()?;
        // pid (comm) state ppid ...
        let (comm, rest) = stat.split_once(" (")?.1.rsplit_once(") ")?;
        let ppid: u32 = rest.split(' ').nth(1)?.parse().ok()?;
        (comm == "auto_unmount" && ppid == server).then_some(pid)
    })
}

/// What `pid` holds open, as `/proc/PID/fd` names it.
fn descriptors(pid: u32) -> Vec<String> {
    let fds = fs::read_dir(format!("/proc/{pid}/fd")).unwrap();
    fds.flatten()
        .map(|e| fs::read_link(e.path()).unwrap().display().to_string())
        .collect()
}

/// True once `pid` has ended (gone, or a zombie no one has reaped yet).
fn ended(pid: u32) -> bool {
    fs::read_to_string(format!("/proc/{pid}/stat")).map_or(true, |s| {
        s.rsplit_once(") ").is_some_and(|(_, r)| r.starts_with('Z'))
    })
}

/// Polls `done` every 10 ms for up to `limit`.
fn within(limit: Duration, done: impl Fn() -> bool) -> bool {
    let end = Instant::now() + limit;
    while Instant::now() < end {
        if done() {
            return true;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    done()
}

#[test]
fn a_killed_servers_mount_goes_with_it() {
    if skip("auto_unmount") {
        return;
    }
    for transport in ["--uring", "--no-uring"] {
        let (_dir, src, mnt) = layout();
        let (mut m, _) = start(&src, &mnt, &["-o", "auto_unmount", transport]);
        assert_eq!(fs::read_to_string(mnt.join("hello")).unwrap(), "hello\n");
        let server: u32 = pid_of(&mut m).parse().unwrap();
        let watcher = watcher_of(server).expect("no auto_unmount watcher");
        // A copy of /dev/fuse there would keep the connection alive; of the test's pipes,
        // keep the test waiting.
        let held = descriptors(watcher);
        assert!(
            held.len() == 1 && held[0].starts_with("pipe:"),
            "{transport}: the watcher holds {held:?}"
        );
        m.child().kill().unwrap();
        m.wait(Duration::from_secs(10))
            .expect("kill -9 did not end it");
        assert!(
            within(Duration::from_secs(5), || !is_mounted(&mnt)),
            "{transport}: still mounted 5 s after the server was killed"
        );
        assert_eq!(fs::read_dir(&mnt).unwrap().count(), 0);
        assert!(within(Duration::from_secs(5), || ended(watcher)));
    }
}

#[test]
fn a_mount_made_there_since_is_left_alone() {
    if skip("auto_unmount_identity") {
        return;
    }
    let (_dir, src, mnt) = layout();
    let (mut m, _) = start(&src, &mnt, &["-o", "auto_unmount"]);
    let server = pid_of(&mut m);
    let watcher = watcher_of(server.parse().unwrap()).expect("no auto_unmount watcher");
    let point = mnt.to_str().unwrap();
    let run = |cmd: &str, args: &[&str]| {
        let o = Command::new(cmd).args(args).output().unwrap();
        assert!(o.status.success(), "{cmd} {args:?}: {o:?}");
    };
    // Stopped, the server cannot notice its mount go; another takes the point; then it dies.
    run("kill", &["-STOP", &server]);
    run("umount", &["-l", point]);
    run("mount", &["-t", "tmpfs", "-o", "size=1m", "other", point]);
    m.child().kill().unwrap();
    m.wait(Duration::from_secs(10))
        .expect("kill -9 did not end it");
    assert!(within(Duration::from_secs(5), || ended(watcher)));
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let on_mnt = info
        .lines()
        .find(|l| l.split(' ').nth(4) == Some(mnt.to_str().unwrap()));
    assert!(
        on_mnt.is_some_and(|l| l.contains(" - tmpfs other ")),
        "the later mount was touched: {on_mnt:?}"
    );
    run("umount", &[point]);
}
