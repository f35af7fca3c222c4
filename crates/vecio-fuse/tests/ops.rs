//! Every operation of the passthrough, through `std::fs`, `std::os::unix` and libc on a real
//! mount, each result checked against the source directory itself.

mod common;

use std::ffi::CStr;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::{ErrorKind, Write};
use std::os::fd::AsRawFd;
use std::os::unix::fs::{DirBuilderExt, FileExt, FileTypeExt, MetadataExt, OpenOptionsExt};
use std::os::unix::fs::{DirEntryExt, PermissionsExt};
use std::path::Path;

use common::{cpath, errno, pattern};

macro_rules! mount_or_skip {
    ($name:expr, $cfg:expr) => {
        match common::mount($name, $cfg) {
            Some(f) => f,
            None => return,
        }
    };
}

fn mode(p: &Path) -> u32 {
    fs::symlink_metadata(p).unwrap().mode() & 0o7777
}

fn raw(e: std::io::Error) -> i32 {
    e.raw_os_error().unwrap_or(0)
}

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

fn names(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().into_string().unwrap())
        .collect();
    v.sort();
    v
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

fn fallocate(f: &File, mode: i32, off: i64, len: i64) -> Result<(), i32> {
    // SAFETY: fallocate on a live descriptor.
    match unsafe { libc::fallocate(f.as_raw_fd(), mode, off, len) } {
        0 => Ok(()),
        _ => Err(errno()),
    }
}

fn lseek(f: &File, off: i64, whence: i32) -> Result<i64, i32> {
    // SAFETY: lseek on a live descriptor.
    match unsafe { libc::lseek(f.as_raw_fd(), off, whence) } {
        -1 => Err(errno()),
        n => Ok(n),
    }
}

#[test]
fn fallocate_punch_hole_and_seek_data_hole() {
    const K: i64 = 1024;
    let fx = mount_or_skip!("falloc", common::config());
    let mut f = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(fx.m("sparse"))
        .unwrap();
    f.write_all(&pattern(3, 1 << 20)).unwrap();
    f.sync_all().unwrap();
    let keep = libc::FALLOC_FL_PUNCH_HOLE | libc::FALLOC_FL_KEEP_SIZE;
    fallocate(&f, keep, 256 * K, 256 * K).unwrap();
    assert_eq!(fs::metadata(fx.s("sparse")).unwrap().len(), 1 << 20);
    assert_eq!(fs::metadata(fx.m("sparse")).unwrap().len(), 1 << 20);
    let mut b = vec![1u8; 256 << 10];
    f.read_exact_at(&mut b, 256 << 10).unwrap();
    assert!(b.iter().all(|&x| x == 0), "the hole reads as data");
    let src = fs::read(fx.s("sparse")).unwrap();
    assert!(src[256 << 10..512 << 10].iter().all(|&x| x == 0));
    assert!(src[..256 << 10] == pattern(3, 1 << 20)[..256 << 10]);

    // SEEK_DATA/SEEK_HOLE through the mount agree with the source.
    let native = File::open(fx.s("sparse")).unwrap();
    assert_eq!(lseek(&f, 0, libc::SEEK_HOLE), Ok(256 * K));
    assert_eq!(lseek(&f, 256 * K, libc::SEEK_DATA), Ok(512 * K));
    for (off, whence) in [
        (0, libc::SEEK_DATA),
        (0, libc::SEEK_HOLE),
        (300 * K, libc::SEEK_DATA),
        (300 * K, libc::SEEK_HOLE),
        (600 * K, libc::SEEK_HOLE),
        (1024 * K, libc::SEEK_DATA),
        (5000 * K, libc::SEEK_HOLE),
    ] {
        assert_eq!(
            lseek(&f, off, whence),
            lseek(&native, off, whence),
            "lseek({off}, {whence})"
        );
    }

    // Allocation beyond the end, keeping the size; then growing; then zeroing a range.
    let blocks = fs::metadata(fx.s("sparse")).unwrap().blocks();
    fallocate(&f, libc::FALLOC_FL_KEEP_SIZE, 1 << 20, 1 << 20).unwrap();
    let s = fs::metadata(fx.s("sparse")).unwrap();
    assert_eq!(s.len(), 1 << 20);
    assert!(s.blocks() >= blocks + 2048, "{} -> {}", blocks, s.blocks());
    fallocate(&f, 0, 0, 3 << 20).unwrap();
    assert_eq!(fs::metadata(fx.s("sparse")).unwrap().len(), 3 << 20);
    assert_eq!(fs::metadata(fx.m("sparse")).unwrap().len(), 3 << 20);
    fallocate(&f, libc::FALLOC_FL_ZERO_RANGE, 10, 100).unwrap();
    let src = fs::read(fx.s("sparse")).unwrap();
    assert!(src[10..110].iter().all(|&x| x == 0));
    assert_eq!(src[..10], pattern(3, 10)[..]);
    drop(f);
    fx.finish();
}

