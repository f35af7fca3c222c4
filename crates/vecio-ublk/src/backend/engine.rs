//! [`RingEngine`]: a vecio [`Engine`] whose ring is the ublk queue's own io_uring, so the
//! backing file's direct, asynchronous I/O and the ublk commands share one ring and one
//! `io_uring_enter` per round, as the kernel's loop device shares one worker (seed 001).
//!
//! The ring belongs to libublk (one per queue thread). Ops go into its submission queue tagged
//! with libublk's target-I/O bit; the queue's loop hands their completions back through
//! [`Inbox`]. The engine never waits while the queue is live: libublk's loop submits and waits
//! for everything. Only at teardown (a vecio `Queue` dropped with ops in flight) does
//! [`RingEngine::submit_and_wait`] wait on the ring itself.

use std::cell::RefCell;
use std::io;
use std::os::fd::RawFd;

use io_uring::{opcode, squeue, types};
use vecio::engine::{Cmd, Counters, Cqe, Engine, Op};
use vecio::{Dir, RwFlags};

/// libublk's mark on the user data of target I/O (`UblkUringData::Target`).
pub(crate) const TARGET: u64 = libublk::UblkUringData::Target as u64;

std::thread_local! {
    /// Completions of this thread's engine ops, posted by the queue loop, taken by `reap`.
    static INBOX: RefCell<Vec<Cqe>> = const { RefCell::new(Vec::new()) };
}

/// Where the queue loop posts the completions of engine ops it finds in the ring.
pub(crate) struct Inbox;

impl Inbox {
    /// Posts the completion of the op whose user data was `user_data` (the target bit set).
    pub(crate) fn post(user_data: u64, result: i32) {
        INBOX.with(|i| {
            i.borrow_mut().push(Cqe {
                tag: user_data & !TARGET,
                result: result as i64,
            })
        });
    }
}

/// The submission entry for `$op` on `$fd` (a `types::Fd` or a `types::Fixed`: io-uring's
/// opcode builders take either, through a trait other crates cannot name, hence a macro).
macro_rules! entry {
    ($fd:expr, $op:expr) => {{
        let (fd, op) = ($fd, $op);
        // RWF_HIPRI needs an IOPOLL ring; on this one the request completes by interrupt.
        let flags = (op.flags() - RwFlags::HIPRI).to_kernel();
        let (iov, nr_segs) = op.iovecs();
        match (op.cmd(), op.dir()) {
            (Cmd::Rw, Dir::Dest) => opcode::Readv::new(fd, iov, nr_segs)
                .offset(op.offset())
                .rw_flags(flags)
                .build(),
            (Cmd::Rw, Dir::Source) => opcode::Writev::new(fd, iov, nr_segs)
                .offset(op.offset())
                .rw_flags(flags)
                .build(),
            (Cmd::Fsync, _) => opcode::Fsync::new(fd).build(),
            (Cmd::Fdatasync, _) => opcode::Fsync::new(fd)
                .flags(types::FsyncFlags::DATASYNC)
                .build(),
            (Cmd::Fallocate(mode), _) => opcode::Fallocate::new(fd, op.len() as u64)
                .offset(op.offset())
                .mode(mode)
                .build(),
        }
    }};
}

/// A vecio engine over the calling thread's ublk queue ring (see the module docs).
///
/// It must be used on the thread whose `UblkQueue` made the ring (the ring is that thread's);
/// it is `Send` because vecio's `Queue` asks it of every engine, and holds nothing of a thread.
pub(crate) struct RingEngine {
    /// The backing file's descriptor and its fixed-file slot in the ring, when registered.
    fixed: Option<(RawFd, u32)>,
    in_flight: usize,
    counters: Counters,
}

impl RingEngine {
    /// An engine on this thread's ublk ring; ops on `fixed.0` use fixed-file slot `fixed.1`.
    pub(crate) fn new(fixed: Option<(RawFd, u32)>) -> Self {
        RingEngine {
            fixed,
            in_flight: 0,
            counters: Counters::default(),
        }
    }

    fn entry(&self, op: &Op) -> squeue::Entry {
        let e = match self.fixed {
            Some((fd, slot)) if fd == op.fd() => entry!(types::Fixed(slot), op),
            _ => entry!(types::Fd(op.fd()), op),
        };
        e.user_data(op.tag() | TARGET)
    }
}

impl Engine for RingEngine {
    fn name(&self) -> &'static str {
        "ublk-ring"
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        if op.tag() & TARGET != 0 {
            return Err(io::Error::from_raw_os_error(libc::EOVERFLOW));
        }
        let sqe = self.entry(&op);
        libublk::io::with_task_io_ring_mut(|ring| loop {
            // SAFETY: the caller keeps the op's buffers and iovecs valid until its completion
            // is reaped (Engine::push), and the entry refers to nothing else.
            if unsafe { ring.submission().push(&sqe) }.is_ok() {
                return Ok::<(), io::Error>(());
            }
            // Full: hand the kernel what is queued (no wait) and try again.
            ring.submit()?;
        })?;
        self.in_flight += 1;
        Ok(())
    }

    fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        let ready = INBOX.with(|i| i.borrow().len());
        if want == 0 || ready >= want {
            // The queue loop submits with its own wait, in the same system call.
            return Ok(());
        }
        // Teardown only: the queue loop has ended, so every completion in the ring is ours or
        // a late ublk command's (which nobody waits for any more).
        libublk::io::with_task_io_ring_mut(|ring| {
            ring.submit_and_wait(1)?;
            for cqe in ring.completion() {
                if cqe.user_data() & TARGET != 0 {
                    Inbox::post(cqe.user_data(), cqe.result());
                }
            }
            Ok::<(), io::Error>(())
        })?;
        self.counters.syscalls += 1;
        Ok(())
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        INBOX.with(|i| {
            let mut i = i.borrow_mut();
            self.in_flight = self.in_flight.saturating_sub(i.len());
            self.counters.ops += i.len() as u64;
            out.append(&mut i);
        });
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn counters(&self) -> Counters {
        self.counters
    }
}
