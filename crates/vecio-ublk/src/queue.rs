//! One hardware queue: a thread whose io_uring (libublk's, one per queue thread) carries both
//! the ublk commands (`FETCH_REQ`, `COMMIT_AND_FETCH_REQ`) and the backing file's I/O, all
//! submitted and waited on with one `io_uring_enter` per round.
//!
//! Each round: libublk submits what is queued and waits; every completion is either a new
//! request (a tag whose descriptor is ready) or a backing-file op. A read or write the file
//! takes as it is goes straight to the ring on the tag's buffer ([`crate::straight`]); anything
//! else goes to the vecio queue. Finished ones are committed with their result and the tag's
//! buffer address, which also fetches the tag's next request.
//!
//! Buffers: each tag has an aligned buffer of the device's largest request, lent to the vecio
//! queue while a data request is in flight. They are carved from one region per queue (a
//! `BufPool` of depth x largest request), which vecio maps in huge pages where the kernel has
//! them: a 512 KiB request is then one or two segments at the backing disk rather than 128
//! pages, so adjacent requests merge up to the disk's size limit, not its segment limit. The first `FETCH_REQ` must carry libublk's own
//! buffers (`IoBuf`); every commit after it names the tag's vecio buffer, so from its second
//! request on a tag's data lands straight in the buffer vecio reads and writes. A tag's first
//! write is copied over from the fetch buffer, once.

use std::sync::Arc;

use libublk::helpers::IoBuf;
use libublk::io::{BufDesc, BufDescList, UblkDev, UblkQueue};
use libublk::{sys, UblkError, UblkIORes};
use vecio::{AlignedBuf, BufPool, BufPoolOptions, File, PAGE_SIZE};

use crate::backend::engine::{Inbox, TARGET};
use crate::backend::{Backend, Done};
use crate::error::{Error, Result};
use crate::request::Request;
use crate::straight::{Straight, STRAIGHT};

/// User data of the queue's retry timer (beside libublk's target bit).
const TIMER: u64 = 1 << 61;
/// How long a request parked behind another queue's range waits before it is retried.
static RETRY: io_uring::types::Timespec = io_uring::types::Timespec::new().nsec(1_000_000);

/// What every queue thread shares.
pub(crate) struct Shared {
    /// The backing file.
    pub file: Arc<File>,
    /// Its fixed-file slot in every queue ring (libublk registers `tgt.fds`).
    pub fixed_slot: Option<u32>,
}

/// Serves queue `qid` of `dev` until the device stops; errors are logged (the queue's thread
/// has no one to return them to; the device then fails its requests).
pub(crate) fn serve(qid: u16, dev: &UblkDev, shared: &Shared) {
    if let Err(e) = run(qid, dev, shared) {
        tracing::error!("{e}");
    }
}

fn run(qid: u16, dev: &UblkDev, shared: &Shared) -> Result<()> {
    let id = dev.dev_info.dev_id;
    let err = |what| {
        move |source| Error::Queue {
            dev: id,
            queue: qid,
            what,
            source,
        }
    };
    let q = UblkQueue::new(qid, dev).map_err(err("setting up"))?;
    let fetch_bufs = dev.alloc_queue_io_bufs();
    let q = q
        .submit_fetch_commands_unified(BufDescList::Slices(Some(&fetch_bufs)))
        .map_err(err("fetching requests"))?;
    let mut server = Server::new(shared, dev, &fetch_bufs);
    loop {
        let round = q.flush_and_wake_io_tasks(|data, cqe, _| server.on_cqe(data, cqe.result()), 1);
        match round {
            Ok(_) => {}
            Err(UblkError::QueueIsDown) => break,
            Err(UblkError::IOError(e)) if e.raw_os_error() == Some(libc::EINTR) => {}
            Err(e) => return Err(err("waiting for requests")(e)),
        }
        server.serve(&q);
    }
    tracing::debug!("ublk device {id} queue {qid}: stopped");
    Ok(())
}

/// The queue thread's state between rounds.
struct Server<'a> {
    backend: Backend,
    straight: Straight,
    /// Straight ops completed this round: tag and result.
    straight_done: Vec<(u16, i32)>,
    /// Each tag's buffer, `None` before its first request and while a data request has lent
    /// it to the backend.
    bufs: Vec<Option<AlignedBuf>>,
    /// Where the tags' buffers come from.
    pool: BufPool,
    /// Bytes of each buffer: the device's largest request.
    buf_size: usize,
    /// Tags whose next request still lands in libublk's fetch buffer.
    first: Vec<bool>,
    fetch_bufs: &'a [IoBuf<u8>],
    /// Tags with a new request this round.
    incoming: Vec<u16>,
    done: Vec<Done>,
    timer_armed: bool,
}

