//! [`Queue`]: many requests in flight from one thread (documented on the type).

use std::sync::Arc;

use crate::engine::{Cmd, Cqe, Engine, Op, IOV_MAX};
use crate::error::{Error, Result};
use crate::request::{validate, Progress, Step};
use crate::{AlignedBuf, Dir, File, RwFlags};

mod cmd;
mod inflight;
mod park;
mod poll;
mod push_error;
mod unaligned;
mod watch;

use inflight::{InFlight, Plan, SpareIovecs, Stage};
pub use push_error::PushError;

/// A buffer a [`Queue`] request owns while in flight.
pub enum OwnedBuf {
    /// An aligned buffer: from the heap, or from a [`BufPool`](crate::BufPool)'s region
    /// (registered buffers on io_uring when every buffer of the request comes from the same
    /// registered region).
    Aligned(AlignedBuf),
    /// A plain vector.
    Vec(Vec<u8>),
}

impl OwnedBuf {
    /// The buffer's bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            OwnedBuf::Aligned(b) => b,
            OwnedBuf::Vec(v) => v,
        }
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            OwnedBuf::Aligned(b) => b,
            OwnedBuf::Vec(v) => v,
        }
    }

    fn pool_id(&self) -> Option<u64> {
        match self {
            OwnedBuf::Aligned(b) => b.region_id(),
            OwnedBuf::Vec(_) => None,
        }
    }

    /// The buffer's length.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// A finished [`Queue`] request.
pub struct Completion {
    /// The caller's tag, given at push.
    pub user_data: u64,
    /// Bytes moved, or the error (with file, offset and request context) when none were.
    pub result: Result<usize>,
    /// When `result` is `Ok(n)` short of the request because the kernel failed after `n`
    /// bytes, that failure (at the offset where it happened), so a server need not re-push
    /// the tail to learn the errno. `None` when the request completed, stopped at end of file,
    /// or failed outright (then `result` is the error).
    pub stopped_by: Option<Error>,
    /// The request's buffers, handed back.
    pub bufs: Vec<OwnedBuf>,
}

/// Many requests in flight from one thread.
///
/// `Queue`: the completion API for servers that keep many requests in flight from one thread:
/// push requests with buffers the queue owns until they complete, submit, reap completions.
/// `push` never blocks.
///
/// Buffers are moved into the queue and handed back with the completion, so no request can
/// outlive its memory (forgetting a `Queue` leaks its buffers rather than freeing memory the
/// kernel still writes). Aligned requests go to the engine as they are. A request the file's
/// direct-I/O alignment refuses goes through the engine in stages: a read through an aligned
/// bounce window; a write as a read-modify-write (edge blocks read, then the window written).
/// A request of more than `IOV_MAX` buffers goes in several ops, one after the other.
///
/// A `Queue` is `Send`: it may move to another thread between calls (a runtime's worker, say).
/// Its range-lock holds belong to the thread that took them, so move it only while
/// [`is_empty`](Self::is_empty).
///
/// # Locking
///
/// A direct request holds its range of the file's range lock from the moment it starts until
/// it is reaped: shared for aligned requests and reads, exclusive over the aligned window for a
/// read-modify-write. A request whose range is held in a conflicting way is parked in the queue
/// (never waited on in `push`) and starts, in order of arrival, once the range is free; a
/// blocking call on the same thread that needs blocks this thread's queued requests hold in a
/// conflicting way (an unaligned [`File::write_at`] on a direct file, `RWF_APPEND`, a blocking
/// read under a queued read-modify-write) fails with `EDEADLK` instead of waiting on requests
/// only this thread can reap: reap first. See `docs/engine.md`, "Locking rules".
///
/// ```
/// use std::sync::Arc;
/// use vecio::{AlignedBuf, EngineKind, File, OwnedBuf, Queue, RwFlags};
/// # fn main() -> vecio::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let file = File::options().read(true).write(true).create(true);
/// let file = Arc::new(file.open(dir.path().join("f"))?);
/// let mut queue = Queue::new(EngineKind::Uring.build()?);
/// for i in 0..4u64 {
///     let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(4096));
///     queue.push_write(&file, i * 4096, vec![buf], RwFlags::empty(), i)?;
/// }
/// queue.submit_and_wait(4)?;
/// let mut done = Vec::new();
/// queue.reap(&mut done);
/// assert_eq!(done.len(), 4);
/// assert!(done.iter().all(|c| matches!(c.result, Ok(4096))));
/// # Ok(()) }
/// ```
pub struct Queue {
    // Declared first so that it drops first: its Drop waits for everything in flight.
    engine: Box<dyn Engine>,
    slots: Vec<Option<InFlight>>,
    free: Vec<usize>,
    ready: Vec<Completion>,
    cqes: Vec<Cqe>,
    /// Completions of ops the engine refused at push, handled with the engine's own.
    refused: Vec<Cqe>,
    /// Requests pushed and not yet finished (parked or in the engine).
    in_flight: usize,
    parked: park::Parked,
    spare_iov: SpareIovecs,
    /// Ops handed to the engine so far (to see whether accounting pushed new ones).
    ops_pushed: u64,
    /// The readiness watch on a descriptor, if one is armed.
    watch: watch::WatchOps,
}

