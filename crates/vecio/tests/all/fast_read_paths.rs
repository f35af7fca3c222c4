//! Fast reads through every path, on real files and the real page cache: a batch and a queue
//! over the pool engine and `File::try_read_inline` return exactly the file's bytes in every
//! fast-read mode and cache state, and direct (`O_DIRECT`) files never take the inline path.
//!
//! Cache states are set and checked with the helpers of `common::fast_read` (see its docs).

use crate::common;

use std::sync::Arc;
use std::time::Duration;

use common::fast_read::*;
use common::*;
use vecio::fast_read::{Attempt, FastReadMode};
use vecio::{AlignedBuf, Batch, File, IoIter, OwnedBuf, Queue, RwFlags};

#[derive(Copy, Clone, Debug)]
enum CacheState {
    Cached,
    Evicted,
    SecondHalfEvicted,
}

fn set_state(file: &File, state: CacheState) {
    let size = file.size().unwrap();
    match state {
        CacheState::Cached => warm(file),
        CacheState::Evicted => make_cold(file, 0, size),
        CacheState::SecondHalfEvicted => {
            let half = size / 2 / PAGE * PAGE;
            warm(file);
            for _ in 0..400 {
                fadvise_dontneed(file, half, 0);
                if resident_pages(file, half, size) == 0 {
                    break;
                }
                std::thread::sleep(Duration::from_millis(5));
            }
            assert_eq!(resident_pages(file, half, size), 0, "second half evicted");
            assert_eq!(
                resident_pages(file, 0, half),
                pages_in(file, 0, half),
                "first half still resident"
            );
        }
    }
}

/// Every path, every mode, every cache state returns exactly the file's bytes: single and
/// multi-segment reads, odd offsets and lengths, reads across the cached/evicted boundary,
/// across end of file, at and past end of file.
#[test]
fn every_path_returns_the_files_bytes_in_every_mode_and_cache_state() {
    const SEED: u16 = 21;
    const SIZE: u64 = 256 * 1024 + 1234;
    let dir = tempdir();
    let half = SIZE / 2 / PAGE * PAGE;
    let many: Vec<usize> = (0..40).map(|i| 512 + 37 * i).collect();
    let reads = vec![
        Read::new(0, &[16384]),
        Read::new(3 * PAGE + 100, &[1000, 3000, 5000, 7]),
        Read::new(half - 5000, &[4096, 4096, 4096]),
        Read::new(half + 1, &[8191]),
        Read::new(SIZE - 3000, &[2000, 4096]),
        Read::new(SIZE - 100, &[65536]),
        Read::new(SIZE, &[4096]),
        Read::new(SIZE + 5000, &[10, 20]),
        Read::new(0, &[SIZE as usize + 4096]),
        Read::new(777, &many),
        Read::new(64 * 1024, &[1, 4095, 1, 4096 * 4, 3]),
    ];
    for mode in MODES {
        let pol = policy(mode);
        let file = pattern_file(dir.path(), &format!("f-{mode:?}"), SEED, SIZE);
        let mut engine = pool(mode);
        let mut queue = Queue::new(Box::new(pool(mode)));
        for state in [
            CacheState::Cached,
            CacheState::Evicted,
            CacheState::SecondHalfEvicted,
        ] {
            for path in [Route::BatchPool, Route::QueuePool, Route::Inline] {
                set_state(&file, state);
                let got = read_through(path, &file, &mut engine, &mut queue, &pol, &reads);
                for (r, data) in reads.iter().zip(&got) {
                    let what = format!(
                        "{mode:?} {state:?} {path:?}: read of {} at {} in {} segments",
                        r.len(),
                        r.off,
                        r.segs.len()
                    );
                    assert_eq!(
                        data.len(),
                        expected_len(SIZE, r.off, r.len()),
                        "{what}: bytes"
                    );
                    assert_pattern(data, SEED, r.off, &what);
                }
            }
        }
        let st = file.fast_read_stats(&pol);
        if mode == FastReadMode::Off {
            assert_eq!(st.attempts, 0, "Off never tries inline: {st:?}");
            assert_eq!(engine.fast_read_totals().attempts, 0);
        } else {
            // Evicted state, first read of the batch: a miss for sure. Second half evicted:
            // the read across the boundary is served in part (Always keeps trying).
            assert!(st.misses >= 1, "{mode:?}: cold reads were tried: {st:?}");
            if mode == FastReadMode::Always {
                assert!(
                    st.partials >= 1,
                    "{mode:?}: half-cached reads were tried: {st:?}"
                );
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Direct files
// ---------------------------------------------------------------------------------------------

/// Direct (`O_DIRECT`) files are never tried inline: no attempt is counted on the file or the
/// engine, `try_read_inline` skips, and aligned and unaligned reads are right.
#[test]
fn direct_files_are_never_tried_inline() {
    const SEED: u16 = 28;
    const SIZE: usize = 256 * 1024;
    let dir = tempdir();
    let path = dir.path().join("direct");
    let file = Arc::new(open_direct(&path));
    let mut src = AlignedBuf::page_aligned(SIZE);
    fill(&mut src, SEED, 0);
    assert_eq!(file.write_at(&src, 0).unwrap(), SIZE);
    for mode in [FastReadMode::Always, FastReadMode::Tracked] {
        let pol = policy(mode);
        let mut engine = pool(mode);

        // Aligned reads into aligned buffers, and unaligned ones (bounce path).
        let mut a = AlignedBuf::page_aligned(65536);
        let mut b = vec![0u8; 10_000];
        let res = {
            let mut batch = Batch::new();
            batch.push(&file, 65536, IoIter::read_into(&mut a), RwFlags::empty());
            batch.push(&file, 1001, IoIter::read_into(&mut b), RwFlags::empty());
            batch.run(&mut engine)
        };
        assert_eq!(res[0].as_ref().ok(), Some(&65536));
        assert_eq!(res[1].as_ref().ok(), Some(&10_000));
        assert_pattern(&a, SEED, 65536, "direct aligned read");
        assert_pattern(&b, SEED, 1001, "direct unaligned read");

        let mut q = Queue::new(Box::new(pool(mode)));
        for i in 0..8u64 {
            let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(8192));
            q.push_read(&file, i * 8192, vec![buf], RwFlags::empty(), i)
                .map_err(|e| e.error)
                .unwrap();
        }
        q.submit_and_wait(8).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 8);
        for c in &done {
            assert_eq!(c.result.as_ref().ok(), Some(&8192));
            assert_pattern(
                c.bufs[0].as_slice(),
                SEED,
                c.user_data * 8192,
                "direct queued read",
            );
        }

        let mut c = AlignedBuf::page_aligned(4096);
        let at = file
            .try_read_inline(IoIter::read_into(&mut c), 0, &pol)
            .unwrap();
        assert_eq!(at, Attempt::Skipped, "{mode:?}");

        let st = file.fast_read_stats(&pol);
        assert_eq!(
            st.attempts, 0,
            "{mode:?}: a direct file is never tried: {st:?}"
        );
        assert_eq!(engine.fast_read_totals().attempts, 0, "{mode:?}");
    }
}
