//! Direct I/O a file's alignment refuses, as asynchronous stages of a [`Queue`]: `push` never
//! blocks and nothing drains.
//!
//! - An unaligned read reads the aligned window around it into a bounce buffer through the
//!   engine, and copies the caller's bytes out when it completes.
//! - An unaligned write (or an `RWF_APPEND` one) holds its window exclusive (see `park.rs`),
//!   reads the partial edge blocks through the engine, copies the caller's bytes in, then
//!   writes the whole window through the engine; a window that grew the file past the
//!   request's end is cut back.
//!
//! Edges are read with direct I/O too, so the page cache never serves these bytes.

use super::inflight::{Rmw, Stage};
use super::Queue;
use crate::engine::Op;
use crate::request::{window_end, Step};
use crate::{AlignedBuf, Dir, RwFlags};

/// Tag bits above the slot index: which op of a multi-op stage completed.
pub(super) const SUB_SHIFT: u32 = 32;

impl Queue {
    /// Reads the aligned window around what is left of an unaligned direct read.
    pub(super) fn start_bounce(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let a = f.file.dio_align();
        let bs = a.offset as u64;
        let start = f.at.offset / bs * bs;
        let end = window_end(f.at.offset + f.rest() as u64, bs);
        if end <= start {
            // Nothing a file can hold lies in reach: end of file.
            let rest = f.rest();
            let step = f.at.account(0, None, rest);
            return self.finish(slot, step);
        }
        let buf = AlignedBuf::new((end - start) as usize, a.mem as usize);
        f.stage = Stage::Bounce { start, buf };
        self.issue_stage_op(slot, 0);
    }

    /// A bounce read completed: copies the caller's bytes out, then finishes or reads on.
    pub(super) fn on_bounce(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::Bounce { start, buf } = std::mem::replace(&mut f.stage, Stage::Direct) else {
            return;
        };
        let rest = f.rest();
        let step = if result < 0 {
            f.at.account_result(result, rest)
        } else {
            let head = (f.at.offset - start) as usize;
            let got = (result as usize).saturating_sub(head).min(rest);
            let copied = f.copy_in(&buf[head..head + got]);
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
        let a = f.file.dio_align();
        let bs = a.offset as u64;
        let len = f.rest();
        let offset = f.at.offset;
        let end_req = offset + len as u64;
        let (start, end) = (offset / bs * bs, window_end(end_req, bs));
        if end < end_req {
            // The aligned window would pass the largest file offset.
            return self.finish(slot, Step::Failed(libc::EFBIG));
        }
        let mut rmw = Rmw {
            start,
            window: AlignedBuf::new((end - start) as usize, a.mem as usize),
            head: (offset - start) as usize,
            len,
            size,
            edges_left: 0,
            edge_error: None,
            written: 0,
        };
        let head_edge = offset != start && start < size;
        let tail_block = end - bs;
        let tail_edge = end_req != end && tail_block < size && !(tail_block == start && head_edge);
        rmw.edges_left = head_edge as u8 + tail_edge as u8;
        f.stage = Stage::Edges(rmw);
        if rmw_edges_left(f) == 0 {
            return self.write_back(slot);
        }
        if head_edge {
            self.issue_stage_op(slot, 1);
        }
        if tail_edge {
            self.issue_stage_op(slot, 2);
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
        rmw.edges_left = rmw.edges_left.saturating_sub(1);
        if result < 0 && rmw.edge_error.is_none() {
            rmw.edge_error = Some(-result as i32);
        }
        if rmw.edges_left > 0 || f.pending > 0 {
            return;
        }
        match rmw.edge_error {
            Some(errno) => self.finish(slot, Step::Failed(errno)),
            None => self.write_back(slot),
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
        let (head, len) = (rmw.head, rmw.len);
        f.copy_out(&mut rmw.window[head..head + len]);
        f.stage = Stage::WriteBack(rmw);
        self.issue_stage_op(slot, 3);
    }

    /// A window write completed: resumes a short one, else finishes the request.
    pub(super) fn on_write_back(&mut self, slot: usize, result: i64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let Stage::WriteBack(rmw) = &mut f.stage else {
            return;
        };
        let stop = match result {
            r if r < 0 => Some(-r as i32),
            0 => Some(libc::EIO),
            r => {
                rmw.written += r as usize;
                if rmw.written < rmw.window.len() {
                    return self.issue_stage_op(slot, 3);
                }
                None
            }
        };
        let user = rmw.written.saturating_sub(rmw.head).min(rmw.len);
        let new_end = rmw.start + rmw.written as u64;
        let req_end = f.at.offset + user as u64;
        let mut stop = stop;
        if new_end > rmw.size && new_end > req_end {
            // The window grew the file past the request's end: cut it back (the blocks from
            // there on are held).
            if let Err(e) = f.file.set_len_unlocked(rmw.size.max(req_end)) {
                stop = stop.or(e.raw_os_error());
            }
        }
        let rest = f.rest();
        f.advance(user);
        let step = f.at.account(user, stop.filter(|_| user < rest), rest);
        self.finish(slot, step);
    }

    /// Pushes op `sub` of a request's stage: 0 the bounce read, 1 and 2 the head and tail
    /// edge reads, 3 the window write (from what is written so far).
    pub(super) fn issue_stage_op(&mut self, slot: usize, sub: u64) {
        let Some(f) = self.slots[slot].as_mut() else {
            return;
        };
        let (offset, at, len, dir) = match &mut f.stage {
            Stage::Bounce { start, buf } => (*start, 0, buf.len(), Dir::Dest),
            Stage::Edges(rmw) => {
                let bs = f.file.dio_align().offset as usize;
                let at = if sub == 1 { 0 } else { rmw.window.len() - bs };
                (rmw.start + at as u64, at, bs, Dir::Dest)
            }
            Stage::WriteBack(rmw) => (
                rmw.start + rmw.written as u64,
                rmw.written,
                rmw.window.len() - rmw.written,
                Dir::Source,
            ),
            _ => return,
        };
        let base = match &mut f.stage {
            Stage::Bounce { buf, .. } => buf.as_mut_ptr(),
            Stage::Edges(rmw) | Stage::WriteBack(rmw) => rmw.window.as_mut_ptr(),
            _ => return,
        };
        // Each op's iovec lives in the request's own two-entry array (on the heap, so it stays
        // put while the slot moves), until the op completes: the head edge uses entry 0, the
        // tail edge entry 1, the single op of other stages entry 0.
        if f.op_iov.len() < 2 {
            let none = libc::iovec {
                iov_base: std::ptr::null_mut(),
                iov_len: 0,
            };
            f.op_iov.resize(2, none);
        }
        let entry = usize::from(sub == 2);
        f.op_iov[entry] = libc::iovec {
            // SAFETY: at + len lies inside the stage's buffer.
            iov_base: unsafe { base.add(at) }.cast(),
            iov_len: len,
        };
        let op = Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*f.file),
            file_id: f.file.id(),
            offset,
            iov: &f.op_iov[entry],
            nr_segs: 1,
            len,
            dir,
            flags: f.flags - RwFlags::APPEND,
            pool: None,
            tag: slot as u64 | sub << SUB_SHIFT,
            fast: std::ptr::null(),
            cmd: crate::engine::Cmd::Rw,
        };
        self.push_op(slot, op);
    }
}

fn rmw_edges_left(f: &super::inflight::InFlight) -> u8 {
    match &f.stage {
        Stage::Edges(rmw) => rmw.edges_left,
        _ => 0,
    }
}
