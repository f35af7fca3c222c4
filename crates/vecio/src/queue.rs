//! [`Queue`]: many requests in flight from one thread (documented on the type).

use std::sync::Arc;

use crate::engine::{Cmd, Cqe, Engine, Op, SyncEngine, IOV_MAX};

mod cmd;
use crate::error::{Error, Invalid, Result};
use crate::{AlignedBuf, Batch, Dir, File, IoIter, PoolBuf, RwFlags};

/// A buffer a [`Queue`] request owns while in flight.
pub enum OwnedBuf {
    /// An aligned heap buffer.
    Aligned(AlignedBuf),
    /// A chunk of a page pool (registered buffers on io_uring when every buffer of the request
    /// comes from the same registered pool).
    Pool(PoolBuf),
    /// A plain vector.
    Vec(Vec<u8>),
}

impl OwnedBuf {
    fn as_mut_slice(&mut self) -> &mut [u8] {
        match self {
            OwnedBuf::Aligned(b) => b,
            OwnedBuf::Pool(b) => b,
            OwnedBuf::Vec(v) => v,
        }
    }

    /// The buffer's bytes.
    pub fn as_slice(&self) -> &[u8] {
        match self {
            OwnedBuf::Aligned(b) => b,
            OwnedBuf::Pool(b) => b,
            OwnedBuf::Vec(v) => v,
        }
    }

    fn pool_id(&self) -> Option<u64> {
        match self {
            OwnedBuf::Pool(b) => Some(b.pool_id()),
            _ => None,
        }
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
    /// or failed outright (then `result` is the error). Requests served by the blocking path
    /// (unaligned direct ones) report `None` here for now.
    pub stopped_by: Option<Error>,
    /// The request's buffers, handed back.
    pub bufs: Vec<OwnedBuf>,
}

struct InFlight {
    file: Arc<File>,
    user_data: u64,
    /// Offset of what is left.
    offset: u64,
    dir: Dir,
    flags: RwFlags,
    bufs: Vec<OwnedBuf>,
    /// What is left, as iovecs into `bufs` (trimmed from the front as bytes complete).
    iov: Vec<libc::iovec>,
    first: usize,
    done: usize,
    pool: Option<u64>,
    /// Shared range-lock ticket of a direct request.
    ticket: Option<u64>,
    /// A read or write, or a whole-file command (fsync, fallocate).
    cmd: Cmd,
    /// A command's length (fallocate).
    cmd_len: usize,
}

// SAFETY: the iovecs point into `bufs`, which the InFlight owns; moving it between threads
// moves that ownership along.
unsafe impl Send for InFlight {}

/// Many requests in flight from one thread.
///
/// `Queue`: the completion API for servers that keep many requests in flight from one thread:
/// push requests with buffers the queue owns until they complete, submit, reap completions.
///
/// Buffers are moved into the queue and handed back with the completion, so no request can
/// outlive its memory (forgetting a `Queue` leaks its buffers rather than freeing memory the
/// kernel still writes). Aligned requests go to the engine as they are; a request the file's
/// direct-I/O alignment refuses, or one of more than `IOV_MAX` buffers, is served at once by the
/// blocking [`Batch`] path and its completion is ready at the next reap.
///
/// # Locking
///
/// A direct request holds its range of the file's range lock shared from push until it is
/// reaped. A blocking call on the same thread that needs those blocks exclusive (an unaligned
/// [`File::write_at`] on a direct file, `RWF_APPEND` at the end block) fails with `EDEADLK`
/// instead of waiting on requests only this thread can reap; reap first. An unaligned request
/// pushed here drains this queue before it runs, so it never conflicts with the queue's own
/// requests (a second queue on the same thread gets `EDEADLK` in that request's completion).
///
/// ```
/// use std::sync::Arc;
/// use vecio::{AlignedBuf, EngineKind, File, OwnedBuf, Queue, RwFlags};
/// # fn main() -> vecio::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let file = Arc::new(File::options().write(true).create(true).open(dir.path().join("f"))?);
/// let mut queue = Queue::new(EngineKind::Uring.build()?);
/// for i in 0..4u64 {
///     let buf = OwnedBuf::Aligned(AlignedBuf::page_aligned(4096));
///     queue.push_write(&file, i * 4096, vec![buf], RwFlags::empty(), i).map_err(|(e, _)| e)?;
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
    in_flight: usize,
    /// iovec arrays of finished requests, for the next ones.
    spare_iov: Vec<Vec<libc::iovec>>,
}

