//! Space, xattr, access and read-only operations of the passthrough on a real mount:
//! fallocate and SEEK_DATA/SEEK_HOLE, copy_file_range, xattrs, access, `ro`; each result
//! checked against the source directory itself.

use crate::common;

use std::ffi::CStr;
use std::fs::{self, File, OpenOptions, Permissions};
use std::io::Write;
use std::os::fd::AsRawFd;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::fs::{FileExt, MetadataExt};
use std::path::Path;

use common::{cpath, errno, mode, mount_or_skip, names, pattern, raw};

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
