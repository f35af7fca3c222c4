//! Every operation of the passthrough, through `std::fs`, `std::os::unix` and libc on a real
//! mount, each result checked against the source directory itself.

use crate::common;

use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{ErrorKind, Write};
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::fs::{DirEntryExt, PermissionsExt};
use std::path::Path;

use common::{cpath, errno, mode, mount_or_skip, names, pattern, raw};

fn ts(sec: i64, nsec: i64) -> libc::timespec {
    libc::timespec {
        tv_sec: sec,
        tv_nsec: nsec,
    }
}

fn utimens(p: &Path, t: [libc::timespec; 2], flags: i32) -> i32 {
    // SAFETY: a valid C path and a two-element timespec array, both live for the call.
    unsafe { libc::utimensat(libc::AT_FDCWD, cpath(p).as_ptr(), t.as_ptr(), flags) }
}

#[test]
fn lookup_getattr_and_setattr_reach_the_source() {
    let fx = mount_or_skip!("attr", common::config());
    fs::write(fx.m("a"), b"hello").unwrap();
    let (m, s) = (
        fs::metadata(fx.m("a")).unwrap(),
        fs::metadata(fx.s("a")).unwrap(),
    );
    assert_eq!(
        (m.ino(), m.size(), m.mode(), m.uid(), m.gid(), m.nlink()),
        (s.ino(), s.size(), s.mode(), s.uid(), s.gid(), s.nlink())
    );
    assert_eq!((m.mtime(), m.mtime_nsec()), (s.mtime(), s.mtime_nsec()));
    assert_eq!(
        fs::metadata(fx.m("missing")).unwrap_err().kind(),
        ErrorKind::NotFound
    );

    // chmod by path (no handle) and by descriptor (SETATTR with the handle).
    fs::set_permissions(fx.m("a"), Permissions::from_mode(0o640)).unwrap();
    assert_eq!(mode(&fx.s("a")), 0o640);
    assert_eq!(mode(&fx.m("a")), 0o640);
    let f = OpenOptions::new()
        .read(true)
        .write(true)
        .open(fx.m("a"))
        .unwrap();
    f.set_permissions(Permissions::from_mode(0o604)).unwrap();
    assert_eq!(mode(&fx.s("a")), 0o604);

    // chown, of a file and of a symlink itself.
    std::os::unix::fs::chown(fx.m("a"), Some(1234), Some(5678)).unwrap();
    let s = fs::metadata(fx.s("a")).unwrap();
    assert_eq!((s.uid(), s.gid()), (1234, 5678));
    std::os::unix::fs::symlink("a", fx.m("l")).unwrap();
    std::os::unix::fs::lchown(fx.m("l"), Some(4321), Some(8765)).unwrap();
    let s = fs::symlink_metadata(fx.s("l")).unwrap();
    assert_eq!((s.uid(), s.gid()), (4321, 8765));
    assert_eq!(
        fs::metadata(fx.s("a")).unwrap().uid(),
        1234,
        "lchown followed"
    );

    // truncate through the handle, then by path.
    f.set_len(10).unwrap();
    assert_eq!(fs::read(fx.s("a")).unwrap(), b"hello\0\0\0\0\0");
    drop(f);
    // SAFETY: a valid C path for the call.
    assert_eq!(unsafe { libc::truncate(cpath(&fx.m("a")).as_ptr(), 3) }, 0);
    assert_eq!(fs::read(fx.s("a")).unwrap(), b"hel");
    assert_eq!(fs::metadata(fx.m("a")).unwrap().len(), 3);

    // utimes, to the nanosecond; then UTIME_OMIT and UTIME_NOW.
    let (at, mt) = (
        ts(1_000_000_000, 123_456_789),
        ts(1_500_000_000, 987_654_321),
    );
    assert_eq!(utimens(&fx.m("a"), [at, mt], 0), 0, "errno {}", errno());
    for p in [fx.s("a"), fx.m("a")] {
        let s = fs::metadata(&p).unwrap();
        assert_eq!(
            (s.atime(), s.atime_nsec(), s.mtime(), s.mtime_nsec()),
            (1_000_000_000, 123_456_789, 1_500_000_000, 987_654_321),
            "{}",
            p.display()
        );
    }
    let now = ts(0, libc::UTIME_NOW);
    let omit = ts(0, libc::UTIME_OMIT);
    assert_eq!(utimens(&fx.m("a"), [omit, now], 0), 0);
    let s = fs::metadata(fx.s("a")).unwrap();
    assert_eq!(s.atime(), 1_000_000_000, "UTIME_OMIT changed atime");
    let wall = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_secs() as i64;
    assert!(
        (s.mtime() - wall).abs() < 60,
        "UTIME_NOW gave {}",
        s.mtime()
    );
    // The symlink's own times (AT_SYMLINK_NOFOLLOW).
    let t = ts(1_234_567_890, 5);
    assert_eq!(
        utimens(&fx.m("l"), [t, t], libc::AT_SYMLINK_NOFOLLOW),
        0,
        "errno {}",
        errno()
    );
    let s = fs::symlink_metadata(fx.s("l")).unwrap();
    assert_eq!((s.mtime(), s.mtime_nsec()), (1_234_567_890, 5));
    assert_ne!(fs::metadata(fx.s("a")).unwrap().mtime(), 1_234_567_890);
    fx.finish();
}