impl Queue {
    /// A queue over `engine`.
    pub fn new(engine: Box<dyn Engine>) -> Self {
        Queue {
            engine,
            slots: Vec::new(),
            free: Vec::new(),
            ready: Vec::new(),
            cqes: Vec::new(),
            in_flight: 0,
            spare_iov: Vec::new(),
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

    /// Queues a read of `file` at `offset` into `bufs`. On error the buffers come back.
    pub fn push_read(
        &mut self,
        file: &Arc<File>,
        offset: u64,
        bufs: Vec<OwnedBuf>,
        flags: RwFlags,
        user_data: u64,
    ) -> std::result::Result<(), (Error, Vec<OwnedBuf>)> {
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
    ) -> std::result::Result<(), (Error, Vec<OwnedBuf>)> {
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
    ) -> std::result::Result<(), (Error, Vec<OwnedBuf>)> {
        let flags = flags | file.base_flags();
        // iovec arrays are recycled from finished requests: no allocation per request.
        let mut iov = self.spare_iov.pop().unwrap_or_default();
        iov.clear();
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
        let invalid = |reason| Error::Invalid {
            path: file.shared_path(),
            request: 0,
            offset,
            reason,
        };
        if len == 0 {
            return Err((invalid(Invalid::Empty), bufs));
        }
        match dir {
            Dir::Dest if !file.is_readable() => return Err((invalid(Invalid::NotReadable), bufs)),
            Dir::Source if !file.is_writable() => {
                return Err((invalid(Invalid::NotWritable), bufs))
            }
            _ => {}
        }
        if offset
            .checked_add(len as u64)
            .is_none_or(|e| e > crate::batch::MAX_OFFSET)
        {
            return Err((invalid(Invalid::Overflow), bufs));
        }
        let pool = bufs.first().and_then(OwnedBuf::pool_id);
        let pool = pool.filter(|p| bufs.iter().all(|b| b.pool_id() == Some(*p)));
        if !self.engine_can_take(file, offset, &iov, len, flags) {
            self.run_blocking(file, offset, bufs, dir, flags, user_data);
            return Ok(());
        }
        let ticket = file
            .is_direct()
            .then(|| file.locks.shared_ticket(&[(offset, offset + len as u64)]));
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[slot] = Some(InFlight {
            file: file.clone(),
            user_data,
            offset,
            dir,
            flags,
            bufs,
            iov,
            first: 0,
            done: 0,
            pool,
            ticket,
            cmd: Cmd::Rw,
            cmd_len: 0,
        });
        self.in_flight += 1;
        if let Err(e) = self.issue(slot) {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            if let Some(f) = self.take(slot) {
                return Err((f.file.request_error(0, offset, flags, errno), f.bufs));
            }
        }
        Ok(())
    }

    fn engine_can_take(
        &self,
        file: &File,
        offset: u64,
        iov: &[libc::iovec],
        len: usize,
        flags: RwFlags,
    ) -> bool {
        if iov.len() > IOV_MAX || (file.is_direct() && flags.contains(RwFlags::APPEND)) {
            return false;
        }
        if !file.is_direct() {
            return true;
        }
        let a = file.dio_align();
        a.allows(offset, len as u64)
            && iov
                .iter()
                .all(|v| a.allows_segment(v.iov_base as usize, v.iov_len))
    }

    /// Serves a request the engine cannot take as it is, through a blocking batch. Waits for
    /// everything in flight first, so its read-modify-write cannot wait on this queue's own
    /// range locks.
    fn run_blocking(
        &mut self,
        file: &Arc<File>,
        offset: u64,
        mut bufs: Vec<OwnedBuf>,
        dir: Dir,
        flags: RwFlags,
        user_data: u64,
    ) {
        if let Err(e) = self.submit_and_wait(self.in_flight) {
            tracing::warn!("draining before a blocking request: {e}");
        }
        let result = {
            let mut slices: Vec<&mut [u8]> = bufs.iter_mut().map(OwnedBuf::as_mut_slice).collect();
            let mut engine = SyncEngine::new();
            let mut batch = Batch::new();
            let base = flags - file.base_flags();
            match dir {
                Dir::Dest => {
                    let mut io: Vec<std::io::IoSliceMut<'_>> = slices
                        .iter_mut()
                        .map(|s| std::io::IoSliceMut::new(s))
                        .collect();
                    batch.push(file, offset, IoIter::readv_into(&mut io), base);
                    batch.run(&mut engine).pop()
                }
                Dir::Source => {
                    let io: Vec<std::io::IoSlice<'_>> =
                        slices.iter().map(|s| std::io::IoSlice::new(s)).collect();
                    batch.push(file, offset, IoIter::writev_from(&io), base);
                    batch.run(&mut engine).pop()
                }
            }
        };
        let result = result.unwrap_or(Ok(0));
        self.ready.push(Completion {
            user_data,
            result,
            stopped_by: None,
            bufs,
        });
    }

    fn issue(&mut self, slot: usize) -> std::io::Result<()> {
        let Some(f) = self.slots[slot].as_ref() else {
            return Ok(());
        };
        let rest = &f.iov[f.first..];
        let op = Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*f.file),
            file_id: f.file.id(),
            offset: f.offset,
            iov: rest.as_ptr(),
            nr_segs: rest.len() as u32,
            len: match f.cmd {
                Cmd::Rw => rest.iter().map(|v| v.iov_len).sum(),
                _ => f.cmd_len,
            },
            dir: f.dir,
            flags: f.flags,
            pool: f.pool,
            tag: slot as u64,
            fast: f.file.fast_read_ptr(),
            cmd: f.cmd,
        };
        // SAFETY: the iovecs and the buffers they point into are owned by the slot, which
        // stays put (its Vec never shrinks and the slot is not reused) until the completion
        // with this tag is reaped; Queue's Drop waits for all completions.
        unsafe { self.engine.push(op) }
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

    fn finish(&mut self, slot: usize, result: impl FnOnce(&InFlight) -> Result<usize>) {
        if let Some(f) = self.take(slot) {
            let result = result(&f);
            self.spare_iov.push(f.iov);
            self.ready.push(Completion {
                user_data: f.user_data,
                result,
                stopped_by: None,
                bufs: f.bufs,
            });
        }
    }

    /// Ends a slot with the kernel's `errno`: the error itself when nothing was done, else the
    /// bytes done and the error beside them.
    fn fail(&mut self, slot: usize, errno: i32) {
        if let Some(f) = self.take(slot) {
            let e = f.file.request_error(0, f.offset, f.flags, errno);
            let (result, stopped_by) = if f.done > 0 {
                (Ok(f.done), Some(e))
            } else {
                (Err(e), None)
            };
            self.spare_iov.push(f.iov);
            self.ready.push(Completion {
                user_data: f.user_data,
                result,
                stopped_by,
                bufs: f.bufs,
            });
        }
    }

    /// Hands everything pushed to the kernel without waiting.
    pub fn submit(&mut self) -> Result<()> {
        self.submit_and_wait(0)
    }

    /// Hands everything pushed to the kernel and waits until at least `want` completions are
    /// ready to reap (counting ones ready already).
    pub fn submit_and_wait(&mut self, want: usize) -> Result<()> {
        loop {
            let have = self.ready.len();
            let need = want.saturating_sub(have).min(self.in_flight);
            self.engine
                .submit_and_wait(need)
                .map_err(|source| Error::Engine {
                    engine: self.engine.name(),
                    source,
                })?;
            self.collect();
            if self.ready.len() >= want.min(self.in_flight + self.ready.len()) || need == 0 {
                return Ok(());
            }
        }
    }

    /// Hands everything pushed to the kernel and waits up to `timeout` for at least one
    /// completion (for a server that also watches a socket); engines that cannot bound the
    /// wait wait for one.
    pub fn submit_and_wait_timeout(&mut self, timeout: std::time::Duration) -> Result<()> {
        if !self.ready.is_empty() || self.in_flight == 0 {
            return self.submit();
        }
        self.engine
            .submit_and_wait_timeout(1, timeout)
            .map_err(|source| Error::Engine {
                engine: self.engine.name(),
                source,
            })?;
        self.collect();
        Ok(())
    }

    /// Moves every finished request into `out`.
    pub fn reap(&mut self, out: &mut Vec<Completion>) {
        self.collect();
        out.append(&mut self.ready);
    }

    /// Accounts the engine's completions: finished requests become ready, short ones are
    /// issued again for their remainder.
    fn collect(&mut self) {
        self.cqes.clear();
        self.engine.reap(&mut self.cqes);
        let cqes = std::mem::take(&mut self.cqes);
        for c in &cqes {
            let slot = c.tag as usize;
            let Some(f) = self.slots.get_mut(slot).and_then(Option::as_mut) else {
                continue;
            };
            let rest: usize = f.iov[f.first..].iter().map(|v| v.iov_len).sum();
            if c.result < 0 {
                self.fail(slot, -c.result as i32);
                continue;
            }
            let finished = {
                let n = c.result as usize;
                f.done += n;
                f.offset += n as u64;
                advance(&mut f.iov, &mut f.first, n);
                if n >= rest {
                    Some(Ok(f.done))
                } else if n == 0 {
                    Some(match (f.dir, f.done) {
                        (Dir::Source, 0) => {
                            Err(f.file.request_error(0, f.offset, f.flags, libc::EIO))
                        }
                        _ => Ok(f.done),
                    })
                } else {
                    None
                }
            };
            match finished {
                Some(result) => self.finish(slot, |_| result),
                None => {
                    if let Err(e) = self.issue(slot) {
                        self.fail(slot, e.raw_os_error().unwrap_or(libc::EIO));
                    }
                }
            }
        }
        self.cqes = cqes;
    }
}

/// Drops `n` bytes from the front of `iov[*first..]`.
fn advance(iov: &mut [libc::iovec], first: &mut usize, mut n: usize) {
    while n > 0 && *first < iov.len() {
        let v = &mut iov[*first];
        if n < v.iov_len {
            // SAFETY: n < iov_len, so the new base stays inside the same buffer.
            v.iov_base = unsafe { v.iov_base.cast::<u8>().add(n) }.cast();
            v.iov_len -= n;
            n = 0;
        } else {
            n -= v.iov_len;
            *first += 1;
        }
    }
}

impl Drop for Queue {
    fn drop(&mut self) {
        // The kernel may still use buffers of requests in flight: wait for every one.
        while self.in_flight > 0 {
            if self.engine.submit_and_wait(self.in_flight).is_err() {
                break;
            }
            self.collect();
        }
        if self.in_flight > 0 {
            // The engine failed: leak the buffers rather than free memory still in use.
            for f in self.slots.drain(..).flatten() {
                std::mem::forget(f.bufs);
            }
        }
    }
}
