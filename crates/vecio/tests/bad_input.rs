//! Bad input gives a typed error, never a panic, and the error names the request index, the
//! offset and the file: empty requests, offsets that overflow, the wrong direction for the
//! file, objects that are not regular files, and file systems that refuse O_DIRECT.

mod common;

use std::io::{IoSlice, IoSliceMut};
use std::os::unix::fs::FileTypeExt;
use std::path::Path;
use std::time::{Duration, Instant};

use common::*;
use vecio::{AlignedBuf, Batch, Direct, EngineKind, Error, File, Invalid, IoIter, RwFlags};

#[track_caller]
fn assert_invalid(
    r: &vecio::Result<usize>,
    reason: Invalid,
    request: usize,
    offset: u64,
    path: &Path,
    what: &str,
) {
    match r {
        Err(Error::Invalid {
            path: p,
            request: rq,
            offset: o,
            reason: why,
        }) => {
            assert_eq!(*why, reason, "{what}: reason");
            assert_eq!(*rq, request, "{what}: request index");
            assert_eq!(*o, offset, "{what}: offset");
            assert_eq!(&**p, path, "{what}: path");
            // The message names the file, the request and the offset.
            let msg = r.as_ref().unwrap_err().to_string();
            assert!(
                msg.contains(&path.display().to_string()),
                "{what}: message {msg:?}"
            );
            assert!(
                msg.contains(&format!("request {request}")),
                "{what}: message {msg:?}"
            );
            assert!(msg.contains(&offset.to_string()), "{what}: message {msg:?}");
        }
        other => panic!("{what}: expected Invalid::{reason:?}, got {other:?}"),
    }
}