#[test]
fn readdir_lists_every_entry_over_many_replies() {
    let Some(d) = common::dirs("readdir") else {
        return;
    };
    // 2000 names (about 110 KiB of dirents: dozens of replies) made in the source directly.
    let many = d.src.join("many");
    fs::create_dir(&many).unwrap();
    let mut expected: Vec<String> = (0..2000)
        .map(|i| format!("entry-{i:05}-{}", "x".repeat(i % 40)))
        .collect();
    for n in &expected {
        File::create(many.join(n)).unwrap();
    }
    fs::create_dir(many.join("sub")).unwrap();
    std::os::unix::fs::symlink("sub", many.join("link")).unwrap();
    expected.extend(["sub".to_string(), "link".to_string()]);
    expected.sort();
    let fx = d.mount(common::config());

    for _ in 0..2 {
        assert_eq!(names(&fx.m("many")), expected);
    }
    for e in fs::read_dir(fx.m("many")).unwrap() {
        let e = e.unwrap();
        let native = fs::symlink_metadata(fx.s("many").join(e.file_name())).unwrap();
        assert_eq!(e.ino(), native.ino(), "{:?}", e.file_name());
        assert_eq!(e.file_type().unwrap(), native.file_type());
    }
    // And 300 made through the mount.
    fs::create_dir(fx.m("made")).unwrap();
    for i in 0..300 {
        File::create(fx.m(&format!("made/file-{i}"))).unwrap();
    }
    let made = names(&fx.m("made"));
    assert_eq!(made.len(), 300);
    assert_eq!(made, names(&fx.s("made")));
    fx.finish();
}

