//! [`Batch`]: many requests submitted together and waited on together (documented on the type).

mod rmw;

use crate::direct::Bounce;
use crate::engine::{Cqe, Engine, Op, IOV_MAX};
use crate::error::{Error, Result};
use crate::rangelock::RangeGuard;
use crate::request::{validate, Progress, Step};
use crate::{Dir, File, IoIter, RwFlags};

pub(crate) struct Slot<'a> {
    pub(crate) file: &'a File,
    pub(crate) index: usize,
    /// Offset of what is left of the request.
    pub(crate) offset: u64,
    /// What is left of the request's buffers.
    pub(crate) iter: IoIter<'a>,
    pub(crate) flags: RwFlags,
    pub(crate) done: usize,
    pub(crate) outcome: Option<Result<usize>>,
    /// iovecs of this round (a trimmed window, or the bounce buffer).
    iov: Vec<libc::iovec>,
    /// An unaligned read's aligned window.
    bounce: Option<Bounce>,
    first_op: usize,
    nr_ops: usize,
}

/// Many requests submitted together and waited on together.
///
/// `Batch`: set up once, fed many requests, submitted as a whole and waited on as a whole: the
/// reworked `struct dio` of the 2002 readv/writev change, over any [`Engine`].
///
/// ```
/// use std::io::IoSlice;
/// use vecio::{Batch, EngineKind, File, IoIter, RwFlags};
/// # fn main() -> vecio::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let file = File::options().read(true).write(true).create(true)
///     .open(dir.path().join("f"))?;
/// let (a, b) = (vec![1u8; 4096], vec![2u8; 4096]);
/// let segs = [IoSlice::new(&a), IoSlice::new(&b)];
/// let mut engine = EngineKind::Uring.build()?;
/// let mut batch = Batch::new();
/// batch.push(&file, 0, IoIter::writev_from(&segs), RwFlags::empty());
/// batch.push(&file, 8192, IoIter::write_from(&a), RwFlags::DSYNC);
/// let done = batch.run(engine.as_mut());
/// assert_eq!(done[0].as_ref().ok(), Some(&8192));
/// assert_eq!(done[1].as_ref().ok(), Some(&4096));
/// # Ok(()) }
/// ```
#[derive(Default)]
pub struct Batch<'a> {
    slots: Vec<Slot<'a>>,
    /// Length of each op pushed this round, by tag.
    op_len: Vec<usize>,
    op_res: Vec<i64>,
    cqes: Vec<Cqe>,
    /// This round's ops (kept between rounds and runs for its allocation).
    ops: Vec<Op>,
}

impl<'a> Batch<'a> {
    /// An empty batch.
    pub fn new() -> Self {
        Self::default()
    }

    /// Requests queued.
    pub fn len(&self) -> usize {
        self.slots.len()
    }

    /// True when no request is queued.
    pub fn is_empty(&self) -> bool {
        self.slots.is_empty()
    }

    /// Queues a read (for a `Dest` iterator) or write (for a `Source` one) of `file` at
    /// `offset`, with `flags` added to the file's own. Returns the request's index.
    pub fn push(&mut self, file: &'a File, offset: u64, iter: IoIter<'a>, flags: RwFlags) -> usize {
        let index = self.slots.len();
        let outcome = validate(file, index, offset, iter.len(), iter.dir())
            .err()
            .map(Err);
        self.slots.push(Slot {
            file,
            index,
            offset,
            iter,
            flags: flags | file.base_flags(),
            done: 0,
            outcome,
            iov: Vec::new(),
            bounce: None,
            first_op: 0,
            nr_ops: 0,
        });
        index
    }

    /// Submits every request, waits on the lot, and returns each request's bytes moved (or
    /// error) in push order. The batch is empty afterwards and can be fed again.
    ///
    /// Short transfers are resumed for their remainder; a read stops at end of file. When a
    /// request fails after moving some bytes, it returns those bytes (as `read(2)` does) and
    /// the next call meets the error. Requests of one batch run concurrently, so overlapping
    /// writes in one batch have no defined order, as in the kernel.
    pub fn run(&mut self, engine: &mut dyn Engine) -> Vec<Result<usize>> {
        let mut out = Vec::with_capacity(self.slots.len());
        self.run_into(engine, &mut out);
        out
    }

