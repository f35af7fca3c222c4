//! The connection's disk I/O: reads and writes pushed to its queue, each in a slot that
//! carries the request to its completion, and completions turned into replies (a short write
//! sent again for the rest). The request buffers come from a pool, registered with the ring
//! where the engine allows, and go back to it with their emptied lists.

use vecio::{AlignedBuf, BufPool, BufPoolOptions, Completion, OwnedBuf, Queue, RwFlags};

use super::reply::vecio_errno;
use super::{Closing, Conn, Pending, MAX_IN_FLIGHT};
use crate::error::Result;
use crate::export::Export;
use crate::proto::{self, CmdFlags, Command, Errno, Request};
use crate::sparse::{self, Layout};

impl Conn {
    /// Holds `req` in a free slot while its I/O is in flight; the slot's index is the I/O's
    /// user data.
    fn slot(&mut self, req: Request, cmd: Command, done: u32, retries: u8) -> usize {
        let p = Pending {
            req,
            cmd,
            done,
            retries,
            extents: None,
        };
        self.in_flight += 1;
        match self.free_slots.pop() {
            Some(i) => {
                self.pending[i] = Some(p);
                i
            }
            None => {
                self.pending.push(Some(p));
                self.pending.len() - 1
            }
        }
    }

    /// The request of slot `i`, whose I/O has completed; the slot is free again.
    fn unslot(&mut self, i: usize) -> Option<Pending> {
        let p = self.pending.get_mut(i)?.take()?;
        self.in_flight -= 1;
        self.free_slots.push(i);
        Some(p)
    }

    /// A read (of at most the maximum payload: `check` saw to it).
    pub(super) fn read(&mut self, req: Request) {
        let framing = self.session.framing;
        let len = req.len as u32;
        let sparse = framing.chunks() && !req.cmd_flags().contains(CmdFlags::DF);
        let layout = match sparse {
            true => sparse::layout(&self.export, req.offset, len),
            false => Layout::Data,
        };
        let extents = match layout {
            Layout::Hole => {
                let to = (&req).into();
                let chunk = proto::offset_hole_chunk(framing, to, req.offset, len, true);
                self.tx.push(&chunk, None);
                return;
            }
            Layout::Mixed(extents) => Some(extents),
            Layout::Data => None,
        };
        let buf = self.bufs.get(req.len as usize);
        let slot = self.slot(req, Command::Read, 0, 0);
        if let Some(Some(p)) = self.pending.get_mut(slot) {
            p.extents = extents;
        }
        let file = self.export.file().clone();
        let bufs = self.one_buf(buf);
        if let Err(vecio::PushError { error: e, bufs }) =
            self.queue
                .push_read(&file, req.offset, bufs, RwFlags::empty(), slot as u64)
        {
            self.unslot(slot);
            self.give_back(bufs);
            self.reply_error(&req, vecio_errno(&e));
        }
    }

    /// A write whose payload is in `buf` (at offset `done` into the request on a retry).
    pub(super) fn push_write(&mut self, req: Request, buf: AlignedBuf, done: u32, retries: u8) -> Result<()> {
        // An unaligned write is a read-modify-write inside the queue (edge reads, then the
        // window), waiting there, not here, for requests over its blocks: nothing drains.
        let offset = req.offset + done as u64;
        let flags = if req.cmd_flags().contains(CmdFlags::FUA) {
            RwFlags::DSYNC
        } else {
            RwFlags::empty()
        };
        let slot = self.slot(req, Command::Write, done, retries);
        let file = self.export.file().clone();
        let bufs = self.one_buf(buf);
        if let Err(vecio::PushError { error: e, bufs }) =
            self.queue
                .push_write(&file, offset, bufs, flags, slot as u64)
        {
            self.unslot(slot);
            self.give_back(bufs);
            self.reply_error(&req, vecio_errno(&e));
        }
        Ok(())
    }

    /// Turns every ready completion into a reply (or a retry of a short write).
    pub(super) fn complete(&mut self) -> Result<()> {
        self.queue.reap(&mut self.reaped);
        let mut reaped = std::mem::take(&mut self.reaped);
        let mut result = Ok(());
        for c in reaped.drain(..) {
            let Some(p) = self.unslot(c.user_data as usize) else {
                self.give_back(c.bufs);
                continue;
            };
            if p.cmd == Command::Read {
                self.read_done(p, c);
            } else if let Err(e) = self.write_done(p, c) {
                result = Err(e);
                break;
            }
        }
        // The vector's room is kept for the next reap.
        self.reaped = reaped;
        result
    }

