//! The io_uring engine: a batch goes to the kernel with one `io_uring_enter` and is waited on
//! as a whole; files are used through fixed-file slots and vecio page pools through
//! registered buffers.

use std::io;
use std::os::fd::{AsRawFd, BorrowedFd, RawFd};
use std::sync::Arc;

use io_uring::{opcode, squeue, types, IoUring};

use crate::engine::fixed_files::SlotTable;
use crate::engine::{Counters, Cqe, Engine, Op};
use crate::{Dir, Region};

/// Settings of a [`UringEngine`].
#[derive(Clone, Copy, Debug)]
pub struct UringOptions {
    /// Submission queue entries (the completion queue gets twice as many).
    pub entries: u32,
    /// Fixed-file slots; 0 turns fixed files off.
    pub fixed_files: u32,
    /// Registered-buffer slots for page pools; 0 turns registered buffers off.
    pub fixed_buffers: u32,
    /// `IORING_SETUP_SINGLE_ISSUER | IORING_SETUP_DEFER_TASKRUN`: completions are processed
    /// only when this thread waits, with no interrupting task work. Only for an engine that
    /// stays on the thread that created it (a ring per thread); from any other thread every
    /// submission fails with `EEXIST`.
    pub single_thread: bool,
}

impl Default for UringOptions {
    fn default() -> Self {
        UringOptions {
            entries: 256,
            fixed_files: 64,
            fixed_buffers: 8,
            single_thread: false,
        }
    }
}

/// io_uring engine (see the module docs).
pub struct UringEngine {
    ring: IoUring,
    opts: UringOptions,
    /// (file id, fd) this thread registered in each fixed-file slot: the lock-free lookup of
    /// the hot path. A slot released by another thread (its file dropped) may still show here;
    /// no op of a dropped file can come again, and a miss consults `slots`.
    files: Vec<Option<(u64, RawFd)>>,
    /// The ring's slots as every thread sees them; `File`'s drop clears its slots through it.
    slots: Arc<SlotTable>,
    next_victim: usize,
    /// Regions registered as fixed buffers, by buffer index.
    pools: Vec<Region>,
    queued: usize,
    in_flight: usize,
    counters: Counters,
    /// The eventfd registered with the ring, kept open as long as the ring uses it.
    eventfd: Option<Arc<std::os::fd::OwnedFd>>,
}

// SAFETY: the ring is only used through &mut self; the raw pointers inside ops are the
// pusher's responsibility (Engine::push), not tied to the creating thread.
unsafe impl Send for UringEngine {}

impl UringEngine {
    /// Sets up a ring (`io_uring_setup(2)`) and its fixed-file and buffer tables.
    pub fn new(opts: UringOptions) -> crate::Result<Self> {
        let err = |source| crate::Error::Engine {
            engine: "uring",
            source,
        };
        let mut builder = IoUring::builder();
        if opts.single_thread {
            builder.setup_single_issuer().setup_defer_taskrun();
        } else {
            builder.setup_coop_taskrun();
        }
        let ring = builder
            .build(opts.entries)
            .or_else(|_| IoUring::new(opts.entries))
            .map_err(err)?;
        let mut opts = opts;
        if opts.fixed_files > 0
            && ring
                .submitter()
                .register_files_sparse(opts.fixed_files)
                .is_err()
        {
            opts.fixed_files = 0;
        }
        if opts.fixed_buffers > 0
            && ring
                .submitter()
                .register_buffers_sparse(opts.fixed_buffers)
                .is_err()
        {
            opts.fixed_buffers = 0;
        }
        Ok(UringEngine {
            slots: SlotTable::new(ring.as_raw_fd(), opts.fixed_files),
            ring,
            files: vec![None; opts.fixed_files as usize],
            opts,
            next_victim: 0,
            pools: Vec::new(),
            queued: 0,
            in_flight: 0,
            counters: Counters::default(),
            eventfd: None,
        })
    }

    /// The fixed-file slot of `file_id`, registering `fd` in a slot if it has none.
    fn slot_for(&mut self, file_id: u64, fd: RawFd) -> Option<u32> {
        if self.files.is_empty() {
            return None;
        }
        if let Some(i) = self
            .files
            .iter()
            .position(|s| matches!(s, Some((id, f)) if *id == file_id && *f == fd))
        {
            return Some(i as u32);
        }
        self.clear_deferred();
        let i = match self.slots.free_slot() {
            Some(i) => i as usize,
            None => {
                // Only replace a slot no queued op uses: none is queued or in flight then.
                if self.in_flight > 0 || self.queued > 0 {
                    return None;
                }
                let v = self.next_victim % self.files.len();
                self.next_victim += 1;
                v
            }
        };
        self.ring
            .submitter()
            .register_files_update(i as u32, &[fd])
            .ok()?;
        self.files[i] = Some((file_id, fd));
        self.slots.assign(i as u32, file_id);
        Some(i as u32)
    }

