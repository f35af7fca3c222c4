//! Confinement: nothing the server does on behalf of a request touches a file outside SOURCE.
//!
//! Symlinks in SOURCE reach the client as symlinks, resolved by the client's kernel in the
//! client's namespace (an absolute target is the client's path, a relative one is relative to
//! the mount). The server never follows one: `BASE/outside` is reachable from SOURCE only by
//! following `../outside` from SOURCE, and from the mount it is not reachable at all
//! (`BASE/m/outside` is what the client gets), so any change to it is an escape.

use crate::common;

use std::fs::{self, File, OpenOptions};
use std::io::{ErrorKind, Read, Write};
use std::os::unix::fs::{MetadataExt, OpenOptionsExt};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use common::{cpath, errno};

fn listing(dir: &Path) -> Vec<(String, u64, i64, i64)> {
    let mut v: Vec<_> = fs::read_dir(dir)
        .unwrap()
        .map(|e| {
            let e = e.unwrap();
            let m = fs::symlink_metadata(e.path()).unwrap();
            (
                e.file_name().into_string().unwrap(),
                m.size(),
                m.mtime(),
                m.mtime_nsec(),
            )
        })
        .collect();
    v.sort();
    v
}

#[test]
fn symlinks_are_resolved_by_the_client_and_dotdot_stays_at_the_root() {
    let Some(d) = common::dirs("symlinks") else {
        return;
    };
    let outside = d.base.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("secret"), "outside").unwrap();
    std::os::unix::fs::symlink("/etc", d.src.join("abs")).unwrap();
    std::os::unix::fs::symlink("../outside", d.src.join("rel")).unwrap();
    std::os::unix::fs::symlink("../outside/secret", d.src.join("relfile")).unwrap();
    fs::create_dir(d.src.join("sub")).unwrap();
    let fx = d.mount(common::config());

    assert_eq!(fs::read_link(fx.m("abs")).unwrap(), Path::new("/etc"));
    assert_eq!(fs::read_link(fx.m("rel")).unwrap(), Path::new("../outside"));
    // An absolute target is the client's own /etc.
    assert_eq!(
        fs::read(fx.m("abs/passwd")).unwrap(),
        fs::read("/etc/passwd").unwrap()
    );
    // A relative one is relative to the mount: BASE/m/outside, which does not exist...
    let e = fs::read(fx.m("relfile")).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotFound, "{e}");
    // ... and once it does, that is what the client reads.
    fs::create_dir(fx.base.join("m/outside")).unwrap();
    fs::write(fx.base.join("m/outside/secret"), "decoy").unwrap();
    assert_eq!(fs::read_to_string(fx.m("relfile")).unwrap(), "decoy");
    fs::remove_dir_all(fx.base.join("m/outside")).unwrap();

    // Operations on the symlink itself never act on its target.
    let e = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW)
        .open(fx.m("relfile"))
        .unwrap_err();
    assert_eq!(e.raw_os_error(), Some(libc::ELOOP));
    fs::hard_link(fx.m("relfile"), fx.m("hard")).unwrap();
    assert!(fs::symlink_metadata(fx.s("hard"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::metadata(outside.join("secret")).unwrap().nlink(), 1);
    // An xattr of the symlink (trusted.*: user.* is for files and directories only) lands on
    // the symlink or nowhere, never on its target.
    let xattr_len = |p: &Path, follow: bool| {
        let p = cpath(p);
        // SAFETY: valid C strings; a null buffer with size 0 asks for the size only.
        unsafe {
            if follow {
                libc::getxattr(p.as_ptr(), c"trusted.x".as_ptr(), std::ptr::null_mut(), 0)
            } else {
                libc::lgetxattr(p.as_ptr(), c"trusted.x".as_ptr(), std::ptr::null_mut(), 0)
            }
        }
    };
    // SAFETY: valid C strings and a one-byte value for the call.
    let r = unsafe {
        libc::lsetxattr(
            cpath(&fx.m("relfile")).as_ptr(),
            c"trusted.x".as_ptr(),
            b"x".as_ptr().cast(),
            1,
            0,
        )
    };
    assert_eq!(r, 0, "lsetxattr on a symlink: errno {}", errno());
    assert_eq!(xattr_len(&fx.s("relfile"), false), 1);
    assert_eq!(
        xattr_len(&outside.join("secret"), true),
        -1,
        "the target got it"
    );
    assert_eq!(
        fs::read_to_string(outside.join("secret")).unwrap(),
        "outside"
    );

    // `..` at the root of the mount is the mount point's parent, never SOURCE's parent.
    let up = fs::metadata(fx.m("..")).unwrap();
    assert_eq!(up.ino(), fs::metadata(fx.base.join("m")).unwrap().ino());
    assert_ne!(up.ino(), fs::metadata(&fx.base).unwrap().ino());
    assert_eq!(
        fs::metadata(fx.m("sub/..")).unwrap().ino(),
        fs::metadata(&fx.mnt).unwrap().ino()
    );
    assert_eq!(
        fs::read(fx.m("sub/../../outside/secret"))
            .unwrap_err()
            .kind(),
        ErrorKind::NotFound
    );
    let mut names: Vec<_> = fs::read_dir(fx.m(".."))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    names.sort();
    assert_eq!(names, ["mnt"]);
    fx.finish();
}

/// `renameat2(RENAME_EXCHANGE)` of two names in `dir`.
fn exchange(dir: &Path, a: &str, b: &str) -> bool {
    // SAFETY: valid C paths for the call.
    unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            cpath(&dir.join(a)).as_ptr(),
            libc::AT_FDCWD,
            cpath(&dir.join(b)).as_ptr(),
            libc::RENAME_EXCHANGE,
        ) == 0
    }
}