#[test]
fn copy_file_range_copies_in_the_source() {
    let fx = mount_or_skip!("cfr", common::config());
    let data = pattern(4, (1 << 20) + 100);
    fs::write(fx.m("in"), &data).unwrap();
    let fin = File::open(fx.m("in")).unwrap();
    let fout = OpenOptions::new()
        .write(true)
        .create(true)
        .truncate(true)
        .open(fx.m("out"))
        .unwrap();
    let (mut off_in, mut off_out): (i64, i64) = (4103, 3);
    let want = 700_000usize;
    let mut total = 0;
    while total < want {
        // SAFETY: two live descriptors and two offsets living for the call.
        let n = unsafe {
            libc::copy_file_range(
                fin.as_raw_fd(),
                &mut off_in,
                fout.as_raw_fd(),
                &mut off_out,
                want - total,
                0,
            )
        };
        assert!(n > 0, "copy_file_range: {n}, errno {}", errno());
        total += n as usize;
    }
    drop((fin, fout));
    let out = fs::read(fx.s("out")).unwrap();
    assert_eq!(out.len(), 3 + want);
    assert_eq!(out[..3], [0, 0, 0]);
    assert!(out[3..] == data[4103..4103 + want], "copied bytes differ");
    assert!(fs::read(fx.m("out")).unwrap() == out);
    fx.finish();
}

fn getxattr(p: &Path, name: &CStr, size: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; size];
    let ptr = if size == 0 {
        std::ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    };
    // SAFETY: `ptr` is null with size 0, or `buf` of `size` bytes; both live for the call.
    let n = unsafe { libc::getxattr(cpath(p).as_ptr(), name.as_ptr(), ptr, size) };
    if n < 0 {
        return Err(errno());
    }
    buf.truncate(if size == 0 { 0 } else { n as usize });
    if size == 0 {
        buf.resize(n as usize, b'?');
    }
    Ok(buf)
}

fn setxattr(p: &Path, name: &CStr, value: &[u8], flags: i32) -> Result<(), i32> {
    // SAFETY: valid C strings and a value slice, all live for the call.
    let r = unsafe {
        libc::setxattr(
            cpath(p).as_ptr(),
            name.as_ptr(),
            value.as_ptr().cast(),
            value.len(),
            flags,
        )
    };
    if r == 0 {
        Ok(())
    } else {
        Err(errno())
    }
}

fn listxattr(p: &Path, size: usize) -> Result<Vec<u8>, i32> {
    let mut buf = vec![0u8; size];
    let ptr = if size == 0 {
        std::ptr::null_mut()
    } else {
        buf.as_mut_ptr().cast()
    };
    // SAFETY: as in getxattr.
    let n = unsafe { libc::listxattr(cpath(p).as_ptr(), ptr, size) };
    if n < 0 {
        return Err(errno());
    }
    buf.resize(n as usize, 0);
    Ok(buf)
}

fn sorted_list(list: &[u8]) -> Vec<&[u8]> {
    let mut v: Vec<&[u8]> = list.split(|&b| b == 0).filter(|s| !s.is_empty()).collect();
    v.sort();
    v
}

#[test]
fn xattrs_set_get_list_remove() {
    let fx = mount_or_skip!("xattr", common::config());
    fs::write(fx.m("x"), "x").unwrap();
    let (m, s) = (fx.m("x"), fx.s("x"));
    setxattr(&m, c"user.test", b"value", 0).unwrap();
    assert_eq!(getxattr(&s, c"user.test", 64).unwrap(), b"value");
    assert_eq!(
        getxattr(&m, c"user.test", 0).unwrap().len(),
        5,
        "size query"
    );
    assert_eq!(getxattr(&m, c"user.test", 2), Err(libc::ERANGE));
    assert_eq!(getxattr(&m, c"user.test", 64).unwrap(), b"value");
    assert_eq!(
        setxattr(&m, c"user.test", b"v2", libc::XATTR_CREATE),
        Err(libc::EEXIST)
    );
    assert_eq!(
        setxattr(&m, c"user.missing", b"v", libc::XATTR_REPLACE),
        Err(libc::ENODATA)
    );
    // ext4 keeps a value within one block (without ea_inode): 10 KB is ENOSPC natively.
    let big = pattern(5, 2_000);
    setxattr(&m, c"user.big", &big, 0).unwrap();
    assert!(getxattr(&s, c"user.big", 20_000).unwrap() == big);
    assert!(getxattr(&m, c"user.big", 20_000).unwrap() == big);

    let need = listxattr(&m, 0).unwrap().len();
    assert_eq!(need, listxattr(&s, 0).unwrap().len());
    let list = listxattr(&m, need).unwrap();
    assert_eq!(list.len(), need);
    assert_eq!(sorted_list(&list), vec![&b"user.big"[..], b"user.test"]);
    assert_eq!(listxattr(&m, 3), Err(libc::ERANGE));

    // SAFETY: valid C strings for the call.
    let r = unsafe { libc::removexattr(cpath(&m).as_ptr(), c"user.test".as_ptr()) };
    assert_eq!(r, 0);
    assert_eq!(getxattr(&s, c"user.test", 64), Err(libc::ENODATA));
    assert_eq!(getxattr(&m, c"user.test", 64), Err(libc::ENODATA));

    // On a directory too.
    fs::create_dir(fx.m("dir")).unwrap();
    setxattr(&fx.m("dir"), c"user.d", b"dir", 0).unwrap();
    assert_eq!(getxattr(&fx.s("dir"), c"user.d", 16).unwrap(), b"dir");
    fx.finish();
}