/// Empty requests (no buffer, a zero-length buffer, only zero-length segments) are
/// `Invalid::Empty` and do not disturb the other requests of their batch.
#[test]
fn empty_requests_are_invalid_empty() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let good = AlignedBuf::new(4096, 4096);
        let empty: [u8; 0] = [];
        let zeros: [IoSlice<'_>; 3] = [IoSlice::new(&[]), IoSlice::new(&[]), IoSlice::new(&[])];
        let none: [IoSlice<'_>; 0] = [];
        let mut rd: Vec<u8> = Vec::new();
        let mut rdv: [IoSliceMut<'_>; 0] = [];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&good), RwFlags::empty());
        batch.push(&file, 4096, IoIter::write_from(&empty), RwFlags::empty());
        batch.push(&file, 8192, IoIter::writev_from(&zeros), RwFlags::empty());
        batch.push(&file, 12288, IoIter::writev_from(&none), RwFlags::empty());
        batch.push(&file, 7, IoIter::read_into(&mut rd), RwFlags::empty());
        batch.push(&file, 9, IoIter::readv_into(&mut rdv), RwFlags::empty());
        let res = batch.run(engine.as_mut());
        assert_eq!(res.len(), 6);
        assert_eq!(res[0].as_ref().ok(), Some(&4096), "{kind:?}");
        for (i, off) in [(1, 4096), (2, 8192), (3, 12288), (4, 7), (5, 9)] {
            assert_invalid(
                &res[i],
                Invalid::Empty,
                i,
                off,
                &path,
                &format!("{kind:?} request {i}"),
            );
        }
        assert_eq!(file.size().unwrap(), 4096);
    }
    // The blocking calls too.
    let dir = tempdir();
    let path = dir.path().join("data");
    let file = open_direct(&path);
    assert_invalid(
        &file.write_at(&[], 100),
        Invalid::Empty,
        0,
        100,
        &path,
        "write_at",
    );
    assert_invalid(
        &file.read_at(&mut [], 100),
        Invalid::Empty,
        0,
        100,
        &path,
        "read_at",
    );
    assert_invalid(
        &file.readv_at(&mut [], 5, RwFlags::empty()),
        Invalid::Empty,
        0,
        5,
        &path,
        "readv_at",
    );
}

/// Zero-length segments between non-empty ones are skipped: aligned and unaligned requests,
/// buffered and direct files.
#[test]
fn zero_length_segments_are_skipped() {
    for kind in EngineKind::ALL {
        for direct in [true, false] {
            let dir = tempdir();
            let path = dir.path().join("data");
            let file = if direct {
                open_direct(&path)
            } else {
                open_buffered(&path)
            };
            let mut engine = kind.build().unwrap();
            let what = format!("{kind:?} direct={direct}");
            let mut a = AlignedBuf::new(8192, 4096);
            fill(&mut a, 1, 0);
            let odd = pattern(2, 9000, 150);
            let segs = [
                IoSlice::new(&[]),
                IoSlice::new(&a[..4096]),
                IoSlice::new(&[]),
                IoSlice::new(&[]),
                IoSlice::new(&a[4096..]),
                IoSlice::new(&[]),
            ];
            let osegs = [
                IoSlice::new(&odd[..100]),
                IoSlice::new(&[]),
                IoSlice::new(&odd[100..]),
                IoSlice::new(&[]),
            ];
            let mut batch = Batch::new();
            batch.push(&file, 0, IoIter::writev_from(&segs), RwFlags::empty());
            batch.push(&file, 9000, IoIter::writev_from(&osegs), RwFlags::empty());
            let res = batch.run(engine.as_mut());
            assert_eq!(res[0].as_ref().ok(), Some(&8192), "{what}: {res:?}");
            assert_eq!(res[1].as_ref().ok(), Some(&150), "{what}: {res:?}");
            let all = read_all(&path);
            assert_eq!(all.len(), 9150, "{what}");
            assert_pattern(&all[..8192], 1, 0, &what);
            assert_same(&all[9000..], &odd, 9000, &what);

            let mut b = AlignedBuf::new(8192, 4096);
            let mut c = vec![0u8; 150];
            {
                let (b1, b2) = b.split_at_mut(4096);
                let (c1, c2) = c.split_at_mut(33);
                let mut rsegs = [
                    IoSliceMut::new(&mut []),
                    IoSliceMut::new(b1),
                    IoSliceMut::new(&mut []),
                    IoSliceMut::new(b2),
                ];
                let mut osegs = [
                    IoSliceMut::new(c1),
                    IoSliceMut::new(&mut []),
                    IoSliceMut::new(c2),
                ];
                let mut batch = Batch::new();
                batch.push(&file, 0, IoIter::readv_into(&mut rsegs), RwFlags::empty());
                batch.push(
                    &file,
                    9000,
                    IoIter::readv_into(&mut osegs),
                    RwFlags::empty(),
                );
                let res = batch.run(engine.as_mut());
                assert_eq!(res[0].as_ref().ok(), Some(&8192), "{what}: {res:?}");
                assert_eq!(res[1].as_ref().ok(), Some(&150), "{what}: {res:?}");
            }
            assert_pattern(&b, 1, 0, &what);
            assert_same(&c, &odd, 9000, &what);
        }
    }
}

/// `offset + len` past the largest file offset is `Invalid::Overflow`, whatever the alignment,
/// with the other requests of the batch served.
#[test]
fn offset_overflow_is_invalid_overflow() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let a = AlignedBuf::new(4096, 4096);
        let mut r = AlignedBuf::new(4096, 4096);
        // 11 bytes at i64::MAX - 10 end one past the largest offset.
        let mut r2 = [0u8; 11];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&a), RwFlags::empty());
        batch.push(
            &file,
            u64::MAX - 10,
            IoIter::write_from(&a),
            RwFlags::empty(),
        );
        batch.push(
            &file,
            u64::MAX - 10,
            IoIter::read_into(&mut r),
            RwFlags::empty(),
        );
        batch.push(
            &file,
            i64::MAX as u64 - 10,
            IoIter::read_into(&mut r2[..]),
            RwFlags::empty(),
        );
        batch.push(
            &file,
            u64::MAX,
            IoIter::write_from(&a[..1]),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(res[0].as_ref().ok(), Some(&4096), "{kind:?}: {res:?}");
        assert_invalid(
            &res[1],
            Invalid::Overflow,
            1,
            u64::MAX - 10,
            &path,
            &format!("{kind:?} 1"),
        );
        assert_invalid(
            &res[2],
            Invalid::Overflow,
            2,
            u64::MAX - 10,
            &path,
            &format!("{kind:?} 2"),
        );
        assert_invalid(
            &res[3],
            Invalid::Overflow,
            3,
            i64::MAX as u64 - 10,
            &path,
            &format!("{kind:?} 3"),
        );
        assert_invalid(
            &res[4],
            Invalid::Overflow,
            4,
            u64::MAX,
            &path,
            &format!("{kind:?} 4"),
        );
    }
    let dir = tempdir();
    let path = dir.path().join("data");
    let file = open_direct(&path);
    let a = AlignedBuf::new(4096, 4096);
    assert_invalid(
        &file.write_at(&a, u64::MAX - 10),
        Invalid::Overflow,
        0,
        u64::MAX - 10,
        &path,
        "write_at",
    );
}

