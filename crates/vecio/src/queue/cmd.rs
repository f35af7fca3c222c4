//! Whole-file commands through a [`Queue`]: `fsync`, `fdatasync` and `fallocate`, so a server
//! keeps one ring for everything and never drains it before a flush or a trim.

use std::sync::Arc;

use rustix::fs::FallocateFlags;

use super::{Completion, InFlight, Queue};
use crate::engine::Cmd;
use crate::error::{Error, Invalid};
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
    /// On a buffered file it goes through the engine like any request. On a direct file it
    /// must hold its blocks exclusive against read-modify-writes (see `docs/engine.md`,
    /// "Locking rules"), so for now it waits for this queue's requests in flight and runs as
    /// the blocking, locked [`File::fallocate`]; its completion is ready at the next reap.
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
                .is_some_and(|e| e <= crate::batch::MAX_OFFSET)
        }) else {
            return Err(invalid(Invalid::Overflow));
        };
        if !file.is_direct() {
            return self.push_cmd(
                file,
                Cmd::Fallocate(mode.bits() as i32),
                offset,
                len,
                user_data,
            );
        }
        if let Err(e) = self.submit_and_wait(self.in_flight) {
            tracing::warn!("draining before a blocking fallocate: {e}");
        }
        let result = file
            .fallocate(mode, offset, len as u64)
            .map(|()| 0)
            .map_err(|e| {
                let errno = e.raw_os_error().unwrap_or(libc::EIO);
                file.request_error(0, offset, RwFlags::empty(), errno)
            });
        self.ready.push(Completion {
            user_data,
            result,
            stopped_by: None,
            bufs: Vec::new(),
        });
        Ok(())
    }

    fn push_cmd(
        &mut self,
        file: &Arc<File>,
        cmd: Cmd,
        offset: u64,
        len: usize,
        user_data: u64,
    ) -> crate::Result<()> {
        let mut iov = self.spare_iov.pop().unwrap_or_default();
        iov.clear();
        let slot = self.free.pop().unwrap_or_else(|| {
            self.slots.push(None);
            self.slots.len() - 1
        });
        self.slots[slot] = Some(InFlight {
            file: file.clone(),
            user_data,
            offset,
            dir: Dir::Source,
            flags: RwFlags::empty(),
            bufs: Vec::new(),
            iov,
            first: 0,
            done: 0,
            pool: None,
            ticket: None,
            cmd,
            cmd_len: len,
        });
        self.in_flight += 1;
        if let Err(e) = self.issue(slot) {
            let errno = e.raw_os_error().unwrap_or(libc::EIO);
            self.take(slot);
            return Err(file.request_error(0, offset, RwFlags::empty(), errno));
        }
        Ok(())
    }
}
