//! The backing file: ublk requests as vecio [`Queue`] requests on a vecio [`File`], over the
//! queue thread's ring ([`engine::RingEngine`]). This module and `engine` are the only users of
//! vecio's File, Queue and Engine API in the crate.

pub(crate) mod engine;

use std::os::fd::AsRawFd;
use std::sync::Arc;

use vecio::file::FallocateFlags;
use vecio::{AlignedBuf, Completion, Direct, File, OwnedBuf, Queue, RwFlags};

use crate::error::Result;
use crate::options::{Cache, Options};
use crate::request::Request;

/// Opens the backing file as `opts` say: read-write unless read-only, direct unless
/// `--cache=writeback`.
pub(crate) fn open(opts: &Options) -> Result<File> {
    let direct = match opts.cache {
        Cache::None => Direct::On,
        Cache::Writeback => Direct::Off,
    };
    Ok(File::options()
        .read(true)
        .write(!opts.read_only)
        .direct(direct)
        .open(&opts.file)?)
}

/// Marks a read's user data (beside its tag in the low 16 bits).
const READ: u64 = 1 << 16;

/// A finished request: its tag, the result for `COMMIT_AND_FETCH` (bytes or `-errno`) and the
/// tag's buffer back when the request had taken it.
pub(crate) struct Done {
    /// The ublk tag.
    pub tag: u16,
    /// Bytes moved, 0 for commands, or `-errno`.
    pub result: i32,
    /// The tag's buffer, when the request carried data.
    pub buf: Option<AlignedBuf>,
}

/// One queue thread's view of the backing file.
pub(crate) struct Backend {
    file: Arc<File>,
    queue: Queue,
    done: Vec<Completion>,
}

impl Backend {
    /// A backend on this thread's ublk ring; `fixed_slot` is the backing file's fixed-file
    /// slot in that ring, when it has one.
    pub(crate) fn new(file: Arc<File>, fixed_slot: Option<u32>) -> Self {
        let fixed = fixed_slot.map(|s| (file.as_raw_fd(), s));
        let queue = Queue::new(Box::new(engine::RingEngine::new(fixed)));
        Backend {
            file,
            queue,
            done: Vec::new(),
        }
    }

    /// Starts `req` for `tag`. A data request takes the tag's buffer out of `slot` (its
    /// length set to the request's) until its [`Done`]; a command leaves it. A request refused
    /// at once gives the buffer back to `slot` and returns its `-errno`.
    pub(crate) fn push(
        &mut self,
        tag: u16,
        req: Request,
        slot: &mut Option<AlignedBuf>,
    ) -> Result<(), i32> {
        let user_data = tag as u64;
        let (file, queue) = (&self.file, &mut self.queue);
        let refused = |slot: &mut Option<AlignedBuf>, e: vecio::PushError| {
            *slot = take_buf(e.bufs);
            -errno(&e.error)
        };
        let command = |r: vecio::Result<()>| r.map_err(|e| -errno(&e));
        match req {
            Request::Read { offset, len } => {
                let bufs = data_bufs(slot, len)?;
                queue
                    .push_read(file, offset, bufs, RwFlags::empty(), user_data | READ)
                    .map_err(|e| refused(slot, e))
            }
            Request::Write { offset, len, fua } => {
                let bufs = data_bufs(slot, len)?;
                let flags = if fua {
                    RwFlags::DSYNC
                } else {
                    RwFlags::empty()
                };
                queue
                    .push_write(file, offset, bufs, flags, user_data)
                    .map_err(|e| refused(slot, e))
            }
            Request::Flush => command(queue.push_fsync(file, true, user_data)),
            Request::Discard { offset, len }
            | Request::WriteZeroes {
                offset,
                len,
                unmap: true,
            } => {
                let mode = FallocateFlags::PUNCH_HOLE | FallocateFlags::KEEP_SIZE;
                command(queue.push_fallocate(file, mode, offset, len as u64, user_data))
            }
            Request::WriteZeroes {
                offset,
                len,
                unmap: false,
            } => {
                let mode = FallocateFlags::ZERO_RANGE | FallocateFlags::KEEP_SIZE;
                command(queue.push_fallocate(file, mode, offset, len as u64, user_data))
            }
            Request::Unsupported(_) => Err(-libc::EOPNOTSUPP),
        }
    }

    /// Hands everything pushed to the ring's submission queue (the queue loop submits it).
    pub(crate) fn submit(&mut self) -> Result<()> {
        Ok(self.queue.submit()?)
    }

    /// Requests waiting for a range of the file that another queue's requests hold.
    pub(crate) fn parked(&self) -> usize {
        self.queue.parked()
    }

    /// Moves every finished request into `out`.
    pub(crate) fn reap(&mut self, out: &mut Vec<Done>) {
        self.queue.reap(&mut self.done);
        out.extend(self.done.drain(..).map(done));
    }
}

/// The tag's buffer as a request's one buffer of `len` bytes.
fn data_bufs(slot: &mut Option<AlignedBuf>, len: u32) -> Result<Vec<OwnedBuf>, i32> {
    let mut buf = slot.take().ok_or(-libc::EBUSY)?;
    if !buf.set_len(len as usize) {
        *slot = Some(buf);
        return Err(-libc::EINVAL);
    }
    Ok(vec![OwnedBuf::Aligned(buf)])
}

/// A vecio completion as the result ublk wants: a read cut short by the end of the file is
/// zero-filled to its full length (as the kernel's loop device does); a write cut short, or a
/// request that failed, reports the kernel's errno (EIO when there is none).
fn done(c: Completion) -> Done {
    let tag = c.user_data as u16;
    let is_read = c.user_data & READ != 0;
    let mut buf = take_buf(c.bufs);
    let result = match (c.result, c.stopped_by, buf.as_mut()) {
        (Err(e), _, _) | (Ok(_), Some(e), _) => -errno(&e),
        (Ok(_), None, None) => 0,
        (Ok(n), None, Some(b)) if n == b.len() => n as i32,
        (Ok(n), None, Some(b)) if is_read => {
            b[n..].fill(0);
            b.len() as i32
        }
        (Ok(_), None, Some(_)) => -libc::EIO,
    };
    Done { tag, result, buf }
}

/// The errno a failed request reports to the block layer (EIO when vecio names none).
fn errno(e: &vecio::Error) -> i32 {
    e.raw_os_error().unwrap_or(libc::EIO)
}

/// The one aligned buffer a request carried.
fn take_buf(bufs: Vec<OwnedBuf>) -> Option<AlignedBuf> {
    bufs.into_iter().find_map(|b| match b {
        OwnedBuf::Aligned(a) => Some(a),
        _ => None,
    })
}