/// A read near the largest file offset that still fits is not an error: like `pread(2)` on
/// the same file, it returns 0 (nothing is there). The bounce window of an unaligned read
/// must not push the kernel call past the largest offset.
#[test]
fn unaligned_read_just_below_max_offset_returns_zero() {
    let max = i64::MAX as u64;
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, b"hello").unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        // What the kernel says for the same request on a buffered descriptor.
        let std_file = std::fs::File::open(&path).unwrap();
        let mut b = [0u8; 50];
        let kernel = std::os::unix::fs::FileExt::read_at(&std_file, &mut b, max - 100).unwrap();
        assert_eq!(kernel, 0);
        let mut buf = vec![0u8; 50];
        let mut batch = Batch::new();
        batch.push(
            &file,
            max - 100,
            IoIter::read_into(&mut buf),
            RwFlags::empty(),
        );
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&0),
            "{kind:?}: 50 bytes at i64::MAX - 100 on an O_DIRECT file: {r:?} (pread says 0)"
        );
    }
}

/// Writing a read-only file is `Invalid::NotWritable`; reading a write-only file
/// `Invalid::NotReadable`; neither reaches the kernel.
#[test]
fn wrong_direction_for_the_file() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(1, 0, 8192)).unwrap();
        let ro = File::options()
            .read(true)
            .direct(Direct::On)
            .open(&path)
            .unwrap();
        let wo = File::options()
            .read(false)
            .write(true)
            .direct(Direct::On)
            .open(&path)
            .unwrap();
        assert!(!ro.is_writable() && ro.is_readable());
        assert!(wo.is_writable() && !wo.is_readable());
        let mut engine = kind.build().unwrap();
        let a = AlignedBuf::new(4096, 4096);
        let mut r = AlignedBuf::new(4096, 4096);
        let mut r2 = AlignedBuf::new(4096, 4096);
        let mut batch = Batch::new();
        batch.push(&ro, 4096, IoIter::read_into(&mut r2), RwFlags::empty());
        batch.push(&ro, 0, IoIter::write_from(&a), RwFlags::empty());
        batch.push(&ro, 3, IoIter::write_from(&a[..5]), RwFlags::empty());
        batch.push(&wo, 512, IoIter::read_into(&mut r), RwFlags::empty());
        let res = batch.run(engine.as_mut());
        assert_eq!(res[0].as_ref().ok(), Some(&4096));
        assert_pattern(&r2, 1, 4096, &format!("{kind:?}: read-only read"));
        assert_invalid(
            &res[1],
            Invalid::NotWritable,
            1,
            0,
            &path,
            &format!("{kind:?}"),
        );
        assert_invalid(
            &res[2],
            Invalid::NotWritable,
            2,
            3,
            &path,
            &format!("{kind:?}"),
        );
        assert_invalid(
            &res[3],
            Invalid::NotReadable,
            3,
            512,
            &path,
            &format!("{kind:?}"),
        );
        assert_pattern(&read_all(&path), 1, 0, &format!("{kind:?}: file untouched"));
        assert_invalid(
            &ro.write_at(&a, 0),
            Invalid::NotWritable,
            0,
            0,
            &path,
            "write_at",
        );
        assert_invalid(
            &wo.read_at(&mut r, 0),
            Invalid::NotReadable,
            0,
            0,
            &path,
            "read_at",
        );
    }
}

