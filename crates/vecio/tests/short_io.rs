//! Short I/O is exact: a read crossing the end of file returns exactly the bytes up to it, a
//! read at the end returns 0, and a write stopped by `RLIMIT_FSIZE` returns the bytes written
//! up to the limit, with the next call meeting `EFBIG` (an `Io` error naming request, offset
//! and file).

mod common;

use std::io::{IoSlice, IoSliceMut};
use std::process::Command;

use common::*;
use vecio::{AlignedBuf, Batch, EngineKind, Error, File, IoIter, RwFlags};

fn read_one(engine: &mut dyn vecio::Engine, file: &File, offset: u64, buf: &mut [u8]) -> usize {
    let mut batch = Batch::new();
    batch.push(file, offset, IoIter::read_into(buf), RwFlags::empty());
    batch.run(engine).pop().unwrap().unwrap()
}

/// On an O_DIRECT file of unaligned size: 8 KiB from 1000 bytes before EOF returns 1000 (from
/// an unaligned and from an aligned offset, single buffer and vectored); at and past EOF 0.
#[test]
fn reads_crossing_eof_are_exact() {
    let size: u64 = 5 * 4096 + 1234;
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        std::fs::write(&path, pattern(8, 0, size as usize)).unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let e = engine.as_mut();

        let mut buf = AlignedBuf::new(8192, 4096);
        let off = size - 1000;
        assert_eq!(
            read_one(e, &file, off, &mut buf),
            1000,
            "{kind:?}: 8 KiB at EOF-1000"
        );
        assert_pattern(&buf[..1000], 8, off, &format!("{kind:?}: tail"));
        assert_eq!(
            file.read_at(&mut buf, off).unwrap(),
            1000,
            "{kind:?}: read_at"
        );
        assert_pattern(&buf[..1000], 8, off, &format!("{kind:?}: read_at tail"));

        // Aligned offset, aligned buffer: the kernel's own short read, then nothing more.
        let aoff = size / 4096 * 4096 - 4096;
        let want = (size - aoff) as usize;
        assert_eq!(
            read_one(e, &file, aoff, &mut buf),
            want,
            "{kind:?}: aligned crossing"
        );
        assert_pattern(
            &buf[..want],
            8,
            aoff,
            &format!("{kind:?}: aligned crossing"),
        );

        // Vectored, crossing EOF in its third segment.
        let mut b2 = AlignedBuf::new(4 * 4096, 4096);
        {
            let mut segs: Vec<IoSliceMut<'_>> = b2.chunks_mut(4096).map(IoSliceMut::new).collect();
            let voff = size / 4096 * 4096 - 2 * 4096;
            let mut batch = Batch::new();
            batch.push(&file, voff, IoIter::readv_into(&mut segs), RwFlags::empty());
            let got = batch.run(e).pop().unwrap().unwrap();
            assert_eq!(got as u64, size - voff, "{kind:?}: vectored crossing");
        }

        // At EOF and beyond: 0, aligned or not.
        for at in [size, size + 1, size / 512 * 512 + 512, size + 100_000] {
            assert_eq!(
                read_one(e, &file, at, &mut buf),
                0,
                "{kind:?}: read at {at}"
            );
            assert_eq!(
                file.read_at(&mut buf[..100], at).unwrap(),
                0,
                "{kind:?}: read_at {at}"
            );
        }
        // Several crossing reads in one batch.
        let mut bufs: Vec<Vec<u8>> = (0..4).map(|_| vec![0u8; 3000]).collect();
        let mut batch = Batch::new();
        for (i, b) in bufs.iter_mut().enumerate() {
            batch.push(
                &file,
                size - 500 * (i as u64 + 1),
                IoIter::read_into(b),
                RwFlags::empty(),
            );
        }
        let res: Vec<usize> = batch.run(e).into_iter().map(|r| r.unwrap()).collect();
        assert_eq!(
            res,
            vec![500, 1000, 1500, 2000],
            "{kind:?}: batch of crossing reads"
        );
    }
}

const CHILD_ENV: &str = "VECIO_TEST_FSIZE_CHILD";
const MIB: u64 = 1 << 20;
const KIB: u64 = 1 << 10;

/// The parent half: runs `fsize_limit_child` in a fresh process (an rlimit is per process, and
/// the test harness runs tests on threads of one process).
/// A read that ends short at end of file is finished by that one operation: the engine is not
/// sent again for a zero-byte read (a second trip to the device on a direct file).
#[test]
fn a_read_ending_at_eof_takes_one_operation() {
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("small");
        std::fs::write(&path, pattern(3, 0, 6)).unwrap();
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();
        let before = engine.counters().ops;
        let mut buf = AlignedBuf::new(4096, 4096);
        assert_eq!(read_one(engine.as_mut(), &file, 0, &mut buf), 6, "{kind:?}");
        assert_pattern(&buf[..6], 3, 0, &format!("{kind:?}: data"));
        assert_eq!(
            engine.counters().ops - before,
            1,
            "{kind:?}: operations for one short read"
        );
    }
}