    /// Clears the slots other threads released but could not clear themselves (a
    /// single-issuer ring takes registrations from its own thread only).
    fn clear_deferred(&mut self) {
        for slot in self.slots.take_deferred() {
            // Only this thread registers files, so a slot still free here still holds the
            // dropped file in the kernel; one this thread has reused since holds a live one.
            if !self.slots.is_free(slot) {
                continue;
            }
            if let Err(e) = self.ring.submitter().register_files_update(slot, &[-1]) {
                tracing::warn!(slot, "cannot clear a fixed-file slot: {e}");
            }
            self.files[slot as usize] = None;
        }
    }

    /// Fixed-file slots holding a file now.
    pub fn registered_files(&self) -> usize {
        self.slots.occupied()
    }

    fn buffer_index(&self, pool: Option<u64>) -> Option<u16> {
        let pool = pool?;
        self.pools
            .iter()
            .position(|p| p.id() == pool)
            .map(|i| i as u16)
    }

    fn entry(&mut self, op: &Op) -> squeue::Entry {
        let buf = self.buffer_index(op.pool);
        self.counters.fixed_buffer_ops += buf.is_some() as u64;
        let slot = self.slot_for(op.file_id, op.fd);
        // RWF_HIPRI asks for polled completion, which only an IOPOLL ring can give (others
        // refuse it with EINVAL); on this ring the request completes by interrupt, as
        // preadv2 does on a device without poll queues.
        let flags = (op.flags - crate::RwFlags::HIPRI).to_kernel();
        macro_rules! build {
            ($fd:expr) => {{
                let fd = $fd;
                // SAFETY (of later use): the iovec array outlives the op (Engine::push).
                let first = unsafe { &*op.iov };
                match (op.dir, op.nr_segs, buf) {
                    (Dir::Dest, 1, Some(b)) => {
                        opcode::ReadFixed::new(fd, first.iov_base.cast(), first.iov_len as u32, b)
                            .offset(op.offset)
                            .rw_flags(flags)
                            .build()
                    }
                    (Dir::Source, 1, Some(b)) => {
                        opcode::WriteFixed::new(fd, first.iov_base.cast(), first.iov_len as u32, b)
                            .offset(op.offset)
                            .rw_flags(flags)
                            .build()
                    }
                    (Dir::Dest, 1, None) => {
                        opcode::Read::new(fd, first.iov_base.cast(), first.iov_len as u32)
                            .offset(op.offset)
                            .rw_flags(flags)
                            .build()
                    }
                    (Dir::Source, 1, None) => {
                        opcode::Write::new(fd, first.iov_base.cast(), first.iov_len as u32)
                            .offset(op.offset)
                            .rw_flags(flags)
                            .build()
                    }
                    (Dir::Dest, n, Some(b)) => opcode::ReadvFixed::new(fd, op.iov, n, b)
                        .offset(op.offset)
                        .rw_flags(flags)
                        .build(),
                    (Dir::Source, n, Some(b)) => opcode::WritevFixed::new(fd, op.iov, n, b)
                        .offset(op.offset)
                        .rw_flags(flags)
                        .build(),
                    (Dir::Dest, n, None) => opcode::Readv::new(fd, op.iov, n)
                        .offset(op.offset)
                        .rw_flags(flags)
                        .build(),
                    (Dir::Source, n, None) => opcode::Writev::new(fd, op.iov, n)
                        .offset(op.offset)
                        .rw_flags(flags)
                        .build(),
                }
            }};
        }
        macro_rules! command {
            ($fd:expr) => {{
                let fd = $fd;
                match op.cmd {
                    super::Cmd::Fdatasync => opcode::Fsync::new(fd)
                        .flags(types::FsyncFlags::DATASYNC)
                        .build(),
                    super::Cmd::Fallocate(mode) => opcode::Fallocate::new(fd, op.len as u64)
                        .offset(op.offset)
                        .mode(mode)
                        .build(),
                    _ => opcode::Fsync::new(fd).build(),
                }
            }};
        }
        let e = match (slot, op.cmd) {
            (Some(s), super::Cmd::Rw) => build!(types::Fixed(s)),
            (None, super::Cmd::Rw) => build!(types::Fd(op.fd)),
            (Some(s), _) => command!(types::Fixed(s)),
            (None, _) => command!(types::Fd(op.fd)),
        };
        e.user_data(op.tag)
    }

    /// Queues `entry`, entering the kernel first if the submission queue is full.
    ///
    /// # Safety
    /// What `entry` points to must stay valid until its completion is reaped.
    unsafe fn queue_entry(&mut self, entry: &squeue::Entry) -> io::Result<()> {
        loop {
            // SAFETY: the caller's guarantee.
            if unsafe { self.ring.submission().push(entry) }.is_ok() {
                break;
            }
            // Submission queue full: hand what is there to the kernel, then queue again.
            self.enter(0)?;
        }
        self.queued += 1;
        self.in_flight += 1;
        Ok(())
    }