/// Kernel failures are `Io` errors naming request, offset and file: a write past ext4's
/// largest file size is EFBIG, reported for its own request only.
#[test]
fn kernel_errors_name_request_offset_and_file() {
    let far = 1u64 << 45; // 32 TiB, past ext4's 16 TiB limit for 4 KiB blocks
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let a = AlignedBuf::new(4096, 4096);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&a), RwFlags::empty());
        batch.push(&file, 4096, IoIter::write_from(&a), RwFlags::empty());
        batch.push(&file, far, IoIter::write_from(&a), RwFlags::empty());
        batch.push(
            &file,
            far + 1,
            IoIter::write_from(&a[..100]),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(res[0].as_ref().ok(), Some(&4096));
        assert_eq!(res[1].as_ref().ok(), Some(&4096));
        for (i, off) in [(2usize, far), (3, far + 1)] {
            match &res[i] {
                Err(
                    e @ Error::Io {
                        path: p,
                        request,
                        offset,
                        source,
                    },
                ) => {
                    assert_eq!(source.raw_os_error(), Some(libc::EFBIG), "{kind:?}: {e}");
                    assert_eq!(*request, i, "{kind:?}: request index");
                    assert_eq!(*offset, off, "{kind:?}: offset");
                    assert_eq!(&**p, path.as_path());
                    assert_eq!(e.raw_os_error(), Some(libc::EFBIG));
                    let msg = e.to_string();
                    assert!(
                        msg.contains(&format!("request {i}")) && msg.contains(&off.to_string()),
                        "{msg}"
                    );
                }
                other => panic!("{kind:?}: request {i}: expected Io(EFBIG), got {other:?}"),
            }
        }
        assert_eq!(file.size().unwrap(), 8192, "{kind:?}: no stray growth");
    }
}

#[track_caller]
fn assert_not_regular(r: vecio::Result<File>, path: &Path, what: &str) {
    match r {
        Err(Error::NotRegular { path: p }) => assert_eq!(&*p, path, "{what}"),
        Err(other) => panic!("{what}: expected NotRegular, got {other:?} ({other})"),
        Ok(f) => panic!("{what}: expected NotRegular, opened {f:?}"),
    }
}

/// A directory and a character device are not served: `NotRegular`.
#[test]
fn directory_and_char_device_are_not_regular() {
    let dir = tempdir();
    for mode in [Direct::Off, Direct::Auto] {
        let what = format!("directory, {mode:?}");
        assert_not_regular(
            File::options().direct(mode).open(dir.path()),
            dir.path(),
            &what,
        );
    }
    let null = Path::new("/dev/null");
    assert!(std::fs::metadata(null)
        .unwrap()
        .file_type()
        .is_char_device());
    for mode in [Direct::Off, Direct::Auto] {
        let what = format!("/dev/null, {mode:?}");
        assert_not_regular(File::options().direct(mode).open(null), null, &what);
        let rw = File::options()
            .read(true)
            .write(true)
            .direct(mode)
            .open(null);
        assert_not_regular(rw, null, &format!("{what}, read-write"));
    }
    // Opening a directory for writing fails in open(2) itself (EISDIR): an Open error.
    match File::options()
        .write(true)
        .direct(Direct::Off)
        .open(dir.path())
    {
        Err(Error::Open { path, source }) => {
            assert_eq!(&*path, dir.path());
            assert_eq!(source.raw_os_error(), Some(libc::EISDIR));
        }
        other => panic!("directory for writing: {other:?}"),
    }
    // A missing file: Open with ENOENT and the path.
    let missing = dir.path().join("missing");
    match File::open(&missing) {
        Err(Error::Open { path, source }) => {
            assert_eq!(&*path, missing.as_path());
            assert_eq!(source.raw_os_error(), Some(libc::ENOENT));
        }
        other => panic!("missing file: {other:?}"),
    }
}

/// With `Direct::On` too: the kernel refuses O_DIRECT on a directory or a character device
/// (EINVAL), but the thing wrong with the request is the kind of file, and "direct I/O refused"
/// would send the user looking at the file system instead.
#[test]
fn direct_on_for_directory_and_char_device_is_not_regular() {
    let dir = tempdir();
    let r = File::options().direct(Direct::On).open(dir.path());
    assert_not_regular(r, dir.path(), "directory, Direct::On");
    let null = Path::new("/dev/null");
    let r = File::options()
        .read(true)
        .write(true)
        .direct(Direct::On)
        .open(null);
    assert_not_regular(r, null, "/dev/null, Direct::On");
}

