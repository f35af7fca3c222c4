//! Bad requests give a typed `Invalid` error, never a panic, naming the request index, the
//! offset and the file, and leave the other requests of their batch alone: empty requests,
//! offsets that overflow, the wrong direction for the file, page buffers from outside the
//! pool. And two that are not bad: zero-length segments among others are skipped, and a read
//! just below the largest file offset returns 0.

use crate::common;

use std::io::{IoSlice, IoSliceMut};
use std::path::Path;

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

/// On a buffered file `read_at` and `write_at` make the system call with no bounds check of
/// their own: an offset the kernel refuses must still come back as `Invalid::Overflow`, not as
/// the kernel's bare `EINVAL`, and nothing is written.
#[test]
fn buffered_offset_overflow_is_invalid_overflow() {
    let dir = tempdir();
    let path = dir.path().join("data");
    let file = File::options()
        .read(true)
        .write(true)
        .create(true)
        .direct(Direct::Off)
        .open(&path)
        .unwrap();
    let mut buf = [0u8; 11];
    let past = [
        u64::MAX - 10,
        u64::MAX,
        i64::MAX as u64 - 10,
        i64::MAX as u64 + 1,
    ];
    for offset in past {
        let what = format!("read_at {offset}");
        assert_invalid(
            &file.read_at(&mut buf, offset),
            Invalid::Overflow,
            0,
            offset,
            &path,
            &what,
        );
        let what = format!("write_at {offset}");
        assert_invalid(
            &file.write_at(&buf, offset),
            Invalid::Overflow,
            0,
            offset,
            &path,
            &what,
        );
    }
    assert_eq!(
        std::fs::metadata(&path).unwrap().len(),
        0,
        "nothing was written"
    );
    // The largest offset that still fits reads nothing, as pread(2) does.
    assert_eq!(file.read_at(&mut buf[..1], i64::MAX as u64 - 1).unwrap(), 0);
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

/// Page iterators refuse buffers that are not from their region.
#[test]
fn pages_outside_the_region_are_refused() {
    let mut pool = vecio::BufPool::new(vecio::BufPoolOptions::aligned(4096).with_region(8192));
    let region = pool.region().unwrap().clone();
    let mut foreign = AlignedBuf::new(4096, 4096);
    let mut segs = [IoSliceMut::new(&mut foreign)];
    assert_eq!(
        IoIter::pages_into(&region, &mut segs).err(),
        Some(Invalid::Direction)
    );
    let buf = pool.get(4096);
    assert_eq!(buf.region_id(), Some(region.id()));
    let other = AlignedBuf::new(4096, 4096);
    let segs = [IoSlice::new(&buf), IoSlice::new(&other)];
    assert_eq!(
        IoIter::pages_from(&region, &segs).err(),
        Some(Invalid::Direction)
    );
}
