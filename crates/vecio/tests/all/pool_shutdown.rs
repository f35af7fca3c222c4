//! The thread-pool engine under a queue with requests in flight: dropping the queue waits for
//! every request (each buffer stays valid until its request is done), and every completion is
//! reaped exactly once, with the right bytes and its buffers back. Real files, real kernel.

use crate::common;

use std::os::fd::AsRawFd;
use std::sync::Arc;

use common::pool::*;
use common::*;
use vecio::engine::WhenFull;
use vecio::fast_read::FastReadMode;
use vecio::{AlignedBuf, Completion, File, OwnedBuf, Queue, RwFlags};

fn evict(file: &File) {
    fsync(file);
    // SAFETY: posix_fadvise on an open descriptor; it only advises the kernel.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise: errno {r}");
}

fn aligned(data: &[u8]) -> OwnedBuf {
    let mut b = AlignedBuf::page_aligned(data.len());
    b.copy_from_slice(data);
    OwnedBuf::Aligned(b)
}

/// 64 x 1 MiB `RWF_DSYNC` writes (and 1 MiB reads of a cold file) pushed through a queue over a
/// pool engine of 1-2 threads, then the queue is dropped at once: the drop returns, waiting
/// for every request, and the file holds exactly every request's data (so every buffer stayed
/// valid until its request was done). Buffered and direct files, a queue that makes pushes
/// wait and one that never fills.
#[test]
fn dropping_a_queue_with_requests_in_flight_waits_for_every_one() {
    with_timeout(120, "drop with requests in flight", || {
        const SEED: u16 = 41;
        const N: usize = 64;
        for (threads, depth, direct) in [(1, 2, false), (2, 256, true)] {
            let dir = tempdir();
            let wpath = dir.path().join("w");
            let wfile = Arc::new(if direct {
                open_direct(&wpath)
            } else {
                open_buffered(&wpath)
            });
            let rfile = pattern_file(&dir.path().join("r"), SEED + 1, 16 * MIB);
            evict(&rfile);
            let mut q = Queue::new(Box::new(engine(
                threads,
                depth,
                WhenFull::Wait,
                FastReadMode::Tracked,
            )));
            for i in 0..N {
                let data = pattern(SEED, (i * MIB) as u64, MIB);
                q.push_write(
                    &wfile,
                    (i * MIB) as u64,
                    vec![aligned(&data)],
                    RwFlags::DSYNC,
                    i as u64,
                )
                .map_err(|e| e.error)
                .unwrap();
                if i % 4 == 0 {
                    let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(MIB));
                    q.push_read(
                        &rfile,
                        (i / 4 * MIB) as u64,
                        vec![buf],
                        RwFlags::empty(),
                        1000 + i as u64,
                    )
                    .map_err(|e| e.error)
                    .unwrap();
                }
            }
            q.submit().unwrap();
            let pending = q.engine_mut().in_flight();
            assert!(pending > 0, "requests pushed and not reaped at the drop");
            drop(q);
            assert_eq!(wfile.size().unwrap(), (N * MIB) as u64, "direct {direct}");
            let got = read_all(&wpath);
            assert_same(
                &got,
                &pattern(SEED, 0, N * MIB),
                0,
                &format!("{threads} threads, depth {depth}, direct {direct}: file after drop"),
            );
        }
    });
}

/// Writes and reads (warm, cold, across end of file) pushed in waves and reaped a few at a
/// time: every request completes exactly once, with the right bytes and its buffers back.
#[test]
fn every_completion_is_reaped_exactly_once() {
    with_timeout(120, "reap everything", || {
        const SEED: u16 = 42;
        const W: u64 = 48;
        const R: u64 = 64;
        const WLEN: usize = 256 * 1024;
        const RLEN: usize = 64 * 1024;
        const RSIZE: usize = 4 * MIB + 1000;
        let dir = tempdir();
        let wpath = dir.path().join("w");
        let wfile = Arc::new(open_buffered(&wpath));
        let rfile = pattern_file(&dir.path().join("r"), SEED + 1, RSIZE);
        evict(&rfile);
        // Warm the first half.
        let mut half = vec![0u8; RSIZE / 2];
        rfile.read_at(&mut half, 0).unwrap();

        let mut q = Queue::new(Box::new(engine(
            2,
            8,
            WhenFull::Wait,
            FastReadMode::Tracked,
        )));
        let mut done: Vec<Completion> = Vec::new();
        let roff = |j: u64| (j * RLEN as u64 + j * 7) % (RSIZE as u64 - 2000);
        for i in 0..W.max(R) {
            if i < W {
                let data = pattern(SEED, i * WLEN as u64, WLEN);
                let bufs = vec![
                    OwnedBuf::Vec(data[..1000].to_vec()),
                    OwnedBuf::Vec(data[1000..].to_vec()),
                ];
                q.push_write(&wfile, i * WLEN as u64, bufs, RwFlags::DSYNC, i)
                    .map_err(|e| e.error)
                    .unwrap();
            }
            if i < R {
                let bufs = vec![OwnedBuf::Vec(vec![0xEE; RLEN])];
                q.push_read(&rfile, roff(i), bufs, RwFlags::empty(), 1000 + i)
                    .map_err(|e| e.error)
                    .unwrap();
            }
            if i % 10 == 9 {
                q.submit_and_wait(1).unwrap();
                q.reap(&mut done);
            }
        }
        // Two reads across end of file.
        for (k, off) in [(0u64, RSIZE as u64 - 100), (1, RSIZE as u64 + 10)] {
            let bufs = vec![OwnedBuf::Vec(vec![0; 4096]), OwnedBuf::Vec(vec![0; 10])];
            q.push_read(&rfile, off, bufs, RwFlags::empty(), 5000 + k)
                .map_err(|e| e.error)
                .unwrap();
        }
        let total = (W + R + 2) as usize;
        reap_until(&mut q, &mut done, total);
        assert!(q.is_empty(), "nothing left after every completion");
        assert_eq!(q.engine_mut().in_flight(), 0);
        q.submit_and_wait(1).unwrap();
        let mut extra = Vec::new();
        q.reap(&mut extra);
        assert!(extra.is_empty(), "no completion twice");

        assert_each_once(&done, (0..W).chain(1000..1000 + R).chain([5000, 5001]));
        for c in &done {
            let n = c
                .result
                .as_ref()
                .unwrap_or_else(|e| panic!("request {}: {e}", c.user_data));
            let flat: Vec<u8> = c.bufs.iter().flat_map(|b| b.as_slice().to_vec()).collect();
            match c.user_data {
                i if i < W => {
                    assert_eq!(*n, WLEN, "write {i}");
                    assert_same(
                        &flat,
                        &pattern(SEED, i * WLEN as u64, WLEN),
                        0,
                        "write buffers come back",
                    );
                }
                5000 => {
                    assert_eq!(*n, 100);
                    assert_pattern(
                        &flat[..100],
                        SEED + 1,
                        RSIZE as u64 - 100,
                        "read across end of file",
                    );
                }
                5001 => assert_eq!(*n, 0, "read past end of file"),
                t => {
                    let j = t - 1000;
                    assert_eq!(*n, RLEN, "read {j}");
                    assert_pattern(&flat, SEED + 1, roff(j), &format!("read {j}"));
                }
            }
        }
        assert_same(
            &read_all(&wpath),
            &pattern(SEED, 0, W as usize * WLEN),
            0,
            "written file",
        );
    });
}
