//! Whole-file commands through a [`Queue`]: `fsync`, `fdatasync` and `fallocate`, so a server
//! keeps one ring for everything and never drains it before a flush or a trim.

use std::sync::Arc;

use rustix::fs::FallocateFlags;

use super::inflight::{InFlight, Plan, Stage};
use super::Queue;
use crate::engine::{Cmd, Op};
use crate::error::{Error, Invalid};
use crate::request::{Progress, Step};
use crate::{Dir, File, RwFlags};

impl Queue {
    /// Queues an `fsync(2)` of `file` (`fdatasync(2)` when `data_only`): it completes with
    /// `Ok(0)` once everything written before it *completed* is on stable storage. Like the
    /// kernel's `IORING_OP_FSYNC`, it does not wait for writes still in flight beside it: reap
    /// those first when they must be covered.
    pub fn push_fsync(
        &mut self,
        file: &Arc<File>,
        data_only: bool,
        user_data: u64,
    ) -> crate::Result<()> {
        let cmd = if data_only {
            Cmd::Fdatasync
        } else {
            Cmd::Fsync
        };
        self.push_cmd(file, cmd, 0, 0, user_data)
    }

    /// Queues an `fallocate(2)` of `len` bytes at `offset` with `mode` (allocate, or
    /// `PUNCH_HOLE | KEEP_SIZE`, `ZERO_RANGE`, ...); it completes with `Ok(0)`.
    ///
    /// It holds the whole blocks it touches exclusive, as [`File::fallocate`] does, so no
    /// read-modify-write can write stale bytes over a punched or zeroed range: it waits,
    /// parked in the queue, for requests over those blocks, and goes through the engine like
    /// any request (`IORING_OP_FALLOCATE` on io_uring). Nothing drains.
    pub fn push_fallocate(
        &mut self,
        file: &Arc<File>,
        mode: FallocateFlags,
        offset: u64,
        len: u64,
        user_data: u64,
    ) -> crate::Result<()> {
        let invalid = |reason| Error::Invalid {
            path: file.shared_path(),
            request: 0,
            offset,
            reason,
        };
        if len == 0 {
            return Err(invalid(Invalid::Empty));
        }
        if !file.is_writable() {
            return Err(invalid(Invalid::NotWritable));
        }
        let Some(len) = usize::try_from(len).ok().filter(|_| {
            offset
                .checked_add(len)
                .is_some_and(|e| e <= crate::file::MAX_OFFSET)
        }) else {
            return Err(invalid(Invalid::Overflow));
        };
        self.push_cmd(
            file,
            Cmd::Fallocate(mode.bits() as i32),
            offset,
            len,
            user_data,
        )
    }

    fn push_cmd(
        &mut self,
        file: &Arc<File>,
        cmd: Cmd,
        offset: u64,
        len: usize,
        user_data: u64,
    ) -> crate::Result<()> {
        let iov = self.spare_iov.take();
        let slot = self.new_slot(InFlight {
            file: file.clone(),
            user_data,
            at: Progress::new(offset, Dir::Source),
            flags: RwFlags::empty(),
            bufs: Vec::new(),
            iov,
            first: 0,
            pool: None,
            ticket: None,
            stage: Stage::Parked,
            plan: Plan::Command(cmd, len),
            pending: 0,
            op_iov: Vec::new(),
        });
        self.admit(slot);
        self.take_back_if_refused(slot).map_err(|e| e.error)
    }

    /// Pushes a request's command.
    pub(super) fn issue_command(&mut self, slot: usize) {
        let Some(f) = self.slots[slot].as_ref() else {
            return;
        };
        let Stage::Command { cmd, len } = f.stage else {
            return;
        };
        let op = Op {
            fd: std::os::fd::AsRawFd::as_raw_fd(&*f.file),
            file_id: f.file.id(),
            offset: f.at.offset,
            iov: std::ptr::null(),
            nr_segs: 0,
            len,
            dir: Dir::Source,
            flags: RwFlags::empty(),
            pool: None,
            tag: slot as u64,
            fast: std::ptr::null(),
            cmd,
        };
        self.push_op(slot, op);
    }

    /// A command completed.
    pub(super) fn on_command(&mut self, slot: usize, result: i64) {
        let step = if result < 0 {
            Step::Failed(-result as i32)
        } else {
            Step::Done {
                bytes: 0,
                error: None,
            }
        };
        self.finish(slot, step);
    }
}