#[test]
fn swapping_a_directory_with_an_outside_symlink_never_escapes() {
    let Some(d) = common::dirs("swap") else {
        return;
    };
    let outside = d.base.join("outside");
    fs::create_dir(&outside).unwrap();
    fs::write(outside.join("keep"), "outside").unwrap();
    fs::create_dir(d.src.join("d")).unwrap();
    fs::write(d.src.join("d/keep"), "inside").unwrap();
    fs::create_dir(d.src.join("d/sub")).unwrap();
    std::os::unix::fs::symlink("../outside", d.src.join("lnk")).unwrap();
    let before = listing(&outside);
    // No caching: every path walk through the mount looks `d` up again.
    let mut cfg = common::config();
    cfg.fs.timeouts = vecio_fuse::Timeouts {
        entry: Duration::ZERO,
        attr: Duration::ZERO,
    };
    let fx = d.mount(cfg);

    let stop = AtomicBool::new(false);
    let (swaps, ok, failed) = (AtomicU64::new(0), AtomicU64::new(0), AtomicU64::new(0));
    let end = Instant::now() + Duration::from_millis(1500);
    std::thread::scope(|s| {
        s.spawn(|| {
            while !stop.load(Relaxed) {
                if exchange(&fx.src, "d", "lnk") {
                    swaps.fetch_add(1, Relaxed);
                }
            }
        });
        for w in 0..2 {
            let (fx, ok, failed) = (&fx, &ok, &failed);
            s.spawn(move || {
                let mut i = 0u64;
                while Instant::now() < end {
                    i += 1;
                    let name = |p: &str| fx.m(&format!("d/{p}-{w}-{i}"));
                    let tally = |r: bool| {
                        if r {
                            ok.fetch_add(1, Relaxed);
                        } else {
                            failed.fetch_add(1, Relaxed);
                        }
                    };
                    tally(
                        File::create(name("new"))
                            .and_then(|mut f| f.write_all(b"new"))
                            .is_ok(),
                    );
                    tally(fs::remove_file(name("new")).is_ok());
                    tally(
                        OpenOptions::new()
                            .write(true)
                            .open(fx.m("d/keep"))
                            .and_then(|mut f| f.write_all(b"inside"))
                            .is_ok(),
                    );
                    let mut s = String::new();
                    tally(
                        File::open(fx.m("d/keep"))
                            .and_then(|mut f| f.read_to_string(&mut s))
                            .is_ok(),
                    );
                    tally(fs::hard_link(fx.m("d/keep"), name("link")).is_ok());
                    let _ = fs::remove_file(name("link"));
                    tally(fs::create_dir(name("dir")).is_ok());
                    let _ = fs::remove_dir(name("dir"));
                    tally(std::os::unix::fs::symlink("keep", name("sym")).is_ok());
                    let _ = fs::remove_file(name("sym"));
                    tally(fs::write(fx.m(&format!("d/sub/f-{w}-{i}")), "sub").is_ok());
                    let _ = fs::remove_file(fx.m(&format!("d/sub/f-{w}-{i}")));
                    tally(fs::rename(fx.m("d/keep"), fx.m("d/keep")).is_ok());
                }
            });
        }
        std::thread::sleep(end - Instant::now());
        stop.store(true, Relaxed);
    });
    let (swaps, ok, failed) = (swaps.into_inner(), ok.into_inner(), failed.into_inner());
    eprintln!("{swaps} swaps; {ok} operations succeeded, {failed} failed");
    assert!(swaps > 100, "the race was not exercised: {swaps} swaps");
    assert!(ok > 100, "the race was not exercised: {ok} successes");
    let after = listing(&outside);
    assert!(
        after == before,
        "files outside SOURCE changed: {} entries (was {}), starting {:?}",
        after.len(),
        before.len(),
        &after[..after.len().min(4)]
    );
    assert_eq!(fs::read_to_string(outside.join("keep")).unwrap(), "outside");
    assert!(!fx.base.join("m/outside").exists());
    fx.finish();
}
