//! Fast-read regressions, on real files and the real page cache: library bugs the fast-read
//! tests found, one test each (its doc names the defect): a cached read that ends at end of
//! file counted as partial (pool engine and `try_read_inline`), a refused caller flag turning
//! fast reads off for the file, and skipped reads missing from the engine's totals.

use crate::common;

use common::fast_read::*;
use common::*;
use vecio::fast_read::{Attempt, FastReadMode};
use vecio::{Batch, FastReadPolicy, IoIter, Queue, RwFlags};

/// A warm small file read with a buffer larger than the file (FUSE and NBD servers read with
/// 128 KiB buffers) is all in the page cache: the docs say such a read is a hit ("or the read
/// ended at end of file"), served inline. The pool engine counts it a *partial* and offloads
/// the empty remainder to a worker (a thread hop and a system call for nothing, on every
/// read). (Batch then resumes the short read once, finding end of file; that round is its own
/// business and is a hit either way.)
#[test]
fn a_warm_read_ending_at_end_of_file_is_a_hit_in_the_pool_engine() {
    const SEED: u16 = 29;
    const SIZE: u64 = 1000;
    const N: u64 = 64;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "small", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut engine = pool(FastReadMode::Tracked);
    for _ in 0..N {
        let mut buf = vec![0u8; 65536];
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::empty());
        assert_eq!(
            batch.run(&mut engine).pop().unwrap().unwrap(),
            SIZE as usize
        );
        assert_pattern(&buf[..SIZE as usize], SEED, 0, "small file");
    }
    let st = file.fast_read_stats(&pol);
    assert!(
        st.hits >= N && st.attempts == st.hits && st.offloads == 0 && !st.tracking_off,
        "a fully cached read that ends at end of file must be a hit served inline; \
         got {st:?} (engine/pool.rs try_inline counts 0 < r < op.len as Partial and offloads)"
    );
}

/// The same through `File::try_read_inline`: `Attempt::Done` is documented as "served whole
/// (or up to end of file)", but a cached read across end of file comes back `Partial`, so the
/// caller offloads a remainder that does not exist, and each such read counts as a partial of
/// a small fraction: a server reading a small, fully cached file with large buffers sees its
/// hit ratio fall until tracking turns the fast path off.
#[test]
fn try_read_inline_across_end_of_file_is_done() {
    const SEED: u16 = 30;
    const SIZE: u64 = 10_000;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "eof", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut buf = vec![0u8; 8192];
    let a = file
        .try_read_inline(IoIter::read_into(&mut buf), SIZE - 1000, &pol)
        .unwrap();
    assert_pattern(&buf[..1000], SEED, SIZE - 1000, "eof read");
    // A small file read whole with a large buffer, as a file server does, 64 times.
    let mut skipped_or_partial = 0;
    for _ in 0..64 {
        let mut big = vec![0u8; 131072];
        match file
            .try_read_inline(IoIter::read_into(&mut big), 0, &pol)
            .unwrap()
        {
            Attempt::Done(n) => assert_eq!(n, SIZE as usize),
            _ => skipped_or_partial += 1,
        }
    }
    let st = file.fast_read_stats(&pol);
    assert_eq!(
        (a, skipped_or_partial, st.hits, st.partials, st.tracking_off),
        (Attempt::Done(1000), 0, 65, 0, false),
        "a cached read across end of file is done, not partial: {st:?} \
         (fastread.rs try_read_inline treats only n == 0 as end of file)"
    );
}

/// A request whose *own* flags the kernel refuses (`EOPNOTSUPP` for an unknown bit; likewise
/// `RWF_DONTCACHE` on a file system without it) fails, as it should. But the pool engine's
/// `RWF_NOWAIT` attempt carries the caller's flags, gets the same `EOPNOTSUPP`, and takes it
/// to mean "this file refuses NOWAIT": fast reads are turned off for the file for good,
/// although ext4 serves NOWAIT reads.
#[test]
fn a_refused_caller_flag_does_not_turn_fast_reads_off() {
    const SEED: u16 = 31;
    const SIZE: u64 = 64 * 1024;
    let dir = tempdir();
    let file = pattern_file(dir.path(), "flags", SEED, SIZE);
    warm(&file);
    let pol = policy(FastReadMode::Tracked);
    let mut q = Queue::new(Box::new(pool(FastReadMode::Tracked)));
    let bad = RwFlags::from_bits_retain(0x1000);
    let (r, _) = queue_read(&mut q, &file, 0, 4096, bad);
    let e = r.expect_err("an unknown RWF bit is refused by the kernel");
    assert_eq!(e.raw_os_error(), Some(libc::EOPNOTSUPP), "{e}");

    for i in 0..8u64 {
        let (r, data) = queue_read(&mut q, &file, i * 4096, 4096, RwFlags::empty());
        assert_eq!(r.unwrap(), 4096);
        assert_pattern(&data, SEED, i * 4096, "read after a refused flag");
    }
    let st = file.fast_read_stats(&pol);
    assert!(
        !st.unsupported && st.hits == 8,
        "ext4 serves NOWAIT reads; one request's bad flag must not turn fast reads off for \
         the file: {st:?} (engine/pool.rs try_inline records Outcome::Unsupported for any \
         EOPNOTSUPP, even when the caller's other flags caused it)"
    );
}

/// `PoolEngine::fast_read_totals` is documented as the counters "over every file this engine
/// served", but reads skipped because a file's hit ratio is low are counted on the file only:
/// the engine's `skipped` stays 0.
#[test]
fn engine_totals_count_skipped_reads() {
    const SEED: u16 = 32;
    const SLOT: u64 = 256 * 1024;
    let pol = FastReadPolicy {
        mode: FastReadMode::Tracked,
        threshold: 0.5,
        decay: 0.5,
        reprobe_every: 1000,
        writes: false,
    };
    let dir = tempdir();
    let file = cold_file(dir.path(), "totals", SEED, 32 * SLOT);
    let mut engine = pool_with(pol);
    let mut i = 0u64;
    while !file.fast_read_stats(&pol).tracking_off {
        i += 1;
        assert!(i < 24, "tracking never turned off");
        make_cold(&file, i * SLOT, 4096);
        read_one(&mut engine, &file, i * SLOT, 4096, SEED);
    }
    for j in 0..4 {
        read_one(&mut engine, &file, (i + 1 + j) * SLOT, 4096, SEED);
    }
    let st = file.fast_read_stats(&pol);
    let t = engine.fast_read_totals();
    assert_eq!(st.skipped, 4, "{st:?}");
    assert_eq!(
        counters(&t),
        counters(&st),
        "one file served: the engine totals equal its counters (skipped included); \
         totals {t:?}, file {st:?} (FastReadState::should_try counts skipped on the file \
         only; engine/pool.rs try_inline never adds it to the totals)"
    );
}
