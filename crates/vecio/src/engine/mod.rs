//! Engines: one trait, several ways of getting operations to the kernel.
//!
//! - [`SerialEngine`]: one `pread`/`pwrite` per segment, each waited on before the next: the
//!   behaviour before the 2002 readv/writev rework, kept as the measured baseline and as the
//!   fallback for back ends with no vector operation.
//! - [`SyncEngine`]: one `preadv2`/`pwritev2` per operation, with its flags.
//! - [`UringEngine`]: io_uring; everything queued goes to the kernel with one `io_uring_enter`
//!   and is waited on as a whole, with fixed files and registered buffers.
//! - [`PoolEngine`]: blocking calls on a fixed pool of worker threads, with the fast-read
//!   policy in front (reads tried inline with `RWF_NOWAIT`, only what would block offloaded).
//!
//! Engines see [`Op`]s, already split to at most [`IOV_MAX`] segments and already aligned for
//! direct I/O; [`Batch`](crate::Batch) does that work above them.

mod fixed_files;
mod pool;
mod serial;
mod sync;
pub(crate) mod syscall;
pub use fixed_files::registered_files;
pub(crate) use fixed_files::release_file;
mod uring;

use std::io;
use std::os::fd::RawFd;

pub use crate::threadpool::WhenFull;
pub use pool::{PoolEngine, PoolOptions};
pub use serial::SerialEngine;
pub use sync::SyncEngine;
pub use uring::{UringEngine, UringOptions};

use crate::{Dir, Region, RwFlags};

/// Most segments one system call takes (`IOV_MAX`, the kernel's `UIO_MAXIOV`).
pub const IOV_MAX: usize = 1024;

/// One vectored read or write (or whole-file command) handed to an engine: made by
/// [`Batch`](crate::Batch) and [`Queue`](crate::Queue), or by [`Op::rw`] for a caller driving
/// an engine itself.
#[derive(Clone, Copy, Debug)]
pub struct Op {
    /// The file descriptor.
    pub(crate) fd: RawFd,
    /// The owning [`File`](crate::File)'s id, for fixed-file slots.
    pub(crate) file_id: u64,
    /// File offset.
    pub(crate) offset: u64,
    /// The segments (at most [`IOV_MAX`]).
    pub(crate) iov: *const libc::iovec,
    /// Number of segments.
    pub(crate) nr_segs: u32,
    /// Total bytes of the segments.
    pub(crate) len: usize,
    /// Read (`Dest`) or write (`Source`).
    pub(crate) dir: Dir,
    /// Per-call flags.
    pub(crate) flags: RwFlags,
    /// The page pool the buffers come from, when they all do.
    pub(crate) pool: Option<u64>,
    /// Caller's tag, returned with the completion.
    pub(crate) tag: u64,
    /// The file's fast-read history, or null: engines with a fast-read policy try buffered
    /// reads inline when it is set.
    pub(crate) fast: *const crate::fast_read::FastReadState,
    /// What the op does: a read or write of `iov`, or a whole-file command.
    pub(crate) cmd: Cmd,
}

impl Op {
    /// A vectored read (`dir` [`Dir::Dest`]) or write ([`Dir::Source`]) of the segments `iov`
    /// at `offset` of descriptor `fd`, with `flags`, completing with `tag`. Nothing is checked
    /// or touched here; [`Engine::push`]'s contract covers the descriptor and the memory.
    /// `offset` `u64::MAX` means the descriptor's own position (pipes, sockets).
    pub fn rw(
        fd: RawFd,
        dir: Dir,
        offset: u64,
        iov: &[libc::iovec],
        flags: RwFlags,
        tag: u64,
    ) -> Op {
        Op {
            fd,
            file_id: u64::MAX,
            offset,
            iov: iov.as_ptr(),
            nr_segs: iov.len() as u32,
            len: iov.iter().map(|v| v.iov_len).sum(),
            dir,
            flags,
            pool: None,
            tag,
            fast: std::ptr::null(),
            cmd: Cmd::Rw,
        }
    }

    /// The caller's tag, returned with the completion.
    pub fn tag(&self) -> u64 {
        self.tag
    }

    /// Read or write.
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// File offset.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Total bytes of the segments (of a [`Cmd::Fallocate`], the range's length).
    pub fn len(&self) -> usize {
        self.len
    }

    /// The file descriptor.
    pub fn fd(&self) -> RawFd {
        self.fd
    }

    /// The segments: a pointer to `nr_segs` iovecs, valid as [`Engine::push`]'s contract says.
    pub fn iovecs(&self) -> (*const libc::iovec, u32) {
        (self.iov, self.nr_segs)
    }

    /// Per-call flags.
    pub fn flags(&self) -> RwFlags {
        self.flags
    }

