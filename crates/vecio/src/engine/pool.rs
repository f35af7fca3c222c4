//! [`PoolEngine`]: thread-pool engine with the fast-read policy (documented on the type).

use std::io;
use std::os::fd::OwnedFd;
use std::sync::Arc;

use crossbeam_channel::{unbounded, Receiver, Sender};

use crate::engine::{syscall, Counters, Cqe, Engine, Op};
use crate::fast_read::{Decision, FastReadPolicy, FastReadState, FastReadStats, Outcome};
use crate::threadpool::{ThreadPool, WhenFull};
use crate::{Dir, RwFlags};

/// Settings of a [`PoolEngine`].
#[derive(Copy, Clone, Debug)]
pub struct PoolOptions {
    /// Worker threads.
    pub threads: usize,
    /// Jobs the queue holds before [`WhenFull`] applies.
    pub depth: usize,
    /// What a push does when the queue is full.
    pub when_full: WhenFull,
    /// The fast-read policy in front of the pool.
    pub fast_read: FastReadPolicy,
}

impl Default for PoolOptions {
    fn default() -> Self {
        PoolOptions {
            threads: std::thread::available_parallelism()
                .map_or(2, |n| n.get())
                .max(2)
                * 2,
            depth: 1024,
            when_full: WhenFull::Wait,
            fast_read: FastReadPolicy::default(),
        }
    }
}

/// Sends the op's completion exactly once: with the result, or `-EIO` if the job unwinds first.
struct CompletionGuard {
    tx: Sender<Cqe>,
    tag: u64,
    sent: bool,
    /// Signalled after the completion is posted, when the engine was asked to.
    notify: Option<Arc<OwnedFd>>,
}

impl CompletionGuard {
    fn complete(mut self, result: i64) {
        self.sent = true;
        let _ = self.tx.send(Cqe {
            tag: self.tag,
            result,
        });
        self.signal();
    }

    /// Adds 1 to the eventfd's counter (`eventfd(2)`), so a waiter on it wakes.
    fn signal(&self) {
        if let Some(fd) = &self.notify {
            let _ = rustix::io::write(fd, &1u64.to_ne_bytes());
        }
    }
}

impl Drop for CompletionGuard {
    fn drop(&mut self) {
        if !self.sent {
            let _ = self.tx.send(Cqe {
                tag: self.tag,
                result: -(libc::EIO as i64),
            });
            self.signal();
        }
    }
}

/// True when a short read of `r` bytes at `op.offset` stopped at end of file.
fn ends_at_eof(op: &Op, r: i64) -> bool {
    // SAFETY: the pusher keeps op.fd open until the completion is reaped.
    let fd = unsafe { std::os::fd::BorrowedFd::borrow_raw(op.fd) };
    rustix::fs::fstat(fd).is_ok_and(|st| op.offset + r as u64 >= st.st_size as u64)
}

/// The iovecs of an op's remainder, moved to the worker that reads it.
struct Remainder(Vec<libc::iovec>);

// SAFETY: the iovecs point into buffers the pusher keeps valid until the completion is reaped
// (Engine::push); the worker is the only one to use them meanwhile.
unsafe impl Send for Remainder {}

/// Thread-pool engine with the fast-read policy.
///
/// The pool engine: blocking calls on a fixed pool of worker threads, with the fast-read policy
/// in front: reads are tried inline with `RWF_NOWAIT` and only what would block is offloaded.
pub struct PoolEngine {
    pool: ThreadPool,
    done_tx: Sender<Cqe>,
    done_rx: Receiver<Cqe>,
    ready: Vec<Cqe>,
    in_flight: usize,
    counters: Counters,
    policy: FastReadPolicy,
    totals: FastReadState,
    /// The eventfd workers signal after each completion, once asked for.
    notify: Option<Arc<OwnedFd>>,
}

impl PoolEngine {
    /// Starts the workers.
    pub fn new(opts: PoolOptions) -> crate::Result<Self> {
        let pool = ThreadPool::new(opts.threads, opts.depth, opts.when_full).map_err(|source| {
            crate::Error::Engine {
                engine: "pool",
                source,
            }
        })?;
        let (done_tx, done_rx) = unbounded();
        Ok(PoolEngine {
            pool,
            done_tx,
            done_rx,
            ready: Vec::new(),
            in_flight: 0,
            counters: Counters::default(),
            policy: opts.fast_read,
            totals: FastReadState::default(),
            notify: None,
        })
    }

    /// The fast-read policy in use.
    pub fn policy(&self) -> &FastReadPolicy {
        &self.policy
    }

    /// Fast-read counters over every file this engine served.
    pub fn fast_read_totals(&self) -> FastReadStats {
        self.totals.stats(&self.policy)
    }

