//! [`ThreadPool`]: a fixed pool of worker threads (documented on the type).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::thread::JoinHandle;

use crossbeam_channel::{bounded, Sender, TrySendError};

/// A job for the pool.
pub(crate) type Job = Box<dyn FnOnce() + Send + 'static>;

/// What the pool engine does with an op when its queue of jobs is full.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum WhenFull {
    /// Wait for room.
    Wait,
    /// Hand the job back at once.
    WouldBlock,
}

/// A fixed pool of worker threads.
///
/// A fixed pool of worker threads running blocking jobs from a bounded queue (the Samba and
/// libuv pattern). A full queue makes the caller wait or hands the job back, by option; it never
/// grows without bound. A job that panics is caught: its worker goes on with the next job.
pub(crate) struct ThreadPool {
    tx: Option<Sender<Job>>,
    workers: Vec<JoinHandle<()>>,
    when_full: WhenFull,
}

impl ThreadPool {
    /// Starts `threads` workers (at least one) behind a queue of `depth` jobs (at least one).
    pub(crate) fn new(threads: usize, depth: usize, when_full: WhenFull) -> std::io::Result<Self> {
        let (tx, rx) = bounded::<Job>(depth.max(1));
        let mut workers = Vec::new();
        for i in 0..threads.max(1) {
            let rx = rx.clone();
            let handle = std::thread::Builder::new()
                .name(format!("vecio-pool-{i}"))
                .spawn(move || {
                    while let Ok(job) = rx.recv() {
                        if catch_unwind(AssertUnwindSafe(job)).is_err() {
                            tracing::error!("a vecio pool job panicked; its worker goes on");
                        }
                    }
                })?;
            workers.push(handle);
        }
        Ok(ThreadPool {
            tx: Some(tx),
            workers,
            when_full,
        })
    }

    /// Queues `job`. With [`WhenFull::WouldBlock`] a full queue hands the job back.
    pub(crate) fn execute(&self, job: Job) -> Result<(), Job> {
        let Some(tx) = &self.tx else { return Err(job) };
        match self.when_full {
            WhenFull::Wait => tx.send(job).map_err(|e| e.into_inner()),
            WhenFull::WouldBlock => tx.try_send(job).map_err(|e| match e {
                TrySendError::Full(j) | TrySendError::Disconnected(j) => j,
            }),
        }
    }
}

impl Drop for ThreadPool {
    /// Closes the queue; workers finish every job already queued, then exit.
    fn drop(&mut self) {
        self.tx = None;
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};
    use std::sync::Arc;

    #[test]
    fn a_panicking_job_does_not_take_its_worker_down() {
        let pool = ThreadPool::new(1, 4, WhenFull::Wait).unwrap();
        let ran = Arc::new(AtomicUsize::new(0));
        pool.execute(Box::new(|| panic!("job failure on purpose")))
            .ok()
            .unwrap();
        for _ in 0..3 {
            let r = ran.clone();
            pool.execute(Box::new(move || {
                r.fetch_add(1, Ordering::SeqCst);
            }))
            .ok()
            .unwrap();
        }
        drop(pool);
        assert_eq!(ran.load(Ordering::SeqCst), 3);
    }

    #[test]
    fn a_full_queue_hands_the_job_back_when_asked() {
        let pool = ThreadPool::new(1, 1, WhenFull::WouldBlock).unwrap();
        let (hold_tx, hold_rx) = crossbeam_channel::bounded::<()>(0);
        pool.execute(Box::new(move || {
            let _ = hold_rx.recv();
        }))
        .ok()
        .unwrap();
        // The worker is busy; one job fits the queue, the next comes back.
        let mut accepted = 0;
        let mut refused = 0;
        for _ in 0..3 {
            match pool.execute(Box::new(|| {})) {
                Ok(()) => accepted += 1,
                Err(_) => refused += 1,
            }
        }
        assert!(
            accepted <= 2 && refused >= 1,
            "accepted {accepted}, refused {refused}"
        );
        drop(hold_tx);
    }
}

#[cfg(test)]
mod job_tests;