fn access(p: &Path, mask: i32) -> Result<(), i32> {
    // SAFETY: a valid C path for the call.
    match unsafe { libc::access(cpath(p).as_ptr(), mask) } {
        0 => Ok(()),
        _ => Err(errno()),
    }
}

#[test]
fn access_answers_as_the_source_does() {
    let fx = mount_or_skip!("access", common::config());
    fs::write(fx.m("r"), "").unwrap();
    fs::set_permissions(fx.m("r"), Permissions::from_mode(0o644)).unwrap();
    fs::write(fx.m("x"), "").unwrap();
    fs::set_permissions(fx.m("x"), Permissions::from_mode(0o755)).unwrap();
    fs::create_dir(fx.m("d")).unwrap();
    let cases = [
        ("r", libc::F_OK, Ok(())),
        ("r", libc::R_OK | libc::W_OK, Ok(())),
        ("r", libc::X_OK, Err(libc::EACCES)),
        ("x", libc::X_OK, Ok(())),
        ("d", libc::X_OK | libc::W_OK, Ok(())),
        ("missing", libc::F_OK, Err(libc::ENOENT)),
    ];
    for (name, mask, want) in cases {
        assert_eq!(access(&fx.m(name), mask), want, "access({name}, {mask})");
        assert_eq!(access(&fx.s(name), mask), want, "native access({name})");
    }
    fx.finish();
}

#[test]
fn read_only_mount_refuses_every_change() {
    let Some(d) = common::dirs("ro") else {
        return;
    };
    fs::write(d.src.join("f"), "keep").unwrap();
    fs::create_dir(d.src.join("dir")).unwrap();
    let mut cfg = common::config();
    cfg.mount.read_only = true;
    let fx = d.mount(cfg);
    let before = names(&fx.src);
    assert_eq!(fs::read_to_string(fx.m("f")).unwrap(), "keep");
    assert_eq!(names(&fx.m("dir")), Vec::<String>::new());
    let rofs = |r: std::io::Result<()>, what: &str| {
        assert_eq!(r.map_err(raw), Err(libc::EROFS), "{what}");
    };
    rofs(
        OpenOptions::new().write(true).open(fx.m("f")).map(drop),
        "open for writing",
    );
    rofs(File::create(fx.m("new")).map(drop), "create");
    rofs(fs::create_dir(fx.m("newdir")), "mkdir");
    rofs(fs::remove_file(fx.m("f")), "unlink");
    rofs(fs::remove_dir(fx.m("dir")), "rmdir");
    rofs(fs::rename(fx.m("f"), fx.m("g")), "rename");
    rofs(fs::hard_link(fx.m("f"), fx.m("h")), "link");
    rofs(std::os::unix::fs::symlink("f", fx.m("s")), "symlink");
    rofs(
        fs::set_permissions(fx.m("f"), Permissions::from_mode(0o600)),
        "chmod",
    );
    rofs(
        setxattr(&fx.m("f"), c"user.x", b"x", 0).map_err(std::io::Error::from_raw_os_error),
        "setxattr",
    );
    // SAFETY: a valid C path for the call.
    let r = unsafe { libc::truncate(cpath(&fx.m("f")).as_ptr(), 0) };
    assert_eq!((r, errno()), (-1, libc::EROFS), "truncate");
    assert_eq!(fs::read_to_string(fx.s("f")).unwrap(), "keep");
    assert_eq!(names(&fx.src), before);
    assert_ne!(mode(&fx.s("f")), 0o600);
    fx.finish();
}