#[test]
fn create_open_read_write_fsync_release() {
    let fx = mount_or_skip!("file", common::config());
    let mut expected = pattern(1, (3 << 20) + 12_345);
    {
        let mut f = OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .mode(0o644)
            .open(fx.m("f"))
            .unwrap();
        for chunk in expected.chunks(100_003) {
            f.write_all(chunk).unwrap();
        }
        f.sync_data().unwrap();
        f.sync_all().unwrap();
        let len = expected.len();
        for off in [0, 1, 4095, 4096, 100_000, 2 << 20, len - 10] {
            let mut b = vec![0u8; 5000.min(len - off)];
            f.read_exact_at(&mut b, off as u64).unwrap();
            assert!(b == expected[off..off + b.len()], "read at {off}");
        }
        f.write_all_at(b"MIDDLE", 777_777).unwrap();
        let mut b = [0u8; 16];
        assert_eq!(f.read_at(&mut b, len as u64).unwrap(), 0, "read at EOF");
    }
    expected[777_777..777_783].copy_from_slice(b"MIDDLE");
    assert!(fs::read(fx.s("f")).unwrap() == expected, "source differs");
    assert!(fs::read(fx.m("f")).unwrap() == expected, "mount differs");
    assert_eq!(mode(&fx.s("f")), 0o644);

    let e = OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(fx.m("f"))
        .unwrap_err();
    assert_eq!(e.kind(), ErrorKind::AlreadyExists);
    assert_eq!(
        File::open(fx.m("nope")).unwrap_err().kind(),
        ErrorKind::NotFound
    );

    let mut a = OpenOptions::new().append(true).open(fx.m("f")).unwrap();
    a.write_all(b"TAIL").unwrap();
    drop(a);
    let s = fs::read(fx.s("f")).unwrap();
    assert_eq!(s.len(), expected.len() + 4);
    assert_eq!(&s[expected.len()..], b"TAIL");

    OpenOptions::new()
        .write(true)
        .truncate(true)
        .open(fx.m("f"))
        .unwrap();
    assert_eq!(fs::metadata(fx.s("f")).unwrap().len(), 0);
    File::create(fx.m("empty")).unwrap();
    assert_eq!(fs::metadata(fx.s("empty")).unwrap().len(), 0);

    // An open file outlives its name.
    let t = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(fx.m("tmp"))
        .unwrap();
    fs::remove_file(fx.m("tmp")).unwrap();
    assert!(!fx.s("tmp").exists());
    t.write_all_at(b"still here", 0).unwrap();
    t.set_len(5).unwrap();
    let mut b = [0u8; 10];
    assert_eq!(t.read_at(&mut b, 0).unwrap(), 5);
    assert_eq!(&b[..5], b"still");
    let m = t.metadata().unwrap();
    assert_eq!((m.len(), m.nlink()), (5, 0));
    drop(t);
    fx.finish();
}