    /// As [`run`](Self::run), appending results to `out` (no allocation once warmed up).
    pub fn run_into(&mut self, engine: &mut dyn Engine, out: &mut Vec<Result<usize>>) {
        if engine.in_flight() > 0 {
            for s in &mut self.slots {
                if s.outcome.is_none() {
                    let source = std::io::Error::from_raw_os_error(libc::EBUSY);
                    s.outcome = Some(Err(Error::Engine {
                        engine: engine.name(),
                        source,
                    }));
                }
            }
        }
        while self.slots.iter().any(|s| s.outcome.is_none()) {
            if let Err(e) = self.round(engine) {
                for s in self.slots.iter_mut().filter(|s| s.outcome.is_none()) {
                    s.outcome = Some(s.finish_err(engine_error(engine.name(), &e)));
                }
            }
        }
        out.extend(self.slots.drain(..).map(|s| s.outcome.unwrap_or(Ok(0))));
    }

    /// One round: every pending request goes to the engine once (unaligned writes first, by
    /// read-modify-write), then everything is waited on and accounted.
    fn round(&mut self, engine: &mut dyn Engine) -> std::io::Result<()> {
        self.op_len.clear();
        let mut ops = std::mem::take(&mut self.ops);
        ops.clear();
        for i in 0..self.slots.len() {
            if self.slots[i].outcome.is_some() {
                continue;
            }
            let s = &mut self.slots[i];
            let append = s.file.is_direct() && s.flags.contains(RwFlags::APPEND);
            if s.file.is_aligned_request(s.offset, &s.iter) && !append {
                s.plan_direct(&mut self.op_len, &mut ops);
            } else if s.iter.dir() == Dir::Dest {
                s.plan_bounce(&mut self.op_len, &mut ops);
            } else {
                let (n, err) = rmw::run(engine, s)?;
                s.account(n, err.map(|e| e as i64));
                s.nr_ops = 0;
            }
        }
        if ops.is_empty() {
            self.ops = ops;
            return Ok(());
        }
        let _guards = match self.lock_direct_ranges() {
            Ok(guards) => guards,
            Err(file_id) => {
                // This thread's own queued requests hold blocks of that file in the way:
                // its requests fail with EDEADLK rather than wait forever.
                self.refuse_round(file_id);
                self.ops = ops;
                return Ok(());
            }
        };
        let n = self.op_len.len();
        self.op_res.clear();
        self.op_res.resize(n, i64::MIN);
        // Ops the engine refuses (a full pool under WhenFull::WouldBlock, say) are not run:
        // they fail with the engine's errno, and everything pushed before them is waited on
        // and accounted as usual, so no request that ran is reported as failed.
        let mut pushed = 0;
        for &op in &ops {
            // SAFETY: every iovec array and buffer behind `op` lives in `self.slots` (or is
            // borrowed by it for 'a) and is not touched until the completions are reaped
            // below; on error, `drain` waits for everything pushed before returning.
            if let Err(e) = unsafe { engine.push(op) } {
                let errno = e.raw_os_error().unwrap_or(libc::EIO) as i64;
                for r in &mut self.op_res[pushed..] {
                    *r = -errno;
                }
                break;
            }
            pushed += 1;
        }
        self.ops = ops;
        let mut got = 0;
        while got < pushed {
            if let Err(e) = engine.submit_and_wait(pushed - got) {
                drain(engine, &mut self.cqes);
                return Err(e);
            }
            self.cqes.clear();
            engine.reap(&mut self.cqes);
            for c in &self.cqes {
                if let Some(r) = self.op_res.get_mut(c.tag as usize) {
                    *r = c.result;
                    got += 1;
                }
            }
        }
        for s in self
            .slots
            .iter_mut()
            .filter(|s| s.outcome.is_none() && s.nr_ops > 0)
        {
            let (n, err) = combine(
                &self.op_len[s.first_op..][..s.nr_ops],
                &self.op_res[s.first_op..][..s.nr_ops],
            );
            s.finish_round(n, err);
        }
        Ok(())
    }

