//! `mount.fuse.vecio`, mount(8)'s helper (the `vecio` binary under that name): it mounts and
//! returns, with the server serving on in the background; `-o source=` names the directory and
//! `subtype=` (empty) mounts as plain `fuse`, as xfstests wants; a remount goes to the kernel,
//! never to a second server; `umount` ends the server.

use crate::common;

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;
use std::time::{Duration, Instant};

/// The mountinfo line of the mount on `mnt`.
fn mountinfo(mnt: &Path) -> Option<String> {
    let info = fs::read_to_string("/proc/self/mountinfo").unwrap();
    let want = mnt.to_str().unwrap();
    info.lines()
        .find(|l| l.split(' ').nth(4) == Some(want))
        .map(str::to_string)
}

/// The processes whose command lines name `mnt` (the server forked by the helper keeps the
/// helper's arguments).
fn servers_of(mnt: &Path) -> Vec<u32> {
    let want = mnt.to_str().unwrap();
    fs::read_dir("/proc")
        .unwrap()
        .filter_map(|e| e.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| {
            fs::read(format!("/proc/{pid}/cmdline")).is_ok_and(|c| {
                let args: Vec<&[u8]> = c.split(|&b| b == 0).collect();
                args.contains(&want.as_bytes())
            })
        })
        .collect()
}

/// Unmounts (lazily) whatever is still on the mount point when the test ends, however.
struct Unmount(std::path::PathBuf);

impl Drop for Unmount {
    fn drop(&mut self) {
        if mountinfo(&self.0).is_some() {
            let _ = Command::new("umount").arg("-l").arg(&self.0).status();
        }
    }
}

#[test]
fn the_mount_helper_mounts_remounts_in_the_kernel_and_unmounts() {
    if fs::metadata("/proc/self").map(|m| m.uid()).ok() != Some(0)
        || !Path::new("/dev/fuse").exists()
    {
        eprintln!("skipping: needs root and /dev/fuse");
        return;
    }
    let dir = common::scratch_dir("vecio-fuse-helper-");
    let (src, mnt) = (dir.path().join("src"), dir.path().join("mnt"));
    fs::create_dir(&src).unwrap();
    fs::create_dir(&mnt).unwrap();
    let _guard = Unmount(mnt.clone());
    let helper = dir.path().join("mount.fuse.vecio");
    std::os::unix::fs::symlink(env!("CARGO_BIN_EXE_vecio"), &helper).unwrap();
    let log = dir.path().join("server.log");
    let opts = format!(
        "rw,source={},allow_other,default_permissions,subtype=,nofail,log={}",
        src.display(),
        log.display()
    );
    let run = |args: &[&str]| Command::new(&helper).args(args).output().unwrap();
    let out = run(&["tag1", mnt.to_str().unwrap(), "-o", &opts]);
    assert!(out.status.success(), "mount: {out:?}");
    assert!(
        out.stdout.is_empty(),
        "a mount helper says nothing: {out:?}"
    );
    let line = mountinfo(&mnt).expect("mounted once the helper returned");
    let fields: Vec<&str> = line.split(" - ").nth(1).unwrap().split(' ').collect();
    assert_eq!(&fields[..2], ["fuse", "tag1"], "{line}");
    // mount(8) passes nodev and nosuid when asked for, never dev and suid: those are the
    // helper's defaults, as for any file system mount(8) mounts.
    let flags = line.split(' ').nth(5).unwrap();
    assert!(
        !flags.contains("nodev") && !flags.contains("nosuid"),
        "{line}"
    );
    fs::write(mnt.join("f"), "through the helper").unwrap();
    assert_eq!(
        fs::read_to_string(src.join("f")).unwrap(),
        "through the helper"
    );
    let servers = servers_of(&mnt);
    assert_eq!(servers.len(), 1, "{servers:?}");

    // A remount changes the mount in the kernel; the same server serves on.
    let out = run(&[
        "tag1",
        mnt.to_str().unwrap(),
        "-o",
        &format!("{opts},remount,ro"),
    ]);
    assert!(out.status.success(), "remount: {out:?}");
    let flags = mountinfo(&mnt)
        .unwrap()
        .split(' ')
        .nth(5)
        .unwrap()
        .to_string();
    assert!(
        flags.starts_with("ro") && !flags.contains("nodev"),
        "{flags}"
    );
    let e = fs::write(mnt.join("g"), "x").unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::EROFS));
    assert_eq!(servers_of(&mnt), servers, "no second server");
    let out = run(&["tag1", mnt.to_str().unwrap(), "-o", "remount,rw"]);
    assert!(out.status.success(), "remount rw: {out:?}");
    fs::write(mnt.join("g"), "x").unwrap();

    // umount ends the server.
    assert!(Command::new("umount").arg(&mnt).status().unwrap().success());
    let end = Instant::now() + Duration::from_secs(10);
    while !servers_of(&mnt).is_empty() && Instant::now() < end {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(servers_of(&mnt).is_empty(), "the server outlived its mount");
    // A bad option fails the mount with mount(8)'s status for a failed mount, and says why.
    let out = run(&[
        "tag1",
        mnt.to_str().unwrap(),
        "-o",
        "source=/nonexistent-vecio",
    ]);
    assert_eq!(out.status.code(), Some(32), "{out:?}");
    assert!(mountinfo(&mnt).is_none());
}