    /// What the op asks of the kernel.
    pub fn cmd(&self) -> Cmd {
        self.cmd
    }

    /// The id of the registered region every segment lies in, if one does (see
    /// [`Engine::register_region`]).
    pub fn region(&self) -> Option<u64> {
        self.pool
    }

    /// True when the op moves no bytes (a whole-file command).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
}

/// What an [`Op`] asks of the kernel. Commands other than [`Cmd::Rw`] ignore `iov`,
/// `nr_segs`, `dir` and `flags`, and complete with 0.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum Cmd {
    /// `preadv2(2)`/`pwritev2(2)` (by `dir`) of the op's segments.
    #[default]
    Rw,
    /// `fsync(2)` (`IORING_OP_FSYNC`).
    Fsync,
    /// `fdatasync(2)` (`IORING_OP_FSYNC` with `IORING_FSYNC_DATASYNC`).
    Fdatasync,
    /// `fallocate(2)` of `len` bytes at `offset` with these `FALLOC_FL_*` mode bits
    /// (`IORING_OP_FALLOCATE`).
    Fallocate(i32),
}

// SAFETY: an Op is a description of memory its pusher guarantees stays valid (see
// `Engine::push`); moving the description between threads does not touch the memory.
unsafe impl Send for Op {}

/// The completion of one [`Op`]: bytes moved, or a negative errno.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cqe {
    /// The op's tag.
    pub tag: u64,
    /// Bytes moved (>= 0) or `-errno`.
    pub result: i64,
}

/// What an engine has done, for tests and benchmarks.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Operations completed.
    pub ops: u64,
    /// System calls made to start or wait for I/O (`io_uring_enter` for io_uring; every
    /// `pread`/`preadv2`/... for the synchronous engines).
    pub syscalls: u64,
    /// Calls to [`Engine::submit_and_wait`].
    pub submits: u64,
    /// Reads and writes started on a registered buffer (io_uring's `READ_FIXED`,
    /// `WRITE_FIXED` and their vectored forms; see [`Engine::register_region`]).
    pub fixed_buffer_ops: u64,
    /// Files held in the engine's fixed-file slots now (io_uring). A file leaves its slots
    /// when its [`File`](crate::File) is dropped.
    pub registered_files: u64,
}

/// The kinds of engine, for choosing one by name.
///
/// ```
/// let kind: vecio::EngineKind = "uring".parse().unwrap();
/// let engine = kind.build()?;
/// assert_eq!(engine.name(), "uring");
/// # Ok::<(), vecio::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// [`SerialEngine`].
    Serial,
    /// [`SyncEngine`].
    Sync,
    /// [`UringEngine`].
    Uring,
    /// [`PoolEngine`] with the default (tracked) fast-read policy.
    Pool,
}

impl EngineKind {
    /// Every kind, baseline first.
    pub const ALL: [EngineKind; 4] = [
        EngineKind::Serial,
        EngineKind::Sync,
        EngineKind::Uring,
        EngineKind::Pool,
    ];

    /// The kind's name as used on command lines.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Serial => "serial",
            EngineKind::Sync => "sync",
            EngineKind::Uring => "uring",
            EngineKind::Pool => "pool",
        }
    }

    /// Builds an engine of this kind with default settings.
    pub fn build(self) -> crate::Result<Box<dyn Engine>> {
        Ok(match self {
            EngineKind::Serial => Box::new(SerialEngine::new()),
            EngineKind::Sync => Box::new(SyncEngine::new()),
            EngineKind::Uring => Box::new(UringEngine::new(UringOptions::default())?),
            EngineKind::Pool => Box::new(PoolEngine::new(PoolOptions::default())?),
        })
    }
}

impl std::str::FromStr for EngineKind {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        EngineKind::ALL
            .into_iter()
            .find(|k| k.name() == s)
            .ok_or_else(|| format!("unknown engine {s:?} (serial, sync, uring, pool)"))
    }
}

/// A way of getting [`Op`]s to the kernel and their completions back.
pub trait Engine: Send {
    /// The engine's name.
    fn name(&self) -> &'static str;

    /// Queues `op`; nothing need reach the kernel before [`submit_and_wait`](Self::submit_and_wait).
    ///
    /// # Safety
    /// `op.fd` and every buffer `op.iov` points to (and the iovec array itself) must stay
    /// valid, and the buffers untouched by anyone else, until this engine hands back the op's
    /// completion from [`reap`](Self::reap).
    unsafe fn push(&mut self, op: Op) -> io::Result<()>;

    /// Starts everything queued and waits until at least `want` completions are ready to reap
    /// (fewer if fewer are outstanding).
    fn submit_and_wait(&mut self, want: usize) -> io::Result<()>;