fn renameat2(from: &Path, to: &Path, flags: u32) -> Result<(), i32> {
    // SAFETY: two valid C paths for the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            cpath(from).as_ptr(),
            libc::AT_FDCWD,
            cpath(to).as_ptr(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

#[test]
fn mkdir_rmdir_unlink_rename_link_symlink() {
    let fx = mount_or_skip!("names", common::config());
    let read = |p: &str| fs::read_to_string(fx.s(p)).unwrap();

    fs::DirBuilder::new().mode(0o750).create(fx.m("d")).unwrap();
    assert!(fs::metadata(fx.s("d")).unwrap().is_dir());
    assert_eq!(mode(&fx.s("d")), 0o750);
    assert_eq!(
        fs::create_dir(fx.m("d")).unwrap_err().kind(),
        ErrorKind::AlreadyExists
    );
    fs::write(fx.m("d/x"), "x").unwrap();
    assert_eq!(raw(fs::remove_dir(fx.m("d")).unwrap_err()), libc::ENOTEMPTY);
    fs::remove_file(fx.m("d/x")).unwrap();
    assert!(!fx.s("d/x").exists());
    File::open(fx.m("d")).unwrap().sync_all().unwrap(); // FSYNCDIR
    fs::remove_dir(fx.m("d")).unwrap();
    assert!(!fx.s("d").exists());
    assert_eq!(
        fs::remove_file(fx.m("d")).unwrap_err().kind(),
        ErrorKind::NotFound
    );
    fs::write(fx.m("file"), "f").unwrap();
    assert_eq!(
        raw(fs::remove_dir(fx.m("file")).unwrap_err()),
        libc::ENOTDIR
    );

    // Plain rename, over an existing name, and across directories.
    fs::write(fx.m("r1"), "one").unwrap();
    fs::write(fx.m("r2"), "two").unwrap();
    fs::rename(fx.m("r1"), fx.m("r3")).unwrap();
    assert!(!fx.s("r1").exists());
    assert_eq!(read("r3"), "one");
    fs::rename(fx.m("r3"), fx.m("r2")).unwrap();
    assert_eq!(read("r2"), "one");
    assert!(!fx.s("r3").exists());
    fs::create_dir(fx.m("sub")).unwrap();
    fs::rename(fx.m("r2"), fx.m("sub/r2")).unwrap();
    assert_eq!(read("sub/r2"), "one");

    // RENAME_NOREPLACE and RENAME_EXCHANGE.
    fs::write(fx.m("n1"), "n1").unwrap();
    fs::write(fx.m("n2"), "n2").unwrap();
    assert_eq!(
        renameat2(&fx.m("n1"), &fx.m("n2"), libc::RENAME_NOREPLACE),
        Err(libc::EEXIST)
    );
    assert_eq!((read("n1"), read("n2")), ("n1".into(), "n2".into()));
    renameat2(&fx.m("n1"), &fx.m("n3"), libc::RENAME_NOREPLACE).unwrap();
    assert_eq!(read("n3"), "n1");
    assert!(!fx.s("n1").exists());
    renameat2(&fx.m("n2"), &fx.m("n3"), libc::RENAME_EXCHANGE).unwrap();
    assert_eq!((read("n2"), read("n3")), ("n1".into(), "n2".into()));
    assert_eq!(fs::read_to_string(fx.m("n2")).unwrap(), "n1");
    renameat2(&fx.m("sub"), &fx.m("n2"), libc::RENAME_EXCHANGE).unwrap();
    assert!(fs::metadata(fx.s("n2")).unwrap().is_dir());
    assert_eq!(read("sub"), "n1");
    assert_eq!(
        renameat2(&fx.m("n3"), &fx.m("absent"), libc::RENAME_EXCHANGE),
        Err(libc::ENOENT)
    );

    // Hard links.
    fs::hard_link(fx.m("n3"), fx.m("n3-link")).unwrap();
    let (a, b) = (
        fs::metadata(fx.s("n3")).unwrap(),
        fs::metadata(fx.s("n3-link")).unwrap(),
    );
    assert_eq!((a.ino(), a.nlink()), (b.ino(), 2));
    assert_eq!(fs::metadata(fx.m("n3-link")).unwrap().nlink(), 2);
    assert_eq!(
        raw(fs::hard_link(fx.m("n2"), fx.m("dir-link")).unwrap_err()),
        libc::EPERM
    );

    // Symlinks, short and long.
    std::os::unix::fs::symlink("n3", fx.m("sym")).unwrap();
    assert_eq!(fs::read_link(fx.m("sym")).unwrap(), Path::new("n3"));
    assert!(fs::symlink_metadata(fx.s("sym"))
        .unwrap()
        .file_type()
        .is_symlink());
    assert_eq!(fs::read_link(fx.s("sym")).unwrap(), Path::new("n3"));
    assert_eq!(fs::read_to_string(fx.m("sym")).unwrap(), "n2");
    let long = "t/".repeat(1000);
    std::os::unix::fs::symlink(&long, fx.m("long")).unwrap();
    assert_eq!(fs::read_link(fx.m("long")).unwrap(), Path::new(&long));

    // A FIFO (MKNOD).
    // SAFETY: a valid C path for the call.
    assert_eq!(
        unsafe { libc::mkfifo(cpath(&fx.m("fifo")).as_ptr(), 0o600) },
        0
    );
    let s = fs::symlink_metadata(fx.s("fifo")).unwrap();
    assert!(s.file_type().is_fifo());
    assert_eq!(s.mode() & 0o777, 0o600);
    fx.finish();
}

fn statvfs(p: &Path) -> libc::statvfs {
    // SAFETY: statvfs fills the zeroed struct, which lives for the call.
    unsafe {
        let mut st: libc::statvfs = std::mem::zeroed();
        assert_eq!(libc::statvfs(cpath(p).as_ptr(), &mut st), 0);
        st
    }
}

#[test]
fn statfs_is_the_source_file_systems() {
    let fx = mount_or_skip!("statfs", common::config());
    let (m, s) = (statvfs(&fx.mnt), statvfs(&fx.src));
    assert_eq!(
        (m.f_bsize, m.f_frsize, m.f_blocks, m.f_files, m.f_namemax),
        (s.f_bsize, s.f_frsize, s.f_blocks, s.f_files, s.f_namemax)
    );
    // Other tests write to the same file system meanwhile: free space agrees within 1%.
    let slack = s.f_blocks / 100;
    assert!(m.f_bfree.abs_diff(s.f_bfree) <= slack);
    assert!(m.f_bavail.abs_diff(s.f_bavail) <= slack);
    assert!(m.f_flag & libc::ST_NOSUID != 0 && m.f_flag & libc::ST_NODEV != 0);
    fx.finish();
}