const _: () = {
    const fn is_send<T: Send>() {}
    is_send::<Queue>();
};

impl Queue {
    /// A queue over `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        Queue {
            engine,
            slots: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            cqes: Vec::new(),
            refused: Vec::new(),
            in_flight: 0,
            parked: park::Parked::default(),
            spare_iov: SpareIovecs::default(),
            ops_pushed: 0,
            watch: watch::WatchOps::default(),
        }
    }

    /// The engine, for its counters or to register page pools.
    pub fn engine_mut(&mut self) -> &mut dyn Engine {
        self.engine.as_mut()
    }

    /// Requests pushed and not yet reaped.
    pub fn len(&self) -> usize {
        self.in_flight + self.ready.len()
    }

    /// True when nothing is pushed and unreaped.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Requests waiting for a range of their file that other requests hold (see "Locking").
    pub fn parked(&self) -> usize {
        self.parked.len()
    }

    /// Queues a read of `file` at `offset` into `bufs`. On error the buffers come back.
    pub fn push_read(
        &mut self,
        file: &Arc<File>,
        offset: u64,
        bufs: Vec<OwnedBuf>,
        flags: RwFlags,
        user_data: u64,
    ) -> std::result::Result<(), PushError> {
        self.push(file, offset, bufs, Dir::Dest, flags, user_data)
    }

    /// Queues a write of `bufs` to `file` at `offset`. On error the buffers come back.
    pub fn push_write(
        &mut self,
        file: &Arc<File>,
        offset: u64,
        bufs: Vec<OwnedBuf>,
        flags: RwFlags,
        user_data: u64,
    ) -> std::result::Result<(), PushError> {
        self.push(file, offset, bufs, Dir::Source, flags, user_data)
    }

    fn push(
        &mut self,
        file: &Arc<File>,
        offset: u64,
        mut bufs: Vec<OwnedBuf>,
        dir: Dir,
        flags: RwFlags,
        user_data: u64,
    ) -> std::result::Result<(), PushError> {
        let flags = flags | file.base_flags();
        let mut iov = self.spare_iov.take();
        iov.extend(
            bufs.iter_mut()
                .map(OwnedBuf::as_mut_slice)
                .filter(|s| !s.is_empty())
                .map(|s| libc::iovec {
                    iov_base: s.as_mut_ptr().cast(),
                    iov_len: s.len(),
                }),
        );
        let len: usize = iov.iter().map(|v| v.iov_len).sum();
        if let Err(error) = validate(file, 0, offset, len, dir) {
            self.spare_iov.put(iov);
            return Err(PushError { error, bufs });
        }
        let pool = bufs.first().and_then(OwnedBuf::pool_id);
        let pool = pool.filter(|p| bufs.iter().all(|b| b.pool_id() == Some(*p)));
        let plan = plan_for(file, offset, &iov, len, dir, flags);
        let slot = self.new_slot(InFlight {
            file: file.clone(),
            user_data,
            at: Progress::new(offset, dir),
            flags,
            bufs,
            iov,
            first: 0,
            pool,
            ticket: None,
            stage: Stage::Parked,
            plan,
            pending: 0,
            op_iov: Vec::new(),
        });
        self.admit(slot);
        self.take_back_if_refused(slot)
    }

    /// A request the engine refused outright at push (nothing of it ran) is handed back to the
    /// caller with its buffers, as the error of `push`.
    fn take_back_if_refused(&mut self, slot: usize) -> std::result::Result<(), PushError> {
        let idle = self.slots[slot].as_ref().is_some_and(|f| f.pending == 0);
        let Some(i) = self.refused.iter().position(|c| c.tag == slot as u64) else {
            return Ok(());
        };
        if !idle {
            return Ok(());
        }
        let errno = -self.refused.swap_remove(i).result as i32;
        match self.take(slot) {
            Some(f) => {
                let error = f.file.request_error(0, f.at.offset, f.flags, errno);
                self.spare_iov.put(f.iov);
                Err(PushError {
                    error,
                    bufs: f.bufs,
                })
            }
            None => Ok(()),
        }
    }

    fn new_slot(&mut self, f: InFlight) -> usize {
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[slot] = Some(f);
        self.in_flight += 1;
        slot
    }

    /// Starts a request whose range is held.
    fn start(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        match f.plan {
            Plan::Direct => {
                f.stage = Stage::Direct;
                self.issue_direct(slot);
            }
            Plan::Bounce => self.start_bounce(slot),
            Plan::Rmw => self.start_rmw(slot),
            Plan::Command(cmd, len) => {
                f.stage = Stage::Command { cmd, len };
                self.issue_command(slot);
            }
        }
    }

    /// Pushes what is left of a request straight over its buffers (at most `IOV_MAX` of them
    /// per op).
    fn issue_direct(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_ref() else {
            return;
        };
        let rest = &f.iov[f.first..];
        let nr = rest.len().min(IOV_MAX);
        let op = Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*f.file),
            file_id: f.file.id(),
            offset: f.at.offset,
            iov: rest.as_ptr(),
            nr_segs: nr as u32,
            len: rest[..nr].iter().map(|v| v.iov_len).sum(),
            dir: f.at.dir,
            flags: f.flags,
            pool: f.pool,
            tag: slot as u64,
            fast: f.file.fast_read_ptr(),
            cmd: Cmd::Rw,
        };
        self.push_op(slot, op);
    }

    /// Hands `op` of request `slot` to the engine; an op the engine refuses completes with
    /// its errno at the next collect.
    fn push_op(&mut self, slot: usize, op: Op) {
        // SAFETY: the iovecs and buffers behind `op` are owned by the slot (its iovec arrays
        // and stage buffers are heap memory that stays put when the slot moves) and are not
        // touched or freed until the completion with this tag is reaped; Queue's Drop waits
        // for all completions.
        match unsafe { self.engine.push(op) } {
            Ok(()) => {
                self.ops_pushed += 1;
                if let Some(f) = self.slots[slot].as_mut() {
                    f.pending += 1;
                }
            }
            Err(e) => self.refused.push(Cqe {
                tag: op.tag,
                result: -(e.raw_os_error().unwrap_or(libc::EIO) as i64),
            }),
        }
    }

    /// Ends a slot's flight: frees the slot and its range lock.
    fn take(&mut self, slot: usize) -> Option<InFlight> {
        let f = self.slots.get_mut(slot)?.take()?;
        self.in_flight -= 1;
        self.free.push(slot);
        if let Some(t) = f.ticket {
            f.file.locks.release(t);
        }
        Some(f)
    }

    /// Finishes a request as `step` says: its completion is ready to reap.
    fn finish(&mut self, slot: usize, step: Step) {
        let Some(f) = self.take(slot) else {
            return;
        };
        let error = |errno| f.file.request_error(0, f.at.offset, f.flags, errno);
        let (result, stopped_by) = match step {
            Step::Done { bytes, error: e } => (Ok(bytes), e.map(error)),
            Step::Failed(errno) => (Err(error(errno)), None),
            Step::Resume => (Ok(f.at.done), None),
        };
        self.spare_iov.put(f.iov);
        self.ready.push(Completion {
            user_data: f.user_data,
            result,
            stopped_by,
            bufs: f.bufs,
        });
    }

    /// Hands everything pushed to the kernel without waiting.
    pub fn submit(&mut self) -> Result<()> {
        self.submit_and_wait(0)
    }

    /// Hands everything pushed to the kernel and waits until at least `want` completions are
    /// ready to reap (counting ones ready already; fewer when fewer requests are pushed).
    pub fn submit_and_wait(&mut self, want: usize) -> Result<()> {
        loop {
            self.retry_parked();
            let want_now = want.min(self.ready.len() + self.in_flight);
            if self.ready.len() >= want_now {
                return self.flush();
            }
            if self.engine_io() == 0 && self.refused.is_empty() {
                // Only parked requests are left, held up by other threads: wait for them.
                self.wait_parked();
                continue;
            }
            let need = (want_now - self.ready.len()).min(self.engine_io());
            self.engine_wait(need)?;
            self.collect();
        }
    }

    /// Hands everything pushed to the kernel and waits up to `timeout` for at least one
    /// completion (for a server that also watches a socket); engines that cannot bound the
    /// wait wait for one.
    pub fn submit_and_wait_timeout(&mut self, timeout: std::time::Duration) -> Result<()> {
        self.retry_parked();
        if !self.ready.is_empty() || self.in_flight == 0 || !self.refused.is_empty() {
            return self.submit();
        }
        if self.engine_io() == 0 {
            self.wait_parked();
            return self.submit();
        }
        self.engine
            .submit_and_wait_timeout(1, timeout)
            .map_err(|e| self.engine_error(e))?;
        self.collect();
        self.flush()
    }

    /// Hands the engine everything queued, collects, and goes again while collecting pushed
    /// new ops (a stage's next step: the window write after the edge reads, say), so nothing
    /// is left queued but unsubmitted when the caller goes off to wait elsewhere (on an
    /// eventfd, a socket).
    fn flush(&mut self) -> Result<()> {
        loop {
            let before = self.ops_pushed;
            self.engine_wait(0)?;
            self.collect();
            if self.ops_pushed == before {
                return Ok(());
            }
        }
    }

    /// An engine's failure, named after the engine.
    fn engine_error(&self, source: std::io::Error) -> Error {
        Error::Engine {
            engine: self.engine.name(),
            source,
        }
    }

    fn engine_wait(&mut self, want: usize) -> Result<()> {
        self.engine
            .submit_and_wait(want)
            .map_err(|e| self.engine_error(e))
    }

    /// Moves every finished request into `out`.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        self.collect();
        out.append(&mut self.ready);
    }

    /// Accounts the engine's completions (and refused ops): each goes to its request's
    /// stage, which finishes the request or issues its next op. Parked requests whose
    /// ranges came free start.
    fn collect(&mut self) {
        self.cqes.clear();
        self.engine.reap(&mut self.cqes);
        self.cqes.append(&mut self.refused);
        let cqes = std::mem::take(&mut self.cqes);
        for c in &cqes {
            if self.watch.take(c) {
                continue;
            }
            let slot = (c.tag & 0xffff_ffff) as usize;
            let sub = c.tag >> unaligned::SUB_SHIFT;
            let Some(f) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            f.pending = f.pending.saturating_sub(1);
            match (&f.stage, sub) {
                (Stage::Direct, _) => self.on_direct(slot, c.result),
                (Stage::Bounce(_), _) => self.on_bounce(slot, c.result),
                (Stage::Edges(_), _) => self.on_edge(slot, c.result),
                (Stage::WriteBack(_), _) => self.on_write_back(slot, c.result),
                (Stage::Command { .. }, _) => self.on_command(slot, c.result),
                (Stage::Parked, _) => {}
            }
        }
        self.cqes = cqes;
        if self.parked.len() > 0 {
            self.retry_parked();
        }
    }

    /// A straight op completed: finishes the request or issues what is left.
    fn on_direct(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let rest = f.rest();
        let op_len: usize = f.iov[f.first..]
            .iter()
            .take(IOV_MAX)
            .map(|v| v.iov_len)
            .sum();
        f.advance(result.max(0) as usize);
        let short = result >= 0 && (result as usize) < op_len;
        match f.at.account_result(result, rest) {
            Step::Resume if short && f.at.at_eof(&f.file) => {
                let bytes = f.at.done;
                self.finish(slot, Step::Done { bytes, error: None })
            }
            Step::Resume => self.issue_direct(slot),
            step => self.finish(slot, step),
        }
    }
}