    /// As [`submit_and_wait`](Self::submit_and_wait), but gives up waiting after `timeout`
    /// (fewer than `want` completions may be ready then). Engines that cannot bound the wait
    /// wait for `want` as usual.
    fn submit_and_wait_timeout(
        &mut self,
        want: usize,
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        let _ = timeout;
        self.submit_and_wait(want)
    }

    /// Moves every ready completion into `out`.
    fn reap(&mut self, out: &mut Vec<Cqe>);

    /// Ops pushed and not yet reaped.
    fn in_flight(&self) -> usize;

    /// What the engine has done so far.
    fn counters(&self) -> Counters;

    /// Offers a region of memory for registration as a fixed buffer
    /// (`io_uring_register(2)`, `IORING_REGISTER_BUFFERS_UPDATE`): ops whose buffers all lie
    /// in it then skip pinning their pages. Returns whether the engine registered it:
    /// `false` from engines that gain nothing from it and ignore it. Registering a region
    /// twice is not an error.
    fn register_region(&mut self, _region: &Region) -> io::Result<bool> {
        Ok(false)
    }

    /// Asks the engine to signal `eventfd` (see `eventfd(2)`) whenever a completion becomes
    /// ready, so a caller can wait for completions with `poll(2)` or an async runtime instead
    /// of [`submit_and_wait`](Self::submit_and_wait); the engine keeps the descriptor open.
    /// Returns `false` when the engine has nothing to signal because it completes every op
    /// inside `submit_and_wait` (serial, sync): what it was handed is ready when that returns.
    /// io_uring registers the eventfd with the ring (`IORING_REGISTER_EVENTFD`); the pool's
    /// workers write it after posting a completion.
    fn notify_on(&mut self, eventfd: std::sync::Arc<std::os::fd::OwnedFd>) -> io::Result<bool> {
        let _ = eventfd;
        Ok(false)
    }

    /// Arms a one-shot readiness watch on `fd` beside the I/O (`IORING_OP_POLL_ADD`): it
    /// completes as an op tagged `tag`, with the ready `poll(2)` bits of `events` as its result,
    /// so one wait covers the descriptor and the I/O. Returns `false` when the engine cannot
    /// (only io_uring can; the others would have to block a thread on the descriptor). The
    /// kernel holds its own reference to the file: closing `fd` while armed is safe.
    fn watch(
        &mut self,
        fd: std::os::fd::BorrowedFd<'_>,
        events: u32,
        tag: u64,
    ) -> io::Result<bool> {
        let _ = (fd, events, tag);
        Ok(false)
    }

    /// Cancels the watch tagged `watch` (`IORING_OP_POLL_REMOVE`, itself an op tagged `tag`):
    /// both complete through [`reap`](Self::reap), the watch with `-ECANCELED` unless it fired
    /// first.
    fn unwatch(&mut self, watch: u64, tag: u64) -> io::Result<()> {
        let _ = (watch, tag);
        Ok(())
    }
}

/// A boxed engine is an engine, so an `EngineKind::build()` result goes wherever an engine
/// does: `batch.run(&mut engine)` as well as `batch.run(engine.as_mut())`.
impl<E: Engine + ?Sized> Engine for Box<E> {
    fn name(&self) -> &'static str {
        (**self).name()
    }

    unsafe fn push(&mut self, op: Op) -> io::Result<()> {
        // SAFETY: the caller's guarantee (Engine::push) is passed on unchanged.
        unsafe { (**self).push(op) }
    }

    fn submit_and_wait(&mut self, want: usize) -> io::Result<()> {
        (**self).submit_and_wait(want)
    }

    fn submit_and_wait_timeout(
        &mut self,
        want: usize,
        timeout: std::time::Duration,
    ) -> io::Result<()> {
        (**self).submit_and_wait_timeout(want, timeout)
    }

    fn reap(&mut self, out: &mut Vec<Cqe>) {
        (**self).reap(out)
    }

    fn in_flight(&self) -> usize {
        (**self).in_flight()
    }

    fn counters(&self) -> Counters {
        (**self).counters()
    }

    fn register_region(&mut self, region: &Region) -> io::Result<bool> {
        (**self).register_region(region)
    }

    fn notify_on(&mut self, eventfd: std::sync::Arc<std::os::fd::OwnedFd>) -> io::Result<bool> {
        (**self).notify_on(eventfd)
    }

    fn watch(
        &mut self,
        fd: std::os::fd::BorrowedFd<'_>,
        events: u32,
        tag: u64,
    ) -> io::Result<bool> {
        (**self).watch(fd, events, tag)
    }

    fn unwatch(&mut self, watch: u64, tag: u64) -> io::Result<()> {
        (**self).unwatch(watch, tag)
    }
}