    /// Tries `op` inline with `RWF_NOWAIT`. Returns the bytes done and whether the op is
    /// finished; `None` when it was not tried.
    fn try_inline(&mut self, op: &Op, state: &FastReadState) -> Option<(i64, bool)> {
        if op.cmd != super::Cmd::Rw {
            return None;
        }
        let read = op.dir == Dir::Dest;
        let tried = if read {
            match state.decide(&self.policy) {
                Decision::Try => true,
                Decision::Skip => {
                    self.totals.note_skipped();
                    false
                }
                Decision::Off => false,
            }
        } else {
            state.should_try_write(&self.policy)
        };
        if !tried {
            return None;
        }
        let mut nowait = *op;
        nowait.flags |= RwFlags::NOWAIT;
        self.counters.syscalls += 1;
        let r = syscall::vectored(&nowait);
        let (outcome, result) = match r {
            r if r == op.len as i64 || (r == 0 && read) => (Outcome::Hit, (r, true)),
            // Short, but at end of file: everything there was, served inline.
            r if r > 0 && read && ends_at_eof(op, r) => (Outcome::Hit, (r, true)),
            r if r > 0 => (Outcome::Partial(r as f64 / op.len as f64), (r, false)),
            r if r == -(libc::EAGAIN as i64) => (Outcome::Miss, (0, false)),
            // Refused: by RWF_NOWAIT itself only when it was the attempt's only flag; a flag
            // of the caller's says nothing about the file, and the pool will report it.
            r if r == -(libc::EOPNOTSUPP as i64) && !op.flags.is_empty() => {
                return Some((0, false))
            }
            r if r == -(libc::EOPNOTSUPP as i64) => (Outcome::Unsupported, (0, false)),
            // A real error: it is the op's result, and says nothing about the cache.
            r => return Some((r, true)),
        };
        if read {
            state.record(outcome, &self.policy);
            self.totals.record(outcome, &self.policy);
        } else if outcome == Outcome::Unsupported {
            state.note_write_unsupported();
        }
        Some(result)
    }

    /// Hands the rest of `op` after `done` bytes to a worker.
    fn offload(&mut self, op: Op, done: usize) -> io::Result<()> {
        let segs: &[libc::iovec] = if op.iov.is_null() {
            &[] // a command (fsync, fallocate) has no buffers
        } else {
            // SAFETY: the pusher keeps the iovec array valid until the completion is reaped.
            unsafe { std::slice::from_raw_parts(op.iov, op.nr_segs as usize) }
        };
        let mut rest: Vec<libc::iovec> = Vec::new();
        if done > 0 {
            let mut skip = done;
            for s in segs {
                if skip >= s.iov_len {
                    skip -= s.iov_len;
                    continue;
                }
                // SAFETY: skip < iov_len, so the new base stays in the same buffer.
                let base = unsafe { s.iov_base.cast::<u8>().add(skip) };
                rest.push(libc::iovec {
                    iov_base: base.cast(),
                    iov_len: s.iov_len - skip,
                });
                skip = 0;
            }
        }
        let guard = CompletionGuard {
            tx: self.done_tx.clone(),
            tag: op.tag,
            sent: false,
            notify: self.notify.clone(),
        };
        let rest = Remainder(rest);
        let job = move || {
            let rest = rest;
            let mut op = op;
            if done > 0 {
                op.iov = rest.0.as_ptr();
                op.nr_segs = rest.0.len() as u32;
                op.offset += done as u64;
                op.len -= done;
            }
            let r = syscall::vectored(&op);
            let total = if r < 0 {
                if done > 0 {
                    done as i64
                } else {
                    r
                }
            } else {
                r + done as i64
            };
            guard.complete(total);
        };
        self.counters.syscalls += 1;
        if !op.fast.is_null() {
            // SAFETY: the pusher keeps the file (and so its state) alive until the completion.
            unsafe { &*op.fast }.note_offload();
            self.totals.note_offload();
        }
        self.pool.execute(Box::new(job)).map_err(|job| {
            // Not queued: forget the job's completion guard with it, so no completion is sent.
            std::mem::forget(job);
            io::Error::from_raw_os_error(libc::EAGAIN)
        })
    }
}

impl Engine for PoolEngine {
    fn name(&self) -> &'static str {
        "pool"
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        let caller_nowait = op.flags.contains(RwFlags::NOWAIT);
        if caller_nowait && !op.fast.is_null() {
            // The caller asked not to block: the call is cheap either way, so make it here
            // rather than on a worker.
            self.counters.syscalls += 1;
            self.in_flight += 1;
            self.ready.push(Cqe {
                tag: op.tag,
                result: syscall::vectored(&op),
            });
            return Ok(());
        }
        let mut done = 0usize;
        if !op.fast.is_null() && !caller_nowait {
            // SAFETY: the pusher keeps the file alive until the completion is reaped.
            let state = unsafe { &*op.fast };
            if let Some((r, finished)) = self.try_inline(&op, state) {
                if finished {
                    self.in_flight += 1;
                    self.ready.push(Cqe {
                        tag: op.tag,
                        result: r,
                    });
                    return Ok(());
                }
                done = r.max(0) as usize;
            }
        }
        self.offload(op, done)?;
        self.in_flight += 1;
        Ok(())
    }

    fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        self.counters.submits += 1;
        while let Ok(c) = self.done_rx.try_recv() {
            self.ready.push(c);
        }
        let want = want.min(self.in_flight);
        while self.ready.len() < want {
            match self.done_rx.recv() {
                Ok(c) => self.ready.push(c),
                Err(_) => return Err(io::Error::from_raw_os_error(libc::EPIPE)),
            }
        }
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        while let Ok(c) = self.done_rx.try_recv() {
            self.ready.push(c);
        }
        self.in_flight -= self.ready.len();
        self.counters.ops += self.ready.len() as u64;
        out.append(&mut self.ready);
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn notify_on(&mut self, eventfd: Arc<OwnedFd>) -> io::Result<bool> {
        self.notify = Some(eventfd);
        Ok(true)
    }
}

impl Drop for PoolEngine {
    fn drop(&mut self) {
        // Workers may still use buffers of ops in flight: wait for every completion.
        let _ = self.submit_and_wait(self.in_flight);
    }
}
