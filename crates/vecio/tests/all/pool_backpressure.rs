//! Back-pressure through the thread-pool engine (`WhenFull::WouldBlock`): a full pool refuses
//! pushes and hands the buffers back without losing or duplicating a completion; its refusal
//! reads as would-block through a queue and through a batch; a batch reports what it ran.
//! Real files, real kernel.
//!
//! The last three tests check for library bugs these tests found (a full pool's refusal read
//! as `EIO`, not would-block; a batch that met a refusal reported writes it did run as
//! failed); their docs name the defects.

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::pool::*;
use common::*;
use vecio::engine::WhenFull;
use vecio::fast_read::FastReadMode;
use vecio::{Batch, Engine, Error, File, IoIter, OwnedBuf, Queue, RwFlags};

/// A queue over a pool of one worker and one queued job that refuses pushes when full.
fn tiny_would_block_queue() -> Queue {
    Queue::new(Box::new(engine(
        1,
        1,
        WhenFull::WouldBlock,
        FastReadMode::Tracked,
    )))
}

/// Pushes 1 MiB `RWF_DSYNC` writes (slow enough to keep the one worker busy) until one is
/// refused; returns the refusal, with the buffers handed back, and how many were accepted.
fn push_until_refused(q: &mut Queue, file: &Arc<File>, seed: u16) -> (Error, Vec<OwnedBuf>, u64) {
    for i in 0..64u64 {
        let data = pattern(seed, i * MIB as u64, MIB);
        match q.push_write(
            file,
            i * MIB as u64,
            vec![OwnedBuf::Vec(data)],
            RwFlags::DSYNC,
            i,
        ) {
            Ok(()) => {}
            Err(vecio::PushError { error: e, bufs }) => return (e, bufs, i),
        }
    }
    panic!("64 slow writes never filled a pool of one worker and a queue of one");
}

/// A full pool engine refuses pushes, hands the buffers back, and loses or duplicates no
/// completion: refused writes are pushed again after a reap, and the file ends right.
#[test]
fn a_full_pool_never_loses_or_duplicates_a_completion() {
    with_timeout(120, "back-pressure", || {
        const SEED: u16 = 44;
        const N: u64 = 32;
        let dir = tempdir();
        let path = dir.path().join("bp");
        let file = Arc::new(open_buffered(&path));
        let mut q = tiny_would_block_queue();
        let mut done = Vec::new();
        let mut refused = 0u64;
        for i in 0..N {
            let mut bufs = vec![OwnedBuf::Vec(pattern(SEED, i * MIB as u64, MIB))];
            loop {
                match q.push_write(&file, i * MIB as u64, bufs, RwFlags::DSYNC, i) {
                    Ok(()) => break,
                    Err(vecio::PushError { bufs: back, .. }) => {
                        refused += 1;
                        assert_eq!(back.len(), 1, "buffers come back with the refusal");
                        assert_same(
                            back[0].as_slice(),
                            &pattern(SEED, i * MIB as u64, MIB),
                            0,
                            "returned buffer",
                        );
                        bufs = back;
                        q.submit_and_wait(1).unwrap();
                        q.reap(&mut done);
                        assert!(refused < 100_000, "never room again");
                    }
                }
            }
        }
        assert!(refused >= 1, "a pool of one worker and one slot fills up");
        reap_until(&mut q, &mut done, N as usize);
        assert!(q.is_empty());
        assert_each_once(&done, 0..N);
        for c in &done {
            assert_eq!(c.result.as_ref().ok(), Some(&MIB), "write {}", c.user_data);
        }
        assert_same(
            &read_all(&path),
            &pattern(SEED, 0, N as usize * MIB),
            0,
            "file after back-pressure",
        );
    });
}

