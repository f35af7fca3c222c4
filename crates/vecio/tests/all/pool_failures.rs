//! Failing requests on the thread-pool engine: a request the kernel refuses completes with an
//! error naming its offset (and, in a batch, its index), the requests around it succeed, and
//! the pool goes on. Real files, real kernel.

use crate::common;

use std::io::IoSlice;
use std::sync::Arc;

use common::pool::*;
use common::*;
use vecio::engine::WhenFull;
use vecio::fast_read::FastReadMode;
use vecio::{Batch, Error, IoIter, OwnedBuf, Queue, RwFlags};

/// A flag bit no kernel knows: `preadv2`/`pwritev2` fail with `EOPNOTSUPP` in the worker.
fn bad_flag() -> RwFlags {
    RwFlags::from_bits_retain(0x1000)
}

/// Requests the kernel refuses complete with an error naming their offset; the requests
/// around them, and every later request on the same pool, succeed. Through a queue and a batch.
#[test]
fn a_failing_request_completes_with_an_error_and_the_pool_goes_on() {
    const SEED: u16 = 43;
    let dir = tempdir();
    let wpath = dir.path().join("w");
    let wfile = Arc::new(open_buffered(&wpath));
    let rfile = pattern_file(&dir.path().join("r"), SEED + 1, MIB);

    // Queue: good and bad writes and reads mixed.
    let mut q = Queue::new(Box::new(engine(
        1,
        4,
        WhenFull::Wait,
        FastReadMode::Tracked,
    )));
    for i in 0..16u64 {
        let off = i * 8192;
        let flags = if i % 3 == 1 {
            bad_flag()
        } else {
            RwFlags::empty()
        };
        let pushed = if i % 2 == 0 {
            q.push_write(
                &wfile,
                off,
                vec![OwnedBuf::Vec(pattern(SEED, off, 8192))],
                flags,
                i,
            )
        } else {
            q.push_read(&rfile, off, vec![OwnedBuf::Vec(vec![0; 8192])], flags, i)
        };
        pushed.map_err(|e| e.error).unwrap();
    }
    let mut done = Vec::new();
    reap_until(&mut q, &mut done, 16);
    assert_each_once(&done, 0..16);
    for c in &done {
        let i = c.user_data;
        let off = i * 8192;
        if i % 3 == 1 {
            let e = c
                .result
                .as_ref()
                .expect_err("a refused flag fails the request");
            assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "request {i}: {e}");
            match e {
                Error::Unsupported { offset, .. } | Error::Io { offset, .. } => {
                    assert_eq!(*offset, off, "the error names the request's offset: {e}")
                }
                other => panic!("request {i}: unexpected error {other}"),
            }
        } else {
            assert_eq!(c.result.as_ref().ok(), Some(&8192), "request {i}");
            if i % 2 == 1 {
                assert_pattern(c.bufs[0].as_slice(), SEED + 1, off, "good read");
            }
        }
    }
    // Later requests on the same pool.
    for i in 0..16u64 {
        let off = i * 8192;
        q.push_write(
            &wfile,
            off,
            vec![OwnedBuf::Vec(pattern(SEED, off, 8192))],
            RwFlags::empty(),
            100 + i,
        )
        .map_err(|e| e.error)
        .unwrap();
    }
    let mut later = Vec::new();
    reap_until(&mut q, &mut later, 16);
    assert_each_once(&later, 100..116);
    assert!(later.iter().all(|c| matches!(c.result, Ok(8192))));
    assert_same(
        &read_all(&wpath),
        &pattern(SEED, 0, 16 * 8192),
        0,
        "writes after failures",
    );

    // Batch: the error is the request's, with its index; the others are untouched.
    let mut eng = engine(2, 16, WhenFull::Wait, FastReadMode::Always);
    let w2 = pattern(SEED + 2, 0, 4 * 4096);
    let mut r = [vec![0u8; 4096], vec![0u8; 4096]];
    let res = {
        let [r0, r1] = &mut r;
        let mut b = Batch::new();
        b.push(&wfile, 0, IoIter::write_from(&w2[..4096]), RwFlags::empty());
        b.push(
            &wfile,
            4096,
            IoIter::write_from(&w2[4096..8192]),
            bad_flag(),
        );
        b.push(&rfile, 12288, IoIter::read_into(r0), bad_flag());
        b.push(&rfile, 16384, IoIter::read_into(r1), RwFlags::empty());
        let segs = [IoSlice::new(&w2[8192..12288]), IoSlice::new(&w2[12288..])];
        b.push(&wfile, 8192, IoIter::writev_from(&segs), RwFlags::empty());
        b.run(&mut eng)
    };
    assert_eq!(res.len(), 5);
    for (i, off) in [(1usize, 4096u64), (2, 12288)] {
        let e = res[i].as_ref().expect_err("refused flag");
        assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");
        match e {
            Error::Unsupported {
                request, offset, ..
            }
            | Error::Io {
                request, offset, ..
            } => {
                assert_eq!((*request, *offset), (i, off), "{e}")
            }
            other => panic!("batch request {i}: {other}"),
        }
    }
    assert_eq!(res[0].as_ref().ok(), Some(&4096));
    assert_eq!(res[3].as_ref().ok(), Some(&4096));
    assert_eq!(res[4].as_ref().ok(), Some(&8192));
    assert_pattern(&r[1], SEED + 1, 16384, "batch read next to a failure");
    let got = read_all(&wpath);
    assert_same(&got[..4096], &w2[..4096], 0, "batch write 0");
    assert_same(&got[8192..16384], &w2[8192..], 8192, "batch write 4");
    assert_pattern(
        &got[4096..8192],
        SEED,
        4096,
        "the refused write changed nothing",
    );
    // And the pool goes on.
    let mut after = vec![0u8; 8192];
    let mut b = Batch::new();
    b.push(&rfile, 100, IoIter::read_into(&mut after), RwFlags::empty());
    assert_eq!(b.run(&mut eng).pop().unwrap().unwrap(), 8192);
    assert_pattern(&after, SEED + 1, 100, "read after a failed batch");
}