    /// Shared range locks over this round's direct-I/O ranges, so no read-modify-write of an
    /// unaligned edge can interleave with a write of the same block, and no read sees the
    /// block-padded size an extending read-modify-write has for a moment. `Err(file id)` when
    /// waiting for a file's ranges could never end (the thread's own queued requests hold
    /// them exclusive).
    fn lock_direct_ranges(&self) -> std::result::Result<Vec<RangeGuard<'a>>, u64> {
        let mut guards = Vec::new();
        let mut ranges: Vec<(u64, u64)> = Vec::new();
        let mut files: Vec<&'a File> = Vec::new();
        for s in self
            .slots
            .iter()
            .filter(|s| s.in_round() && s.file.is_direct())
        {
            if !files.iter().any(|f| f.id() == s.file.id()) {
                files.push(s.file);
            }
        }
        for f in files {
            ranges.clear();
            for s in self
                .slots
                .iter()
                .filter(|s| s.in_round() && s.file.id() == f.id())
            {
                ranges.push((s.offset, s.offset + s.iter.len() as u64));
            }
            guards.push(f.locks.shared(&ranges).map_err(|_| f.id())?);
        }
        Ok(guards)
    }

    /// Ends this round's requests on `file_id` with `EDEADLK`; the others go again next round.
    fn refuse_round(&mut self, file_id: u64) {
        for s in self.slots.iter_mut().filter(|s| s.in_round()) {
            if s.file.id() == file_id {
                s.bounce = None;
                s.account(0, Some(libc::EDEADLK as i64));
            }
            s.nr_ops = 0;
        }
    }
}

/// Bytes of a request's ops done in order: whole ops count, the first short or failed op ends
/// the count (later ops' bytes are redone next round), its error kept if nothing was done.
fn combine(lens: &[usize], results: &[i64]) -> (usize, Option<i64>) {
    let mut done = 0usize;
    for (&len, &r) in lens.iter().zip(results) {
        if r < 0 {
            return (done, Some(-r));
        }
        done += r as usize;
        if (r as usize) < len {
            break;
        }
    }
    (done, None)
}

fn drain(engine: &mut dyn Engine, cqes: &mut Vec<Cqe>) {
    while engine.in_flight() > 0 {
        if engine.submit_and_wait(engine.in_flight()).is_err() {
            break;
        }
        cqes.clear();
        engine.reap(cqes);
    }
}

fn engine_error(name: &'static str, e: &std::io::Error) -> Error {
    let source = std::io::Error::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO));
    Error::Engine {
        engine: name,
        source,
    }
}