/// The refusal of a full `WhenFull::WouldBlock` pool is the engine's `io::ErrorKind::WouldBlock`;
/// a caller has to be able to tell "try again later" from a failed request. Through a queue
/// it comes back as `EIO` (`Error::Io`), and `is_would_block()` is false.
#[test]
fn a_full_pool_refuses_a_queue_push_with_would_block() {
    with_timeout(60, "queue refusal", || {
        let dir = tempdir();
        let file = Arc::new(open_buffered(&dir.path().join("q")));
        let mut q = tiny_would_block_queue();
        let (e, bufs, accepted) = push_until_refused(&mut q, &file, 45);
        assert_eq!(bufs.len(), 1, "buffers come back");
        let mut done = Vec::new();
        reap_until(&mut q, &mut done, accepted as usize);
        assert!(done.iter().all(|c| c.result.is_ok()));
        let kind = e.io_error().map(|s| s.kind());
        assert!(
            e.is_would_block() || kind == Some(std::io::ErrorKind::WouldBlock),
            "a full pool's refusal must read as would-block, got {e:?} \
             (engine/pool.rs offload returns io::Error::from(ErrorKind::WouldBlock), which has \
             no raw errno; queue.rs push maps a missing errno to EIO)"
        );
    });
}

/// 16 x 1 MiB `RWF_DSYNC` writes in one batch over a pool of one worker and one queued job
/// that refuses pushes when full: the results, one per request, in push order.
fn batch_over_a_full_pool(path: &Path, data: &[u8]) -> Vec<vecio::Result<usize>> {
    let file = open_buffered(path);
    let mut eng = engine(1, 1, WhenFull::WouldBlock, FastReadMode::Tracked);
    let n = data.len() / MIB;
    let res = {
        let mut b = Batch::new();
        for i in 0..n {
            b.push(
                &file,
                (i * MIB) as u64,
                IoIter::write_from(&data[i * MIB..(i + 1) * MIB]),
                RwFlags::DSYNC,
            );
        }
        b.run(&mut eng)
    };
    assert_eq!(res.len(), n, "one result per request");
    assert_eq!(eng.in_flight(), 0, "nothing left in flight after run");
    res
}

/// Through a batch, a request a full pool refuses fails with a typed would-block error
/// (`Error::Engine` with `EAGAIN`/`WouldBlock`); Batch turns the refusal into `EIO`.
/// (A batch that absorbs the back-pressure and fails nothing passes too.)
#[test]
fn a_batch_over_a_full_pool_fails_with_would_block() {
    with_timeout(60, "batch refusal", || {
        let dir = tempdir();
        let data = pattern(46, 0, 16 * MIB);
        let res = batch_over_a_full_pool(&dir.path().join("b"), &data);
        for e in res.iter().filter_map(|r| r.as_ref().err()) {
            let kind = e.io_error().map(|s| s.kind());
            assert!(
                e.is_would_block() || kind == Some(std::io::ErrorKind::WouldBlock),
                "a full pool's refusal must read as would-block, got {e:?} \
                 (engine/pool.rs offload returns io::Error::from(ErrorKind::WouldBlock); \
                 batch.rs engine_error maps a missing raw errno to EIO)"
            );
        }
    });
}

/// Through a batch, every result tells what happened: a request reported done wrote its data,
/// a request reported failed wrote nothing. When a push is refused, Batch waits for the ops
/// already pushed, throws their results away and fails every request of the round, so writes
/// that did reach the file are reported as failed (a caller retrying them, or an `RWF_APPEND`
/// write, would then write twice).
#[test]
fn a_batch_over_a_full_pool_reports_what_it_ran() {
    with_timeout(60, "batch results", || {
        let dir = tempdir();
        let path = dir.path().join("r");
        let data = pattern(48, 0, 16 * MIB);
        let res = batch_over_a_full_pool(&path, &data);
        let got = read_all(&path);
        for (i, r) in res.iter().enumerate() {
            let want = &data[i * MIB..(i + 1) * MIB];
            let have = got.get(i * MIB..((i + 1) * MIB).min(got.len()));
            match r {
                Ok(n) => {
                    assert_eq!(*n, MIB, "request {i}");
                    assert_same(
                        have.unwrap_or(&[]),
                        want,
                        (i * MIB) as u64,
                        "a reported write",
                    );
                }
                Err(e) => assert!(
                    have.is_none_or(|h| h.iter().all(|&b| b == 0)),
                    "request {i} is reported failed ({e}) but its data is in the file \
                     (batch.rs Batch::round: on a refused push, drain() discards the results \
                     of the ops already pushed and every request of the round fails)"
                ),
            }
        }
    });
}
