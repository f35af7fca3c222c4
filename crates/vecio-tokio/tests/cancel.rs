//! Cancellation: 10,000 reads and writes dropped while in flight. The kernel never writes into
//! a freed buffer (the queue owns each buffer until its completion), every region of the file
//! holds either its old or its new bytes, the process's resident memory comes back, and the
//! driver's thread ends once the last handle is gone and the queue has drained. One test in
//! its own binary, so the thread count is its own.

use std::future::Future;
use std::sync::Arc;
use std::task::{Context, Poll, Wake, Waker};
use std::time::Duration;

use vecio::Direct;
use vecio_tokio::fs::OpenOptions;
use vecio_tokio::Driver;

const REGION: usize = 128 << 10; // above the mmap threshold set below: freeing returns it
const REGIONS: u64 = 256;
const ROUNDS: u64 = 20;
const PER_ROUND: u64 = 500;

struct Noop;
impl Wake for Noop {
    fn wake(self: Arc<Self>) {}
}

/// Polls `f` once (so its request is pushed), then drops it.
fn start_and_drop<F: Future>(f: F) -> bool {
    let waker = Waker::from(Arc::new(Noop));
    let mut cx = Context::from_waker(&waker);
    let mut f = std::pin::pin!(f);
    matches!(f.as_mut().poll(&mut cx), Poll::Pending)
}

fn io_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .flatten()
        .filter(|t| {
            std::fs::read_to_string(t.path().join("comm"))
                .is_ok_and(|c| c.trim() == "vecio-tokio-io")
        })
        .count()
}

fn byte(region: u64, version: u8) -> u8 {
    (region as u8).wrapping_mul(31) ^ version
}

#[test]
fn ten_thousand_dropped_futures_leave_nothing_behind() {
    // A fixed mmap threshold: glibc otherwise raises it to 128 KiB after the first such buffer
    // is freed, and later buffers come from the threads' heaps, where what a busy machine's
    // larger backlog left behind stays resident though free (the test failed so under load).
    // SAFETY: mallopt only changes the allocator's tuning; called before any threads here.
    assert_eq!(
        unsafe { libc::mallopt(libc::M_MMAP_THRESHOLD, 64 << 10) },
        1
    );
    let dir = tempfile::Builder::new()
        .prefix("vecio-tokio-cancel-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let path = dir.path().join("data");
    let mut old = Vec::with_capacity(REGION * REGIONS as usize);
    for r in 0..REGIONS {
        old.extend(std::iter::repeat_n(byte(r, 0), REGION));
    }
    std::fs::write(&path, &old).unwrap();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let threads_before = io_threads();
    // SAFETY: as below.
    unsafe { libc::malloc_trim(0) };
    let rss_before =
        vecio_testkit::rss_kib(std::process::id()).saturating_sub(old.len() as u64 / 1024);
    let mut pending = 0;
    rt.block_on(async {
        let driver = Driver::uring().unwrap();
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .direct(Direct::Auto) // every request goes to the engine
            .driver(driver)
            .open(&path)
            .await
            .unwrap();
        let io = file.positional().unwrap().clone();
        for round in 0..ROUNDS {
            for i in 0..PER_ROUND {
                let region = (round * PER_ROUND + i) % REGIONS;
                let at = region * REGION as u64 + (i % 3) * 512; // aligned and not
                let started = if i % 2 == 0 {
                    start_and_drop(io.read_at(vec![0u8; REGION], at))
                } else {
                    let data = vec![byte(region, 1); REGION];
                    start_and_drop(io.write_all_at(data, region * REGION as u64))
                };
                pending += started as usize;
            }
            tokio::task::yield_now().await;
        }
        assert!(
            pending > 0,
            "every request finished before its future was dropped"
        );
    });
    drop(rt);
    // The driver's thread ends once its queue has drained and no handle is left.
    let ended =
        vecio_testkit::wait_until(Duration::from_secs(20), || io_threads() <= threads_before);
    assert!(ended.is_some(), "the driver's thread is still running");
    let data = std::fs::read(&path).unwrap();
    for r in 0..REGIONS as usize {
        let region = &data[r * REGION..(r + 1) * REGION];
        let (a, b) = (byte(r as u64, 0), byte(r as u64, 1));
        assert!(
            region.iter().all(|&x| x == region[0]) && (region[0] == a || region[0] == b),
            "region {r} holds neither its old nor its new bytes"
        );
    }
    drop((data, old));
    // Give freed memory back first (glibc keeps freed chunks for reuse): what stays is held.
    // SAFETY: malloc_trim only releases free memory of the allocator.
    unsafe { libc::malloc_trim(0) };
    let rss_after = vecio_testkit::rss_kib(std::process::id());
    assert!(
        rss_after < rss_before + 8 * 1024,
        "resident memory grew from {rss_before} KiB to {rss_after} KiB"
    );
    eprintln!(
        "{pending} of {} futures dropped in flight; RSS {rss_before} -> {rss_after} KiB",
        ROUNDS * PER_ROUND
    );
}