    /// The one buffer a completed request was pushed with, its emptied list given back; `None`,
    /// with EIO answered, if the queue returned anything else.
    fn request_buf(&mut self, req: &Request, mut bufs: Vec<OwnedBuf>) -> Option<AlignedBuf> {
        let buf = match bufs.pop() {
            Some(OwnedBuf::Aligned(b)) => Some(b),
            other => {
                bufs.extend(other);
                None
            }
        };
        self.give_back(bufs);
        if buf.is_none() {
            self.reply_error(req, Errno::EIO);
        }
        buf
    }

    /// A read's completion: its data (zeroes past a short read) or its error goes out.
    fn read_done(&mut self, p: Pending, c: Completion) {
        let Some(buf) = self.request_buf(&p.req, c.bufs) else {
            return;
        };
        match c.result {
            Ok(n) => {
                let mut buf = buf;
                if n < buf.len() {
                    // The file shrank under the export: what is gone reads as zeroes, as the
                    // kernel's loop driver does for a short read.
                    buf[n..].fill(0);
                }
                match p.extents {
                    Some(ref extents) if self.closing != Some(Closing::Gone) => {
                        let (framing, to) = (self.session.framing, (&p.req).into());
                        sparse::reply(&mut self.tx, &mut self.bufs, framing, to, buf, extents);
                    }
                    _ => self.reply_read(&p.req, buf),
                }
            }
            Err(e) => {
                self.bufs.put(buf);
                self.reply_error(&p.req, vecio_errno(&e));
            }
        }
    }

    /// A write's completion: the reply, or the rest of a short write pushed again.
    fn write_done(&mut self, p: Pending, c: Completion) -> Result<()> {
        let Some(buf) = self.request_buf(&p.req, c.bufs) else {
            return Ok(());
        };
        match c.result {
            Ok(n) if n >= buf.len() => {
                self.bufs.put(buf);
                self.reply_ok(&p.req);
            }
            Ok(n) if p.retries < 4 => {
                // A short write stopped by an error: send the rest again, which either
                // finishes it or returns the error that stopped it.
                let rest = &buf[n..];
                let mut tail = self.bufs.get(rest.len());
                tail.copy_from_slice(rest);
                self.bufs.put(buf);
                self.push_write(p.req, tail, p.done + n as u32, p.retries + 1)?;
            }
            Ok(_) => {
                self.bufs.put(buf);
                self.reply_error(&p.req, Errno::EIO);
            }
            Err(e) => {
                self.bufs.put(buf);
                self.reply_error(&p.req, vecio_errno(&e));
            }
        }
        Ok(())
    }

    /// Returns a request's buffers to the pool, keeping the emptied vector for the next
    /// request's (no allocation per request).
    fn give_back(&mut self, mut bufs: Vec<OwnedBuf>) {
        for b in bufs.drain(..) {
            if let OwnedBuf::Aligned(b) = b {
                self.bufs.put(b);
            }
        }
        if self.spare.len() < MAX_IN_FLIGHT {
            self.spare.push(bufs);
        }
    }

    /// `buf` as a request's buffer list, in a vector kept from an earlier request.
    fn one_buf(&mut self, buf: AlignedBuf) -> Vec<OwnedBuf> {
        let mut v = self.spare.pop().unwrap_or_default();
        v.push(OwnedBuf::Aligned(buf));
        v
    }
}

/// Bytes of a connection's registered buffer region: room for 32 requests of 256 KiB. What
/// nbdcopy keeps in flight by default is 64 of 256 KiB: the other 32 take the pool's spill
/// arena, huge pages of the same size made on the first miss and not registered.
const REGISTERED_BYTES: usize = 8 << 20;

/// A connection's request buffers. On an engine that registers memory (io_uring) they are
/// carved first from one region registered with it, so reads and writes run as
/// `READ_FIXED`/`WRITE_FIXED` and skip pinning their pages; when registration is refused
/// (`RLIMIT_MEMLOCK` for a user without `CAP_IPC_LOCK`), the buffers still work, as ordinary
/// ones. Other engines get a pool without a region.
pub(super) fn request_buffers(id: u64, export: &Export, queue: &mut Queue) -> BufPool {
    let options = BufPoolOptions::aligned(export.buf_align());
    let pool = BufPool::new(options.with_region(REGISTERED_BYTES));
    let Some(region) = pool.region() else {
        return pool;
    };
    match queue.engine_mut().register_region(region) {
        Ok(true) => pool,
        Ok(false) => BufPool::new(options),
        Err(e) => {
            tracing::debug!(conn = id, "buffers not registered: {e}");
            pool
        }
    }
}
