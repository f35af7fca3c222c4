//! A `Driver`'s ring thread: made outside any runtime, it serves tasks of a multi-threaded and
//! of a current-thread runtime alike, and it ends once the last clone of the driver (and every
//! file opened through it) is gone. Its own test binary, so no other test's driver is counted.

use std::time::{Duration, Instant};

use vecio::{Direct, EngineKind};
use vecio_tokio::Driver;

/// The kernel's `PF_IO_WORKER`: an io_uring worker thread (io-wq), which the kernel starts as
/// a thread of the process that owns the ring.
const PF_IO_WORKER: u64 = 0x10;

/// True when the task at `/proc/self/task/TID` is an io_uring worker: it is made as a copy of
/// the ring's thread and carries that thread's name until it first runs and names itself
/// `iou-wrk-N` (on a loaded machine, long enough to be counted).
fn is_io_worker(task: &std::path::Path) -> bool {
    let Ok(stat) = std::fs::read_to_string(task.join("stat")) else {
        return false;
    };
    // Fields after the name in parentheses: state, ppid, pgrp, session, tty, tpgid, flags.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    after
        .split_whitespace()
        .nth(6)
        .and_then(|f| f.parse::<u64>().ok())
        .is_some_and(|flags| flags & PF_IO_WORKER != 0)
}

/// Threads of this process named like the driver's ring thread (io_uring's own workers, which
/// inherit that name for a moment, not counted).
fn ring_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .unwrap()
        .filter(|t| {
            let task = t.as_ref().unwrap().path();
            std::fs::read_to_string(task.join("comm")).is_ok_and(|c| c.trim() == "vecio-tokio-io")
                && !is_io_worker(&task)
        })
        .count()
}

/// Waits (up to 5 s) until `ring_threads()` is `n`: a new thread names itself once it runs.
fn wait_for_ring_threads(n: usize, what: &str) {
    let start = Instant::now();
    while ring_threads() != n {
        assert!(
            start.elapsed() < Duration::from_secs(5),
            "{what}: {} ring threads, want {n}",
            ring_threads()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn one_driver_serves_two_runtimes_and_its_thread_ends_with_the_last_clone() {
    let dir = tempfile::Builder::new()
        .prefix("vecio-tokio-ring-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let path = dir.path().join("f");
    std::fs::write(&path, vec![5u8; 1 << 20]).unwrap();
    assert_eq!(ring_threads(), 0);
    // Made outside any runtime.
    let driver = Driver::new(EngineKind::Uring.build().unwrap()).unwrap();
    wait_for_ring_threads(1, "a new driver");
    let opts = || {
        vecio::File::options()
            .read(true)
            .write(true)
            .direct(Direct::On)
    };

    let multi = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .build()
        .unwrap();
    let file = multi.block_on(async {
        let file = driver.open(&path, opts()).await.unwrap();
        let tasks: Vec<_> = (0..16u64)
            .map(|i| {
                let f = file.clone();
                tokio::spawn(async move { f.read_at(vec![0u8; 4096], i * 4096).await })
            })
            .collect();
        for t in tasks {
            let (n, buf) = t.await.unwrap();
            assert_eq!(n.unwrap(), 4096);
            assert!(buf.iter().all(|&b| b == 5));
        }
        file
    });
    // The same driver and file from a current-thread runtime (no reactor of the driver's own).
    let single = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    single.block_on(async {
        let (n, _) = file.write_at(vec![9u8; 4096], 8192).await;
        assert_eq!(n.unwrap(), 4096);
        let (n, buf) = file.read_at(vec![0u8; 12288], 4096).await;
        assert_eq!(n.unwrap(), 12288);
        assert!(buf[..4096].iter().all(|&b| b == 5) && buf[4096..8192].iter().all(|&b| b == 9));
    });
    assert_eq!(
        ring_threads(),
        1,
        "one thread per driver, however many runtimes"
    );
    // The file holds a clone: the thread stays until both are gone.
    drop(driver);
    std::thread::sleep(Duration::from_millis(50));
    assert_eq!(ring_threads(), 1, "the file still holds the driver");
    drop(file);
    wait_for_ring_threads(0, "the last clone dropped");
}
