//! Direct I/O a file's alignment refuses, as asynchronous stages of a [`Queue`]: `push` never
//! blocks and nothing drains. The plans are `direct/`'s, stepped one completion at a time:
//!
//! - an unaligned read reads its aligned window into a bounce buffer through the engine and
//!   copies the caller's bytes out when it completes;
//! - an unaligned write (or an `RWF_APPEND` one) holds its window (see `park.rs`), reads its
//!   partial edge blocks through the engine, copies the caller's bytes in, writes the window
//!   through the engine, and cuts back a window that grew the file.

use super::inflight::Stage;
use super::Queue;
use crate::direct::{Bounce, Rmw, RmwOp, WriteNext};
use crate::engine::Op;
use crate::request::Step;
use crate::{Dir, RwFlags};

/// Tag bits above the slot index: which op of a multi-op stage completed.
pub(super) const SUB_SHIFT: u32 = 32;

/// The `sub` of a bounce read (read-modify-write ops are 1, 2 and 3: `RmwOp::sub`).
const BOUNCE: u64 = 0;

impl Queue {
    /// Reads the aligned window around what is left of an unaligned direct read.
    pub(super) fn start_bounce(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Some(bounce) = Bounce::plan(f.file.dio_align(), f.at.offset, f.rest()) else {
            // Nothing a file can hold lies in reach: end of file.
            let rest = f.rest();
            let step = f.at.account(0, None, rest);
            return self.finish(slot, step);
        };
        let op = RmwOp {
            sub: BOUNCE,
            offset: bounce.start,
            at: 0,
            len: bounce.buf.len(),
            dir: Dir::Dest,
        };
        f.stage = Stage::Bounce(Box::new(bounce));
        self.issue(slot, op);
    }

    /// A bounce read completed: copies the caller's bytes out, then finishes or reads on.
    pub(super) fn on_bounce(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::Bounce(bounce) = std::mem::replace(&mut f.stage, Stage::Direct) else {
            return;
        };
        let rest = f.rest();
        let step = if result < 0 {
            f.at.account_result(result, rest)
        } else {
            let copied = f.copy_in(bounce.user_bytes(result as usize));
            f.advance(copied);
            f.at.account(copied, None, rest)
        };
        match step {
            Step::Resume if !f.at.at_eof(&f.file) => self.start_bounce(slot),
            Step::Resume => {
                let bytes = f.at.done;
                self.finish(slot, Step::Done { bytes, error: None })
            }
            step => self.finish(slot, step),
        }
    }

    /// Starts a read-modify-write (its window is held): reads the partial edge blocks that
    /// hold data, or, with none, writes at once.
    pub(super) fn start_rmw(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let size = match f.file.size() {
            Ok(size) => size,
            Err(e) => {
                return self.finish(slot, Step::Failed(e.raw_os_error().unwrap_or(libc::EIO)))
            }
        };
        if f.flags.contains(RwFlags::APPEND) {
            // RWF_APPEND: the offset is the end of file (held since the lock was taken).
            f.at.offset = size;
        }
        let rmw = match Rmw::new(f.file.dio_align(), f.at.offset, f.rest(), size) {
            Ok(rmw) => rmw,
            Err(errno) => return self.finish(slot, Step::Failed(errno)),
        };
        let edges: Vec<RmwOp> = rmw.edge_ops().collect();
        f.stage = Stage::Edges(Box::new(rmw));
        if edges.is_empty() {
            return self.write_back(slot);
        }
        for op in edges {
            self.issue(slot, op);
        }
    }

    /// An edge read completed; once both have, the window is written.
    pub(super) fn on_edge(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::Edges(rmw) = &mut f.stage else {
            return;
        };
        let edges = rmw.on_edge(result);
        if f.pending > 0 {
            return;
        }
        match edges {
            Some(Err(errno)) => self.finish(slot, Step::Failed(errno)),
            Some(Ok(())) => self.write_back(slot),
            None => {}
        }
    }

    /// Copies the caller's bytes into the window and writes it.
    fn write_back(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::Edges(mut rmw) = std::mem::replace(&mut f.stage, Stage::Direct) else {
            return;
        };
        f.copy_out(rmw.caller_bytes());
        let op = rmw.write_op();
        f.stage = Stage::WriteBack(rmw);
        self.issue(slot, op);
    }

    /// A window write completed: resumes a short one, else finishes the request.
    pub(super) fn on_write_back(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::WriteBack(rmw) = &mut f.stage else {
            return;
        };
        match rmw.on_write(&f.file, result) {
            WriteNext::Again => {
                let op = rmw.write_op();
                self.issue(slot, op);
            }
            WriteNext::Done { user, stop } => {
                let rest = f.rest();
                f.advance(user);
                let step = f.at.account(user, stop.filter(|_| user < rest), rest);
                self.finish(slot, step);
            }
        }
    }

    /// Pushes `op` of a request's stage over the stage's buffer (the bounce window or the
    /// read-modify-write window).
    fn issue(&mut self, slot: usize, op: RmwOp) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let iov = match &mut f.stage {
            Stage::Bounce(bounce) => libc::iovec {
                iov_base: bounce.buf.as_mut_ptr().cast(),
                iov_len: bounce.buf.len(),
            },
            Stage::Edges(rmw) | Stage::WriteBack(rmw) => rmw.iovec(&op),
            _ => return,
        };
        // Each op's iovec lives in the request's own two-entry array (on the heap, so it stays
        // put while the slot moves), until the op completes: the tail edge uses entry 1, every
        // other op entry 0 (the head edge is the only one in flight beside the tail).
        if f.op_iov.len() < 2 {
            let none = libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            };
            f.op_iov.resize(2, none);
        }
        let entry = usize::from(op.sub == 2);
        f.op_iov[entry] = iov;
        let op = Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*f.file),
            file_id: f.file.id(),
            offset: op.offset,
            iov: &f.op_iov[entry],
            nr_segs: 1,
            len: op.len,
            dir: op.dir,
            flags: f.flags - RwFlags::APPEND,
            pool: None,
            tag: slot as u64 | op.sub << SUB_SHIFT,
            fast: std::ptr::null(),
            cmd: crate::engine::Cmd::Rw,
        };
        self.push_op(slot, op);
    }
}