/// The route a request takes: straight over its buffers when the engine can take it as it
/// is, else the bounce window (reads) or the read-modify-write (writes) of a direct file.
fn plan_for(
    file: &File,
    offset: u64,
    iov: &[libc::iovec],
    len: usize,
    dir: Dir,
    flags: RwFlags,
) -> Plan {
    if !file.is_direct() {
        return Plan::Direct;
    }
    let a = file.dio_align();
    let aligned = a.allows(offset, len as u64)
        && iov
            .iter()
            .all(|v| a.allows_segment(v.iov_base as usize, v.iov_len));
    match dir {
        Dir::Source if flags.contains(RwFlags::APPEND) => Plan::Rmw,
        _ if aligned => Plan::Direct,
        Dir::Dest => Plan::Bounce,
        Dir::Source => Plan::Rmw,
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The kernel may still use buffers of requests in flight: wait for every op. Parked
        // requests have nothing in the kernel. A watch is cancelled first: its descriptor may
        // never become ready.
        let _ = self.unwatch();
        while self.engine.in_flight() > 0 {
            let n = self.engine.in_flight();
            if self.engine.submit_and_wait(n).is_err() {
                break;
            }
            self.collect();
        }
        if self.engine.in_flight() > 0 {
            // The engine failed: leak the buffers rather than free memory still in use.
            for f in self.slots.drain(..).flatten() {
                std::mem::forget(f.bufs);
                std::mem::forget(f.stage);
            }
        }
    }
}