#[test]
fn fsize_limit_short_write_then_efbig() {
    let exe = std::env::current_exe().unwrap();
    let out = Command::new(exe)
        .args([
            "--exact",
            "fsize_limit_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .expect("re-run the test binary");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "child failed ({}):\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
        out.status
    );
    assert!(
        stdout.contains("fsize child: all engines done"),
        "child did not run its checks:\n{stdout}\n{stderr}"
    );
}

fn assert_efbig(
    r: &vecio::Result<usize>,
    request: usize,
    offset: u64,
    path: &std::path::Path,
    what: &str,
) {
    match r {
        Err(Error::Io {
            path: p,
            request: rq,
            offset: o,
            source,
        }) => {
            assert_eq!(source.raw_os_error(), Some(libc::EFBIG), "{what}: {r:?}");
            assert_eq!(*rq, request, "{what}: request index");
            assert_eq!(*o, offset, "{what}: offset");
            assert_eq!(&**p, path, "{what}: path");
        }
        other => panic!("{what}: expected an Io error with EFBIG, got {other:?}"),
    }
}

/// The child half: only does something when started by the parent with the env var set.
#[test]
fn fsize_limit_child() {
    if std::env::var_os(CHILD_ENV).is_none() {
        return;
    }
    // SAFETY: plain libc calls on this (child) process; no other test runs in it.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
        let lim = libc::rlimit {
            rlim_cur: MIB,
            rlim_max: MIB,
        };
        assert_eq!(libc::setrlimit(libc::RLIMIT_FSIZE, &lim), 0);
    }
    for kind in EngineKind::ALL {
        let dir = tempdir();
        let path = dir.path().join("data");
        let file = open_direct(&path);
        let mut engine = kind.build().unwrap();

        // 1 MiB + 64 KiB at 512 KiB: 512 KiB written, then the limit.
        let len = (MIB + 64 * KIB) as usize;
        let mut src = AlignedBuf::new(len, 4096);
        fill(&mut src, 6, 512 * KIB);
        let mut batch = Batch::new();
        batch.push(&file, 512 * KIB, IoIter::write_from(&src), RwFlags::empty());
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&((512 * KIB) as usize)),
            "{kind:?}: first write: {r:?}"
        );
        assert_eq!(file.size().unwrap(), MIB, "{kind:?}: size at the limit");
        let all = read_all(&path);
        assert_pattern(
            &all[(512 * KIB) as usize..],
            6,
            512 * KIB,
            &format!("{kind:?}: data"),
        );

        // The rest: EFBIG, naming request, offset and file.
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(&src[..4096]), RwFlags::empty());
        batch.push(
            &file,
            MIB,
            IoIter::write_from(&src[(512 * KIB) as usize..]),
            RwFlags::empty(),
        );
        let res = batch.run(engine.as_mut());
        assert_eq!(
            res[0].as_ref().ok(),
            Some(&4096),
            "{kind:?}: write below the limit"
        );
        assert_efbig(
            &res[1],
            1,
            MIB,
            &path,
            &format!("{kind:?}: write at the limit"),
        );

        // Vectored and split over IOV_MAX: the count stops at the limit exactly.
        let segs: Vec<IoSlice<'_>> = src.chunks(512).map(IoSlice::new).collect();
        assert!(segs.len() > vecio::engine::IOV_MAX);
        let mut batch = Batch::new();
        batch.push(
            &file,
            MIB - 256 * KIB,
            IoIter::writev_from(&segs),
            RwFlags::empty(),
        );
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&((256 * KIB) as usize)),
            "{kind:?}: vectored: {r:?}"
        );

        // Unaligned (read-modify-write) write crossing the limit: exactly the bytes below it.
        let data = pattern(7, MIB - 1000, 5000);
        let mut batch = Batch::new();
        batch.push(
            &file,
            MIB - 1000,
            IoIter::write_from(&data),
            RwFlags::empty(),
        );
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_eq!(
            r.as_ref().ok(),
            Some(&1000),
            "{kind:?}: unaligned crossing: {r:?}"
        );
        assert_eq!(file.size().unwrap(), MIB);
        let all = read_all(&path);
        assert_same(
            &all[(MIB - 1000) as usize..],
            &data[..1000],
            MIB - 1000,
            &format!("{kind:?}: rmw"),
        );
        assert_pattern(
            &all[(MIB - 256 * KIB) as usize..(MIB - 1024) as usize],
            6,
            512 * KIB,
            &format!("{kind:?}: rmw neighbours"),
        );

        // Unaligned write starting past the limit: EFBIG at the request's offset.
        let mut batch = Batch::new();
        batch.push(&file, MIB + 1, IoIter::write_from(&data), RwFlags::empty());
        let r = batch.run(engine.as_mut()).pop().unwrap();
        assert_efbig(
            &r,
            0,
            MIB + 1,
            &path,
            &format!("{kind:?}: unaligned past the limit"),
        );

        // The blocking single-call path behaves the same.
        assert_eq!(
            file.write_at(&src[..128 * KIB as usize], MIB - 64 * KIB)
                .unwrap(),
            (64 * KIB) as usize
        );
        assert_efbig(
            &file.write_at(&src[..4096], MIB),
            0,
            MIB,
            &path,
            &format!("{kind:?}: write_at"),
        );
        println!("fsize child: {kind:?} ok");
    }
    println!("fsize child: all engines done");
}
