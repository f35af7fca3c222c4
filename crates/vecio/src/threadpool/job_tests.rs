//! The thread pool under the pool engine, job by job: a panicking job does not take its worker
//! down, `WhenFull::WouldBlock` hands jobs back when the queue is full, `WhenFull::Wait` blocks
//! until there is room, and dropping the pool runs every queued job.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{mpsc, Arc};
use std::time::Duration;

use super::{Job, ThreadPool, WhenFull};

/// Runs `f` on a thread of its own; a panic or a hang past `secs` fails the test, named.
fn with_timeout<T: Send + 'static>(
    secs: u64,
    what: &str,
    f: impl FnOnce() -> T + Send + 'static,
) -> T {
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    match rx.recv_timeout(Duration::from_secs(secs)) {
        Ok(v) => v,
        Err(mpsc::RecvTimeoutError::Timeout) => panic!("{what}: still running after {secs} s"),
        Err(mpsc::RecvTimeoutError::Disconnected) => panic!("{what}: panicked (see above)"),
    }
}

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
