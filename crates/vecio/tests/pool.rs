//! The thread-pool engine and the thread pool under it: shutdown with requests in flight,
//! failing requests, panicking jobs, back-pressure (`WhenFull::Wait` and `WhenFull::WouldBlock`),
//! and many cached reads per batch in every fast-read mode. Real files, real kernel.
//!
//! Three tests show library bugs (a full pool's refusal reads as `EIO`, not would-block; a
//! batch that meets a refusal reports writes it did run as failed); they fail until fixed.

mod common;

use std::collections::HashMap;
use std::io::IoSlice;
use std::os::fd::AsRawFd;
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use common::*;
use vecio::engine::{PoolEngine, PoolOptions};
use vecio::{
    AlignedBuf, Batch, Completion, Engine, Error, FastReadMode, FastReadPolicy, File, IoIter, Job,
    OwnedBuf, Queue, RwFlags, ThreadPool, WhenFull,
};

const MIB: usize = 1 << 20;

fn engine(threads: usize, depth: usize, when_full: WhenFull, mode: FastReadMode) -> PoolEngine {
    PoolEngine::new(PoolOptions {
        threads,
        depth,
        when_full,
        fast_read: FastReadPolicy::with_mode(mode),
    })
    .unwrap()
}

fn fsync(file: &File) {
    // SAFETY: fsync on an open descriptor.
    let r = unsafe { libc::fsync(file.as_raw_fd()) };
    assert_eq!(r, 0, "fsync: {}", std::io::Error::last_os_error());
}

fn evict(file: &File) {
    fsync(file);
    // SAFETY: posix_fadvise on an open descriptor; it only advises the kernel.
    let r = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise: errno {r}");
}

/// A buffered file of `size` bytes of the pattern of `seed`, flushed.
fn pattern_file(path: &Path, seed: u16, size: usize) -> Arc<File> {
    let file = open_buffered(path);
    assert_eq!(file.write_at(&pattern(seed, 0, size), 0).unwrap(), size);
    fsync(&file);
    Arc::new(file)
}

fn aligned(data: &[u8]) -> OwnedBuf {
    let mut b = AlignedBuf::page_aligned(data.len());
    b.copy_from_slice(data);
    OwnedBuf::Aligned(b)
}

/// Submits and reaps until `want` completions have been collected into `out` (bounded).
fn reap_until(q: &mut Queue, out: &mut Vec<Completion>, want: usize) {
    let mut rounds = 0;
    while out.len() < want {
        q.submit_and_wait(1).unwrap();
        q.reap(out);
        rounds += 1;
        assert!(
            rounds < 100_000,
            "only {} of {want} completions arrive",
            out.len()
        );
    }
}

/// Asserts each of `tags` appears exactly once among `done`'s user_data, and nothing else does.
#[track_caller]
fn assert_each_once(done: &[Completion], tags: impl IntoIterator<Item = u64>) {
    let mut seen: HashMap<u64, usize> = HashMap::new();
    for c in done {
        *seen.entry(c.user_data).or_default() += 1;
    }
    let mut want = 0;
    for t in tags {
        want += 1;
        assert_eq!(
            seen.get(&t),
            Some(&1),
            "completion {t}: seen {:?} times",
            seen.get(&t)
        );
    }
    assert_eq!(done.len(), want, "no completion without a request");
}

