//! The fast-read policy on real files and the real page cache: reads tried inline with
//! `RWF_NOWAIT` and offloaded to the pool only on a miss, per-file hit tracking that stops
//! trying on cold files and comes back on warm ones, and `EOPNOTSUPP` (tmpfs) turning the
//! attempt off for that file.
//!
//! Tests that need a miss use never-read cold files and run again when the kernel's readahead
//! wins the race (`cold_file`, `until_not_raced` in `common::fast_read`; see its docs).

use crate::common;

use std::path::Path;
use std::sync::Arc;

use common::fast_read::*;
use common::*;
use vecio::engine::PoolEngine;
use vecio::fast_read::{Attempt, FastReadMode, FastReadStats};
use vecio::{Engine, FastReadPolicy, File, IoIter, Queue};

// ---------------------------------------------------------------------------------------------
// Hits, misses, offloads
// ---------------------------------------------------------------------------------------------

/// A new handle on `path` (fresh fast-read statistics), buffered, read-only.
fn reopen(path: &Path) -> Arc<File> {
    Arc::new(
        File::options()
            .read(true)
            .direct(vecio::Direct::Off)
            .open(path)
            .unwrap(),
    )
}

/// A warm file is served inline: every read a hit, nothing offloaded; the engine's totals
/// agree with the file's counters; one system call per read.
#[test]
fn a_warm_file_is_served_inline() {
    const SEED: u16 = 22;
    const SIZE: u64 = 1 << 20;
    const N: u64 = 32;
    let dir = tempdir();
    let path = dir.path().join("warm");
    let pol = policy(FastReadMode::Tracked);
    drop(pattern_file(dir.path(), "warm", SEED, SIZE));

    // Batch over a pool engine: single and multi-segment reads.
    let file = reopen(&path);
    warm(&file);
    let mut engine = pool(FastReadMode::Tracked);
    let reads: Vec<Read> = (0..N)
        .map(|i| {
            if i % 2 == 0 {
                Read::new(i * 32 * 1024, &[16384])
            } else {
                Read::new(i * 32 * 1024 + 3, &[100, 5000, 11000])
            }
        })
        .collect();
    let mut q = Queue::new(Box::new(pool(FastReadMode::Tracked)));
    let got = read_through(Route::BatchPool, &file, &mut engine, &mut q, &pol, &reads);
    for (r, d) in reads.iter().zip(&got) {
        assert_eq!(d.len(), r.len());
        assert_pattern(d, SEED, r.off, "warm batch read");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "per-file stats: {st:?}");
    assert!(!st.tracking_off && !st.unsupported, "{st:?}");
    let t = engine.fast_read_totals();
    assert_eq!(
        (t.attempts, t.hits, t.partials, t.misses, t.offloads),
        (st.attempts, st.hits, st.partials, st.misses, st.offloads),
        "engine totals agree with the file: {t:?} vs {st:?}"
    );
    assert_eq!(
        engine.counters().syscalls,
        N,
        "one RWF_NOWAIT call per read, nothing offloaded"
    );

    // Queue over a pool engine, on a fresh handle.
    let file = reopen(&path);
    warm(&file);
    let got = read_through(Route::QueuePool, &file, &mut engine, &mut q, &pol, &reads);
    for (r, d) in reads.iter().zip(&got) {
        assert_pattern(d, SEED, r.off, "warm queued read");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "queue: {st:?}");

    // try_read_inline on its own: every attempt done whole.
    let file = reopen(&path);
    warm(&file);
    for r in &reads {
        let mut buf = vec![0u8; r.len()];
        let a = file
            .try_read_inline(IoIter::read_into(&mut buf), r.off, &pol)
            .unwrap();
        assert_eq!(a, Attempt::Done(r.len()), "warm read at {}", r.off);
        assert_pattern(&buf, SEED, r.off, "try_read_inline");
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(counters(&st), (N, N, 0, 0, 0, 0), "inline: {st:?}");
}

/// A file evicted with `POSIX_FADV_DONTNEED` misses and is offloaded; the data is right.
#[test]
fn an_evicted_file_is_offloaded() {
    const SEED: u16 = 23;
    const SIZE: u64 = 4 << 20;
    let dir = tempdir();
    for mode in [FastReadMode::Always, FastReadMode::Tracked] {
        let pol = policy(mode);
        let mut q = Queue::new(Box::new(pool(mode)));

        // One read of a cold file: exactly one miss, one offload (engine totals the same).
        until_not_raced(&format!("{mode:?} one cold read"), |k| {
            let mut engine = pool(mode);
            let file = cold_file(dir.path(), &format!("one-{mode:?}-{k}"), SEED, SIZE);
            let one = [Read::new(1 << 20, &[1 << 20])];
            let got = read_through(Route::BatchPool, &file, &mut engine, &mut q, &pol, &one);
            assert_eq!(got[0].len(), 1 << 20);
            assert_pattern(&got[0], SEED, 1 << 20, "cold read");
            let st = file.fast_read_stats(&pol);
            assert_eq!(st.attempts, 1, "{st:?}");
            assert_eq!(st.offloads, st.misses + st.partials, "{st:?}");
            if st.misses == 0 {
                return None;
            }
            assert_eq!(
                (st.attempts, st.hits, st.misses, st.partials, st.offloads),
                (1, 0, 1, 0, 1),
                "{mode:?}: a cold read misses and is offloaded: {st:?}"
            );
            let t = engine.fast_read_totals();
            assert_eq!((t.attempts, t.misses, t.offloads), (1, 1, 1), "{t:?}");
            Some(())
        });

        // Many reads of a cold file in one batch, and through a queue: the data is right, and
        // what misses (or is served in part) is offloaded, exactly once.
        let reads: Vec<Read> = (0..8)
            .map(|i| Read::new(i * 512 * 1024 + 5, &[8000, 9000]))
            .collect();
        for p in [Route::BatchPool, Route::QueuePool] {
            until_not_raced(&format!("{mode:?} {p:?} cold reads"), |k| {
                let mut engine = pool(mode);
                let name = format!("many-{mode:?}-{p:?}-{k}");
                let file = cold_file(dir.path(), &name, SEED, SIZE);
                let got = read_through(p, &file, &mut engine, &mut q, &pol, &reads);
                for (r, d) in reads.iter().zip(&got) {
                    assert_eq!(d.len(), r.len());
                    assert_pattern(d, SEED, r.off, &format!("{mode:?} {p:?} cold read"));
                }
                let st = file.fast_read_stats(&pol);
                assert_eq!(st.attempts, reads.len() as u64, "{st:?}");
                assert_eq!(st.attempts, st.hits + st.partials + st.misses, "{st:?}");
                assert_eq!(st.offloads, st.misses + st.partials, "{st:?}");
                (st.misses >= 1).then_some(())
            });
        }

        // try_read_inline on a cold range says so; the data, read blocking, is right.
        until_not_raced(&format!("{mode:?} try_read_inline cold"), |k| {
            let file = cold_file(dir.path(), &format!("inline-{mode:?}-{k}"), SEED, SIZE);
            let mut buf = vec![0u8; 1 << 20];
            let a = file
                .try_read_inline(IoIter::read_into(&mut buf), 2 << 20, &pol)
                .unwrap();
            assert_eq!(file.read_at(&mut buf, 2 << 20).unwrap(), 1 << 20);
            assert_pattern(&buf, SEED, 2 << 20, "after an inline attempt");
            (a == Attempt::WouldBlock).then(|| {
                assert_eq!(file.fast_read_stats(&pol).misses, 1);
            })
        });
    }
}

// ---------------------------------------------------------------------------------------------
// EOPNOTSUPP: tmpfs
// ---------------------------------------------------------------------------------------------

fn tmpfs_dir() -> Option<tempfile::TempDir> {
    let shm = Path::new("/dev/shm");
    let st = rustix::fs::statfs(shm).ok()?;
    // TMPFS_MAGIC, compared as the kernel's 32-bit magic whatever the width of f_type.
    if st.f_type as u32 != 0x0102_1994 {
        return None;
    }
    tempfile::Builder::new()
        .prefix("vecio-fast-read-")
        .tempdir_in(shm)
        .ok()
}

/// tmpfs refuses `RWF_NOWAIT` reads with `EOPNOTSUPP`: the file is marked unsupported after
/// the first attempt, never tried again, and every read is still right (Always and Tracked).
#[test]
fn eopnotsupp_on_tmpfs_turns_the_attempt_off_for_that_file() {
    const SEED: u16 = 24;
    const SIZE: u64 = 100 * 1024 + 17;
    let Some(dir) = tmpfs_dir() else {
        println!("skipped: /dev/shm is not a writable tmpfs here");
        return;
    };
    let reads: Vec<Read> = (0..20)
        .map(|i| Read::new(i * 5000 + i, &[1000, 2000, 3000]))
        .chain([Read::new(SIZE - 10, &[4096])])
        .collect();
    for mode in MODES {
        let pol = policy(mode);
        let file = pattern_file(dir.path(), &format!("shm-{mode:?}"), SEED, SIZE);
        let mut engine = pool(mode);
        let mut q = Queue::new(Box::new(pool(mode)));
        let mut total = 0u64;
        for p in [Route::BatchPool, Route::QueuePool, Route::Inline] {
            let got = read_through(p, &file, &mut engine, &mut q, &pol, &reads);
            for (r, d) in reads.iter().zip(&got) {
                assert_eq!(d.len(), expected_len(SIZE, r.off, r.len()));
                assert_pattern(d, SEED, r.off, &format!("tmpfs {mode:?} {p:?}"));
            }
            total += reads.len() as u64;
            let st = file.fast_read_stats(&pol);
            if mode == FastReadMode::Off {
                assert_eq!(st.attempts, 0, "{st:?}");
                assert!(!st.unsupported, "Off never learns: {st:?}");
            } else {
                assert!(
                    st.unsupported,
                    "{mode:?} {p:?}: EOPNOTSUPP is remembered: {st:?}"
                );
                assert_eq!(
                    st.attempts, 1,
                    "{mode:?} {p:?}: only the first read is tried: {st:?}"
                );
                assert_eq!((st.hits, st.partials, st.misses), (0, 0, 0), "{st:?}");
            }
            if !matches!(p, Route::Inline) {
                // A read across end of file is resumed once (and finds end of file), so
                // it may go to the pool twice.
                let off = file.fast_read_stats(&pol).offloads;
                assert!(
                    off >= total,
                    "{mode:?} {p:?}: every engine read goes to the pool ({off} of {total})"
                );
            }
        }
        // The inline call reports a skip, never an error.
        let mut buf = vec![0u8; 4096];
        let a = file
            .try_read_inline(IoIter::read_into(&mut buf), 0, &pol)
            .unwrap();
        assert_eq!(a, Attempt::Skipped, "{mode:?}");
    }
}

// ---------------------------------------------------------------------------------------------
// Tracking: stop trying on cold files, come back on warm ones
// ---------------------------------------------------------------------------------------------

/// True when a read of a cold range was served inline (see [`until_not_raced`]).
fn raced(st: &FastReadStats) -> bool {
    st.hits > 0 || st.partials > 0
}

/// A file that keeps missing stops being tried (only one read in `reprobe_every` is probed),
/// and once it is warm, hits on probes bring every read back inline.
#[test]
fn tracking_stops_trying_a_cold_file_and_comes_back_when_it_is_warm() {
    const SEED: u16 = 25;
    const SLOT: u64 = 256 * 1024;
    const SLOTS: u64 = 48;
    const LEN: usize = 64 * 1024;
    const EVERY: u32 = 4;
    let pol = FastReadPolicy {
        mode: FastReadMode::Tracked,
        threshold: 0.5,
        decay: 0.25,
        reprobe_every: EVERY,
        writes: false,
    };
    let dir = tempdir();
    until_not_raced("tracking", |k| {
        // Every read goes to a slot no read has touched, made cold right before.
        let file = cold_file(dir.path(), &format!("tracked-{k}"), SEED, SLOT * SLOTS);
        let mut engine = pool_with(pol);
        let mut slot = 0u64;
        let mut cold_read = |engine: &mut PoolEngine| {
            slot += 1;
            assert!(slot < SLOTS, "test needs more slots");
            let off = slot * SLOT + 8192;
            make_cold(&file, off, LEN as u64);
            read_one(engine, &file, off, LEN, SEED);
        };

        // Cold reads until tracking turns off: each one tried, each a miss, each offloaded.
        let mut cold_reads = 0u64;
        while !file.fast_read_stats(&pol).tracking_off {
            cold_read(&mut engine);
            cold_reads += 1;
            let st = file.fast_read_stats(&pol);
            if raced(&st) {
                return None;
            }
            assert!(cold_reads <= 10, "tracking never turned off: {st:?}");
        }
        let st = file.fast_read_stats(&pol);
        assert_eq!(
            (st.attempts, st.misses, st.offloads, st.skipped),
            (cold_reads, cold_reads, cold_reads, 0),
            "every cold read tried, missed and offloaded: {st:?}"
        );
        assert!(cold_reads >= 2, "one miss is not enough to give up: {st:?}");

        // Still cold: only probes are tried; every read is offloaded.
        let before = file.fast_read_stats(&pol);
        let n = 4 * EVERY as u64;
        for _ in 0..n {
            cold_read(&mut engine);
        }
        let st = file.fast_read_stats(&pol);
        if raced(&st) {
            return None;
        }
        assert!(st.tracking_off, "{st:?}");
        let probes = n / EVERY as u64;
        assert_eq!(
            (
                st.attempts - before.attempts,
                st.misses - before.misses,
                st.skipped - before.skipped,
                st.offloads - before.offloads
            ),
            (probes, probes, n - probes, n),
            "one probe per reprobe_every reads, the rest skipped: {st:?}"
        );

        // Warm: hits on probes bring the file back.
        warm(&file);
        let mut warm_reads = 0u64;
        while file.fast_read_stats(&pol).tracking_off {
            warm_reads += 1;
            read_one(&mut engine, &file, warm_reads * SLOT, LEN, SEED);
            assert!(
                warm_reads <= 4 * EVERY as u64,
                "a warm file was not tried again: {:?}",
                file.fast_read_stats(&pol)
            );
        }
        let before = file.fast_read_stats(&pol);
        assert!(before.hits >= 1, "probes of a warm file hit: {before:?}");
        let n = 12u64;
        for i in 0..n {
            read_one(&mut engine, &file, i * SLOT + 100, LEN, SEED);
        }
        let st = file.fast_read_stats(&pol);
        assert!(!st.tracking_off, "{st:?}");
        assert_eq!(
            (
                st.attempts - before.attempts,
                st.hits - before.hits,
                st.skipped - before.skipped,
                st.offloads - before.offloads
            ),
            (n, n, 0, 0),
            "back on: every read tried and served inline: {st:?}"
        );
        Some(())
    });
}