/// Opening a FIFO must not hang waiting for a writer: it is not a regular file, so the answer
/// is `NotRegular`, at once.
#[test]
fn fifo_is_not_regular_and_open_does_not_block() {
    let dir = tempdir();
    let fifo = dir.path().join("fifo");
    let c = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: c is a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
    let path = fifo.clone();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let r = File::open(&path).map(|f| format!("{f:?}"));
        let _ = tx.send(r);
    });
    let start = Instant::now();
    let mut unblocked = 0;
    let result = loop {
        if let Ok(r) = rx.recv_timeout(Duration::from_millis(50)) {
            break r;
        }
        if start.elapsed() > Duration::from_secs(2) {
            // File::open is blocked in open(2) waiting for a writer: be the writer, so the
            // thread can finish (it may open more than once).
            // SAFETY: c is a valid path; the descriptor is closed at once.
            let fd = unsafe { libc::open(c.as_ptr(), libc::O_WRONLY | libc::O_NONBLOCK) };
            if fd >= 0 {
                unblocked += 1;
                // SAFETY: fd was just opened by this thread.
                unsafe { libc::close(fd) };
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(20),
            "File::open on a FIFO never returned"
        );
    };
    assert_eq!(
        unblocked, 0,
        "File::open on a FIFO blocked in open(2) until a writer appeared ({unblocked} times), \
         then returned {result:?}"
    );
    match result {
        Err(Error::NotRegular { path }) => assert_eq!(&*path, fifo.as_path()),
        other => panic!("FIFO: expected NotRegular, got {other:?}"),
    }
}

/// `Direct::On` on a file system that refuses O_DIRECT (procfs and sysfs here) is
/// `DirectRefused` naming the file; `Direct::Auto` falls back to buffered I/O and works.
#[test]
fn direct_on_where_the_file_system_refuses_it() {
    let candidates = [
        "/proc/version",
        "/sys/kernel/mm/transparent_hugepage/enabled",
    ];
    let mut tried = 0;
    for p in candidates {
        let path = Path::new(p);
        if !path.exists() {
            println!("skip {p}: not present");
            continue;
        }
        let probe = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags_direct()
            .open(path);
        match probe {
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {}
            Ok(_) => {
                println!("skip {p}: the kernel accepts O_DIRECT there");
                continue;
            }
            Err(e) => {
                println!("skip {p}: {e}");
                continue;
            }
        }
        tried += 1;
        match File::options().direct(Direct::On).open(path) {
            Err(Error::DirectRefused { path: got, source }) => {
                assert_eq!(&*got, path);
                assert_eq!(source.raw_os_error(), Some(libc::EINVAL));
            }
            other => panic!("{p}: expected DirectRefused, got {other:?}"),
        }
        let f = File::options().direct(Direct::Auto).open(path).unwrap();
        assert!(!f.is_direct(), "{p}: Auto must fall back to buffered");
        let mut buf = vec![0u8; 4096];
        let n = f.read_at(&mut buf, 0).unwrap();
        assert!(n > 0, "{p}: buffered read returned nothing");
        assert_eq!(&buf[..n], &std::fs::read(path).unwrap()[..n], "{p}");
    }
    if tried == 0 {
        println!("skipped: no file system on this machine refuses O_DIRECT");
    }
}

trait DirectFlag {
    fn custom_flags_direct(&mut self) -> &mut Self;
}

impl DirectFlag for std::fs::OpenOptions {
    fn custom_flags_direct(&mut self) -> &mut Self {
        std::os::unix::fs::OpenOptionsExt::custom_flags(self, libc::O_DIRECT)
    }
}

/// Page iterators refuse buffers that are not from their pool.
#[test]
fn pages_outside_the_pool_are_refused() {
    let pool = vecio::PagePool::new(4096, 2);
    let mut foreign = AlignedBuf::new(4096, 4096);
    let mut segs = [IoSliceMut::new(&mut foreign)];
    assert_eq!(
        IoIter::pages_into(&pool, &mut segs).err(),
        Some(Invalid::Direction)
    );
    let buf = pool.get().unwrap();
    let other = AlignedBuf::new(4096, 4096);
    let segs = [IoSlice::new(&buf), IoSlice::new(&other)];
    assert_eq!(
        IoIter::pages_from(&pool, &segs).err(),
        Some(Invalid::Direction)
    );
}