impl<'a> Server<'a> {
    fn new(shared: &Shared, dev: &UblkDev, fetch_bufs: &'a [IoBuf<u8>]) -> Self {
        let depth = dev.dev_info.queue_depth as usize;
        let size = dev.dev_info.max_io_buf_bytes as usize;
        Server {
            backend: Backend::new(shared.file.clone(), shared.fixed_slot),
            straight: Straight::new(&shared.file, shared.fixed_slot, depth),
            straight_done: Vec::with_capacity(depth),
            bufs: (0..depth).map(|_| None).collect(),
            pool: BufPool::new(BufPoolOptions::aligned(PAGE_SIZE).with_region(depth * size)),
            buf_size: size,
            first: vec![true; depth],
            fetch_bufs,
            incoming: Vec::with_capacity(depth),
            done: Vec::with_capacity(depth),
            timer_armed: false,
        }
    }

    /// One completion from the ring: a straight op, a backing-file op, the retry timer, or a
    /// new request.
    fn on_cqe(&mut self, user_data: u64, result: i32) {
        if user_data == TIMER | TARGET {
            self.timer_armed = false;
        } else if user_data & (STRAIGHT | TARGET) == STRAIGHT | TARGET {
            self.straight_done.push((user_data as u16, result));
        } else if user_data & TARGET != 0 {
            Inbox::post(user_data, result);
        } else if result == sys::UBLK_IO_RES_OK as i32 {
            self.incoming.push(user_data as u16);
        }
        // Anything else is UBLK_IO_RES_ABORT: the queue is stopping (libublk counts it).
    }

    /// After a round: finishes the straight ops, starts the new requests, commits the finished
    /// ones.
    fn serve(&mut self, q: &UblkQueue) {
        for i in 0..self.straight_done.len() {
            let (tag, result) = self.straight_done[i];
            let Some(buf) = self.bufs[tag as usize].as_mut() else {
                continue;
            };
            if let Some(result) = self.straight.finish(tag, result, buf) {
                self.commit(q, tag, result);
            }
        }
        self.straight_done.clear();
        for i in 0..self.incoming.len() {
            let tag = self.incoming[i];
            self.start(q, tag);
        }
        self.incoming.clear();
        if let Err(e) = self.backend.submit() {
            tracing::error!("ublk queue {}: {e}", q.get_qid());
        }
        self.backend.reap(&mut self.done);
        for d in std::mem::take(&mut self.done) {
            if let Some(b) = d.buf {
                self.bufs[d.tag as usize] = Some(b);
            }
            self.commit(q, d.tag, d.result);
        }
        if self.backend.parked() > 0 && !self.timer_armed {
            self.arm_timer();
        }
    }

    /// Starts the request now in `tag`'s descriptor.
    fn start(&mut self, q: &UblkQueue, tag: u16) {
        let t = tag as usize;
        let req = Request::decode(q.get_iod(tag));
        let size = self.buf_size;
        let buf = self.bufs[t].get_or_insert_with(|| self.pool.get(size));
        if std::mem::take(&mut self.first[t]) {
            if let Request::Write { len, .. } = req {
                let len = (len as usize).min(size);
                buf.set_len(len);
                buf.copy_from_slice(&self.fetch_bufs[t][..len]);
            }
        }
        let straight = match req {
            Request::Read { offset, len } => Some((false, false, offset, len)),
            Request::Write { offset, len, fua } => Some((true, fua, offset, len)),
            _ => None,
        };
        let result = match straight {
            Some((write, fua, offset, len))
                if len as usize <= size && self.straight.takes(offset, len) =>
            {
                self.straight.start(tag, write, fua, offset, len, buf)
            }
            _ => self.backend.push(tag, req, &mut self.bufs[t]),
        };
        if let Err(result) = result {
            self.commit(q, tag, result);
        }
    }

    /// `COMMIT_AND_FETCH_REQ` for `tag` with `result`, naming the tag's buffer for its next
    /// request (and, for a read, as the data of this one).
    fn commit(&mut self, q: &UblkQueue, tag: u16, result: i32) {
        let size = self.buf_size;
        let buf = self.bufs[tag as usize].get_or_insert_with(|| self.pool.get(size));
        let addr = BufDesc::RawAddress(buf.as_ptr());
        if let Err(e) = q.complete_io_cmd_unified(tag, addr, Ok(UblkIORes::Result(result))) {
            tracing::error!("ublk queue {} tag {tag}: commit: {e}", q.get_qid());
        }
    }

    /// A one-shot timeout in the ring, so a request parked behind another queue's range is
    /// retried even when nothing else completes on this queue.
    fn arm_timer(&mut self) {
        let sqe = io_uring::opcode::Timeout::new(&RETRY)
            .build()
            .user_data(TIMER | TARGET);
        let pushed = libublk::io::with_task_io_ring_mut(|ring| {
            // SAFETY: the entry points at RETRY, a static that outlives the ring.
            unsafe { ring.submission().push(&sqe) }.is_ok()
        });
        self.timer_armed = pushed;
    }
}
