//! `RWF_NOWAIT` with the fast-read policy, on real files: writes tried with `RWF_NOWAIT` fall
//! back to the pool and write the right data, and a caller's own `RWF_NOWAIT` is kept, never
//! turned into a blocking read or write.

use crate::common;

use std::sync::Arc;

use common::fast_read::*;
use common::*;
use vecio::fast_read::FastReadMode;
use vecio::{Batch, Engine, FastReadPolicy, IoIter, OwnedBuf, Queue, RwFlags};

/// With `writes: true`, writes are tried with `RWF_NOWAIT`; ext4 refuses buffered NOWAIT
/// writes (`EOPNOTSUPP`), which falls back to the pool, at most once per file. The data is
/// right in every mode, through a batch and a queue.
#[test]
fn nowait_writes_fall_back_and_write_the_right_data() {
    const SEED: u16 = 26;
    let dir = tempdir();
    for mode in MODES {
        let pol = FastReadPolicy {
            writes: true,
            ..policy(mode)
        };
        // Batch: 8 multi-segment writes at odd offsets.
        let path = dir.path().join(format!("w-batch-{mode:?}"));
        let file = open_buffered(&path);
        let mut engine = pool_with(pol);
        let total = 8 * 20_000usize;
        let src = pattern(SEED, 0, total);
        let res = {
            let segs: Vec<Vec<std::io::IoSlice<'_>>> = (0..8)
                .map(|i| {
                    split(&src[i * 20_000..(i + 1) * 20_000], &[1, 4095, 9000, 6904])
                        .into_iter()
                        .map(std::io::IoSlice::new)
                        .collect()
                })
                .collect();
            let mut batch = Batch::new();
            for (i, s) in segs.iter().enumerate() {
                batch.push(
                    &file,
                    (i * 20_000) as u64,
                    IoIter::writev_from(s),
                    RwFlags::empty(),
                );
            }
            batch.run(&mut engine)
        };
        for (i, r) in res.iter().enumerate() {
            assert_eq!(r.as_ref().ok(), Some(&20_000), "{mode:?} write {i}: {r:?}");
        }
        let sys = engine.counters().syscalls;
        if mode == FastReadMode::Off {
            assert_eq!(sys, 8, "Off never tries writes inline");
        } else {
            assert!(
                sys <= 8 + 1,
                "{mode:?}: a refused NOWAIT write is tried at most once per file ({sys} calls)"
            );
        }
        assert_same(&read_all(&path), &src, 0, &format!("{mode:?} batch writes"));

        // Queue: 16 writes, single and multi-buffer, then read back through the same queue.
        let path = dir.path().join(format!("w-queue-{mode:?}"));
        let file = Arc::new(open_buffered(&path));
        let mut q = Queue::new(Box::new(pool_with(pol)));
        for i in 0..16u64 {
            let data = pattern(SEED + 1, i * 5000, 5000);
            let bufs = if i % 2 == 0 {
                vec![OwnedBuf::Vec(data)]
            } else {
                vec![
                    OwnedBuf::Vec(data[..1234].to_vec()),
                    OwnedBuf::Vec(data[1234..].to_vec()),
                ]
            };
            q.push_write(&file, i * 5000, bufs, RwFlags::empty(), i)
                .map_err(|e| e.error)
                .unwrap();
        }
        q.submit_and_wait(16).unwrap();
        let mut done = Vec::new();
        q.reap(&mut done);
        assert_eq!(done.len(), 16);
        for c in &done {
            assert_eq!(c.result.as_ref().ok(), Some(&5000), "{mode:?} queued write");
        }
        assert_same(
            &read_all(&path),
            &pattern(SEED + 1, 0, 16 * 5000),
            0,
            &format!("{mode:?} queued writes"),
        );
    }
}

/// A read the caller marks `RWF_NOWAIT` is not turned into a blocking read: on a cold file it
/// fails with `EAGAIN` (through a queue and through a batch); on a warm one it succeeds.
/// A caller's `RWF_NOWAIT` write on ext4 is refused, not silently made blocking.
#[test]
fn a_callers_nowait_is_kept() {
    const SEED: u16 = 27;
    const SIZE: u64 = 1 << 20;
    let dir = tempdir();
    for mode in MODES {
        let mut q = Queue::new(Box::new(pool(mode)));
        let mut engine = pool(mode);

        until_not_raced(&format!("{mode:?} queued NOWAIT read"), |k| {
            let file = cold_file(dir.path(), &format!("nw-q-{mode:?}-{k}"), SEED, SIZE);
            match queue_read(&mut q, &file, 4096, 65536, RwFlags::NOWAIT) {
                (Err(e), _) => {
                    assert!(e.is_would_block(), "{mode:?}: queue: {e}");
                    Some(())
                }
                (Ok(n), data) => {
                    // Served by the readahead the attempt itself started: must be right.
                    assert!(n > 0 && n <= 65536);
                    assert_pattern(&data[..n], SEED, 4096, "raced NOWAIT read");
                    None
                }
            }
        });

        let file = until_not_raced(&format!("{mode:?} batched NOWAIT read"), |k| {
            let file = cold_file(dir.path(), &format!("nw-b-{mode:?}-{k}"), SEED, SIZE);
            let mut buf = vec![0u8; 65536];
            let r = {
                let mut batch = Batch::new();
                batch.push(&file, 65536, IoIter::read_into(&mut buf), RwFlags::NOWAIT);
                batch.run(&mut engine).pop().unwrap()
            };
            match r {
                Err(e) => {
                    assert!(e.is_would_block(), "{mode:?}: batch: {e}");
                    Some(file)
                }
                Ok(n) => {
                    assert!(n > 0 && n <= 65536);
                    assert_pattern(&buf[..n], SEED, 65536, "raced NOWAIT read");
                    None
                }
            }
        });

        warm(&file);
        let (r, data) = queue_read(&mut q, &file, 4096, 8192, RwFlags::NOWAIT);
        assert_eq!(r.unwrap(), 8192);
        assert_pattern(&data, SEED, 4096, "warm NOWAIT read");
    }

    let wfile = Arc::new(open_buffered(&dir.path().join("nw-write")));
    let mut q = Queue::new(Box::new(pool_with(FastReadPolicy {
        writes: true,
        ..policy(FastReadMode::Always)
    })));
    q.push_write(
        &wfile,
        0,
        vec![OwnedBuf::Vec(pattern(SEED, 0, 4096))],
        RwFlags::NOWAIT,
        1,
    )
    .map_err(|e| e.error)
    .unwrap();
    q.submit_and_wait(1).unwrap();
    let mut done = Vec::new();
    q.reap(&mut done);
    match &done[0].result {
        Ok(n) => {
            // A kernel that takes buffered NOWAIT writes on ext4: then the data must be there.
            assert_eq!(*n, 4096);
            assert_same(
                &read_all(wfile.path()),
                &pattern(SEED, 0, 4096),
                0,
                "NOWAIT write",
            );
        }
        Err(e) => assert!(
            e.raw_os_error() == Some(libc::EOPNOTSUPP) || e.is_would_block(),
            "a refused caller NOWAIT write is reported as such: {e}"
        ),
    }
}