// ---------------------------------------------------------------------------------------------
// Shutdown with requests in flight
// ---------------------------------------------------------------------------------------------

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
                .map_err(|(e, _)| e)
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
                    .map_err(|(e, _)| e)
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
                    .map_err(|(e, _)| e)
                    .unwrap();
            }
            if i < R {
                let bufs = vec![OwnedBuf::Vec(vec![0xEE; RLEN])];
                q.push_read(&rfile, roff(i), bufs, RwFlags::empty(), 1000 + i)
                    .map_err(|(e, _)| e)
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
                .map_err(|(e, _)| e)
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

// ---------------------------------------------------------------------------------------------
// Failing requests
// ---------------------------------------------------------------------------------------------

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
        pushed.map_err(|(e, _)| e).unwrap();
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
        .map_err(|(e, _)| e)
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

// ---------------------------------------------------------------------------------------------
// ThreadPool
// ---------------------------------------------------------------------------------------------

fn counting_job(n: &Arc<AtomicUsize>, tx: &mpsc::Sender<()>) -> Job {
    let (n, tx) = (n.clone(), tx.clone());
    Box::new(move || {
        n.fetch_add(1, Ordering::SeqCst);
        let _ = tx.send(());
    })
}

/// A job that says it started, then holds its worker until `release` is dropped or sent to.
fn holding_job() -> (Job, mpsc::Receiver<()>, mpsc::Sender<()>) {
    let (started_tx, started_rx) = mpsc::channel();
    let (release_tx, release_rx) = mpsc::channel::<()>();
    let job: Job = Box::new(move || {
        let _ = started_tx.send(());
        let _ = release_rx.recv();
    });
    (job, started_rx, release_tx)
}

/// A job that panics does not take its worker down: with one worker, the jobs after it (and
/// after a second panic) all run, and the pool still shuts down.
#[test]
fn a_panicking_job_does_not_take_its_worker_down() {
    with_timeout(30, "panicking jobs", || {
        let pool = ThreadPool::new(1, 32, WhenFull::Wait).unwrap();
        assert_eq!(pool.threads(), 1);
        let n = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        pool.execute(Box::new(|| panic!("a pool job panics on purpose (test)")))
            .ok()
            .unwrap();
        for i in 0..10 {
            if i == 5 {
                pool.execute(Box::new(|| panic!("a second panic on purpose (test)")))
                    .ok()
                    .unwrap();
            }
            pool.execute(counting_job(&n, &tx)).ok().unwrap();
        }
        for i in 0..10 {
            rx.recv_timeout(Duration::from_secs(10))
                .unwrap_or_else(|_| panic!("job {i} after a panic never ran"));
        }
        assert_eq!(n.load(Ordering::SeqCst), 10);
        drop(pool);
    });
}

/// `WhenFull::WouldBlock`: with the worker busy and the queue full, `execute` hands the job
/// back at once (intact: it runs when called), and takes jobs again once there is room.
#[test]
fn would_block_hands_jobs_back_when_full_and_never_blocks() {
    with_timeout(30, "WhenFull::WouldBlock", || {
        let pool = ThreadPool::new(1, 2, WhenFull::WouldBlock).unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let (hold, started, release) = holding_job();
        pool.execute(hold).ok().unwrap();
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        // The worker is held: two jobs fill the queue, the rest come back.
        pool.execute(counting_job(&n, &tx)).ok().unwrap();
        pool.execute(counting_job(&n, &tx)).ok().unwrap();
        for _ in 0..5 {
            let back = pool
                .execute(counting_job(&n, &tx))
                .expect_err("a full queue hands the job back");
            back(); // the job is whole: running it counts
        }
        assert_eq!(
            n.load(Ordering::SeqCst),
            5,
            "only the handed-back jobs ran so far"
        );
        drop(release);
        for _ in 0..7 {
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        assert_eq!(n.load(Ordering::SeqCst), 7);
        // Room again.
        pool.execute(counting_job(&n, &tx)).ok().unwrap();
        rx.recv_timeout(Duration::from_secs(10)).unwrap();
        assert_eq!(n.load(Ordering::SeqCst), 8);
    });
}

/// `WhenFull::Wait`: with the worker busy and the queue full, `execute` blocks until there is
/// room, then queues the job, which runs.
#[test]
fn wait_blocks_until_there_is_room() {
    with_timeout(30, "WhenFull::Wait", || {
        let pool = Arc::new(ThreadPool::new(1, 1, WhenFull::Wait).unwrap());
        let n = Arc::new(AtomicUsize::new(0));
        let (tx, rx) = mpsc::channel();
        let (hold, started, release) = holding_job();
        pool.execute(hold).ok().unwrap();
        started.recv_timeout(Duration::from_secs(10)).unwrap();
        pool.execute(counting_job(&n, &tx)).ok().unwrap(); // fills the queue
        let (returned_tx, returned_rx) = mpsc::channel();
        let job = counting_job(&n, &tx);
        let p = pool.clone();
        let pusher = std::thread::spawn(move || {
            let r = p.execute(job).is_ok();
            let _ = returned_tx.send(r);
        });
        assert!(
            returned_rx
                .recv_timeout(Duration::from_millis(300))
                .is_err(),
            "execute returned although the queue was full"
        );
        assert_eq!(n.load(Ordering::SeqCst), 0);
        drop(release);
        assert_eq!(
            returned_rx.recv_timeout(Duration::from_secs(10)),
            Ok(true),
            "execute returns once there is room, with the job queued"
        );
        pusher.join().unwrap();
        for _ in 0..2 {
            rx.recv_timeout(Duration::from_secs(10)).unwrap();
        }
        assert_eq!(n.load(Ordering::SeqCst), 2);
    });
}

/// Dropping the pool runs every job already queued, then returns.
#[test]
fn dropping_the_pool_runs_every_queued_job() {
    with_timeout(30, "pool drop", || {
        let pool = ThreadPool::new(2, 64, WhenFull::Wait).unwrap();
        let n = Arc::new(AtomicUsize::new(0));
        for _ in 0..40 {
            let n = n.clone();
            pool.execute(Box::new(move || {
                std::thread::sleep(Duration::from_millis(1));
                n.fetch_add(1, Ordering::SeqCst);
            }))
            .ok()
            .unwrap();
        }
        drop(pool);
        assert_eq!(n.load(Ordering::SeqCst), 40);
    });
}

// ---------------------------------------------------------------------------------------------
// Back-pressure through the engine
// ---------------------------------------------------------------------------------------------

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
            Err((e, bufs)) => return (e, bufs, i),
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
                    Err((_, back)) => {
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

// ---------------------------------------------------------------------------------------------
// Many cached reads
// ---------------------------------------------------------------------------------------------

/// A batch of 64 cached 16 KiB reads (scrambled order, half of them in 3 segments) through the
/// pool engine is right in every fast-read mode; inline modes serve them all inline.
#[test]
fn a_batch_of_cached_reads_is_right_in_every_mode() {
    const SEED: u16 = 47;
    const N: usize = 64;
    const LEN: usize = 16 * 1024;
    let dir = tempdir();
    let path = dir.path().join("cached");
    drop(pattern_file(&path, SEED, N * LEN + 5000));
    for mode in [
        FastReadMode::Off,
        FastReadMode::Always,
        FastReadMode::Tracked,
    ] {
        let file = File::options()
            .direct(vecio::Direct::Off)
            .open(&path)
            .unwrap();
        let mut warmup = vec![0u8; N * LEN + 5000];
        file.read_at(&mut warmup, 0).unwrap();
        let mut eng = engine(2, 128, WhenFull::Wait, mode);
        let order = Rng::new(mode as u64 + 1).permutation(N);
        let mut bufs = vec![vec![0xEEu8; LEN]; N];
        let res = {
            let mut slices: Vec<Vec<std::io::IoSliceMut<'_>>> = bufs
                .iter_mut()
                .enumerate()
                .map(|(i, b)| {
                    let sizes: &[usize] = if i % 2 == 0 {
                        &[LEN]
                    } else {
                        &[1, LEN - 4097, 4096]
                    };
                    split_mut(b, sizes)
                        .into_iter()
                        .map(std::io::IoSliceMut::new)
                        .collect()
                })
                .collect();
            let mut b = Batch::new();
            let mut slots: Vec<Option<&mut Vec<std::io::IoSliceMut<'_>>>> =
                slices.iter_mut().map(Some).collect();
            for &i in &order {
                let s = slots[i].take().unwrap();
                b.push(
                    &file,
                    (i * LEN) as u64 + 3,
                    IoIter::readv_into(s),
                    RwFlags::empty(),
                );
            }
            b.run(&mut eng)
        };
        for (k, r) in res.iter().enumerate() {
            assert_eq!(r.as_ref().ok(), Some(&LEN), "{mode:?} request {k}");
        }
        for (i, b) in bufs.iter().enumerate() {
            assert_pattern(b, SEED, (i * LEN) as u64 + 3, &format!("{mode:?} read {i}"));
        }
        let pol = FastReadPolicy::with_mode(mode);
        let st = file.fast_read_stats(&pol);
        if mode == FastReadMode::Off {
            assert_eq!((st.attempts, st.offloads), (0, N as u64), "{st:?}");
        } else {
            assert_eq!(
                (st.attempts, st.hits, st.offloads),
                (N as u64, N as u64, 0),
                "{mode:?}: {st:?}"
            );
        }
    }
}