    fn enter(&mut self, want: usize) -> io::Result<()> {
        loop {
            self.counters.syscalls += 1;
            match self.ring.submitter().submit_and_wait(want) {
                Ok(_) => {
                    self.queued = 0;
                    return Ok(());
                }
                Err(e) if e.raw_os_error() == Some(libc::EINTR) => continue,
                Err(e) if e.raw_os_error() == Some(libc::EBUSY) && want > 0 => {
                    // Completion queue overflowing: the caller must reap first.
                    return Ok(());
                }
                Err(e) => return Err(e),
            }
        }
    }
}

impl Engine for UringEngine {
    fn name(&self) -> &'static str {
        "uring"
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        if op.nr_segs == 0 && op.cmd == super::Cmd::Rw {
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        let entry = self.entry(&op);
        // SAFETY: the caller keeps fd, iovec array and buffers valid until reaped.
        unsafe { self.queue_entry(&entry) }
    }

    fn watch(&mut self, fd: BorrowedFd<'_>, events: u32, tag: u64) -> io::Result<bool> {
        let entry = opcode::PollAdd::new(types::Fd(fd.as_raw_fd()), events)
            .build()
            .user_data(tag);
        // SAFETY: a poll op refers to no user memory; the kernel takes its own file reference
        // at submission.
        unsafe { self.queue_entry(&entry)? };
        Ok(true)
    }

    fn unwatch(&mut self, watch: u64, tag: u64) -> io::Result<()> {
        let entry = opcode::PollRemove::new(watch).build().user_data(tag);
        // SAFETY: a poll removal refers to no user memory.
        unsafe { self.queue_entry(&entry) }
    }

    fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        self.clear_deferred();
        self.counters.submits += 1;
        let ready = self.ring.completion().len();
        let want = want.min(self.in_flight).saturating_sub(ready);
        if want == 0 && self.queued == 0 {
            return Ok(());
        }
        self.enter(want)
    }

    fn submit_and_wait_timeout(
        &mut self,
        want: usize,
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        self.clear_deferred();
        self.counters.submits += 1;
        let ready = self.ring.completion().len();
        let want = want.min(self.in_flight).saturating_sub(ready);
        if want == 0 {
            return self.enter(0);
        }
        let ts = types::Timespec::new()
            .sec(timeout.as_secs())
            .nsec(timeout.subsec_nanos());
        let args = types::SubmitArgs::new().timespec(&ts);
        self.counters.syscalls += 1;
        match self.ring.submitter().submit_with_args(want, &args) {
            Ok(_) => {
                self.queued = 0;
                Ok(())
            }
            // ETIME: the time ran out (what was queued was still submitted); EINTR: a signal.
            Err(e) if matches!(e.raw_os_error(), Some(libc::ETIME) | Some(libc::EINTR)) => {
                self.queued = 0;
                Ok(())
            }
            Err(e) => Err(e),
        }
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        for cqe in self.ring.completion() {
            out.push(Cqe {
                tag: cqe.user_data(),
                result: cqe.result() as i64,
            });
            self.in_flight -= 1;
            self.counters.ops += 1;
        }
    }

    fn in_flight(&self) -> usize {
        self.in_flight
    }

    fn counters(&self) -> Counters {
        Counters {
            registered_files: self.slots.occupied() as u64,
            ..self.counters
        }
    }

    fn register_region(&mut self, region: &Region) -> io::Result<bool> {
        if self.pools.iter().any(|p| p.id() == region.id()) {
            return Ok(true);
        }
        if self.pools.len() >= self.opts.fixed_buffers as usize {
            return Err(io::Error::from_raw_os_error(libc::ENOSPC));
        }
        let index = self.pools.len() as u32;
        let iov = region.iovec();
        // SAFETY: the region stays allocated while registered: the engine keeps a clone of it.
        unsafe {
            self.ring
                .submitter()
                .register_buffers_update(index, &[iov], None)?
        };
        self.pools.push(region.clone());
        Ok(true)
    }

    fn notify_on(&mut self, eventfd: Arc<std::os::fd::OwnedFd>) -> io::Result<bool> {
        if self.opts.single_thread {
            // A DEFER_TASKRUN ring posts completions only when its own thread enters it: an
            // eventfd would never fire while that thread waits elsewhere.
            return Err(io::Error::from_raw_os_error(libc::EINVAL));
        }
        if self.eventfd.is_some() {
            self.ring.submitter().unregister_eventfd()?;
        }
        let fd = std::os::fd::AsRawFd::as_raw_fd(&*eventfd);
        self.ring.submitter().register_eventfd(fd)?;
        self.eventfd = Some(eventfd);
        Ok(true)
    }
}

impl Drop for UringEngine {
    fn drop(&mut self) {
        // No thread clears a slot through this ring from here on; closing the ring releases
        // every file it holds.
        self.slots.retire();
        // The kernel may still write into buffers of ops in flight: wait for them all.
        let mut sink = Vec::new();
        while self.in_flight > 0 {
            if self.enter(self.in_flight).is_err() {
                break;
            }
            sink.clear();
            self.reap(&mut sink);
        }
    }
}