impl<'a> Slot<'a> {
    fn op(&self, tag: usize, offset: u64, iov: *const libc::iovec, nr: usize, len: usize) -> Op {
        Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(self.file),
            file_id: self.file.id(),
            offset,
            iov,
            nr_segs: nr as u32,
            len,
            dir: self.iter.dir(),
            flags: self.flags,
            pool: self.iter.pool_id(),
            tag: tag as u64,
            fast: self.file.fast_read_ptr(),
            cmd: crate::engine::Cmd::Rw,
        }
    }

    /// Ops straight over the caller's buffers, split at IOV_MAX segments.
    fn plan_direct(&mut self, op_len: &mut Vec<usize>, ops: &mut Vec<Op>) {
        self.bounce = None;
        self.first_op = op_len.len();
        let iov = self.iter.iovecs(&mut self.iov);
        let (ptr, n) = (iov.as_ptr(), iov.len());
        // SAFETY: ptr..ptr+n is the iovec array just returned; it stays put for the round.
        let iov = unsafe { std::slice::from_raw_parts(ptr, n) };
        let mut offset = self.offset;
        for chunk in iov.chunks(IOV_MAX) {
            let len: usize = chunk.iter().map(|v| v.iov_len).sum();
            ops.push(self.op(op_len.len(), offset, chunk.as_ptr(), chunk.len(), len));
            op_len.push(len);
            offset += len as u64;
        }
        self.nr_ops = op_len.len() - self.first_op;
    }

    /// One op reading the aligned window around an unaligned read into a bounce buffer.
    fn plan_bounce(&mut self, op_len: &mut Vec<usize>, ops: &mut Vec<Op>) {
        let Some(mut bounce) = Bounce::plan(self.file.dio_align(), self.offset, self.iter.len())
        else {
            // Nothing a file can hold lies in reach: end of file.
            self.nr_ops = 0;
            self.account(0, None);
            return;
        };
        let len = bounce.buf.len();
        self.iov.clear();
        self.iov.push(libc::iovec {
            iov_base: bounce.buf.as_mut_ptr().cast(),
            iov_len: len,
        });
        let start = bounce.start;
        self.bounce = Some(bounce);
        self.first_op = op_len.len();
        self.nr_ops = 1;
        let mut op = self.op(op_len.len(), start, self.iov.as_ptr(), 1, len);
        op.pool = None; // the bounce buffer is not pool memory
        ops.push(op);
        op_len.push(len);
    }

    /// Accounts a round's result, copying out of the bounce buffer for unaligned reads.
    fn finish_round(&mut self, n: usize, err: Option<i64>) {
        let n = match self.bounce.take() {
            Some(bounce) => {
                let user = bounce.user_bytes(n);
                let _ = self.iter.dup().copy_from_slice(user);
                user.len()
            }
            None => n,
        };
        self.account(n, err);
    }

    /// Moves the request on by `n` bytes and decides whether it is finished (the request
    /// core's rules; a short read that reached the end of the file is finished too).
    pub(crate) fn account(&mut self, n: usize, err: Option<i64>) {
        let rest = self.iter.len();
        self.iter.advance(n);
        let mut at = Progress {
            done: self.done,
            offset: self.offset,
            dir: self.iter.dir(),
        };
        let step = at.account(n, err.map(|e| e as i32), rest);
        let errno_at = self.offset;
        (self.done, self.offset) = (at.done, at.offset);
        self.outcome = match step {
            Step::Resume if at.at_eof(self.file) => Some(Ok(self.done)),
            Step::Resume => None,
            Step::Done { bytes, .. } => Some(Ok(bytes)),
            Step::Failed(errno) => Some(Err(self
                .file
                .request_error(self.index, errno_at, self.flags, errno))),
        };
    }

    /// True when the request has ops in the round being planned.
    fn in_round(&self) -> bool {
        self.outcome.is_none() && self.nr_ops > 0
    }

    fn finish_err(&self, e: Error) -> Result<usize> {
        if self.done > 0 {
            Ok(self.done)
        } else {
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::combine;

    #[test]
    fn combine_counts_the_contiguous_prefix() {
        assert_eq!(combine(&[10, 10, 10], &[10, 10, 10]), (30, None));
        assert_eq!(combine(&[10, 10, 10], &[10, 4, 10]), (14, None));
        assert_eq!(combine(&[10, 10], &[10, -27]), (10, Some(27)));
        assert_eq!(combine(&[10, 10], &[-5, 10]), (0, Some(5)));
    }
}

#[cfg(test)]
mod boxed_tests {
    use crate::{Batch, EngineKind, File, IoIter, RwFlags};

    #[test]
    fn a_boxed_engine_runs_a_batch_by_reference() {
        let dir = tempfile::tempdir().unwrap();
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .open(dir.path().join("f"))
            .unwrap();
        let mut engine = EngineKind::Sync.build().unwrap();
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::write_from(b"boxed"), RwFlags::empty());
        assert_eq!(batch.run(&mut engine).pop().unwrap().unwrap(), 5);
        assert_eq!(engine.counters().ops, 1);
    }
}
