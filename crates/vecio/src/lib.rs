//! vecio: the Linux vectored-I/O design in user space.
//!
//! # Where to start
//!
//! 1. Open a [`File`] ([`File::options`], as `std`'s): it learns its direct-I/O alignment
//!    ([`DioAlign`]) and computes its per-call flags once. [`Direct::Auto`] (the default) uses
//!    `O_DIRECT` where the file system allows it, and any offset, length and buffer still
//!    work: unaligned reads go through a bounce buffer, unaligned writes read-modify-write
//!    their edge blocks under a range lock.
//! 2. For one request at a time, call it directly: [`File::read_at`], [`File::write_at`],
//!    [`File::readv_at`], [`File::writev_at`], with [`RwFlags`] per call. An aligned
//!    single-buffer call costs what the system call costs.
//! 3. For many requests at once, on one thread, blocking: a [`Batch`] over an [`Engine`]
//!    ([`EngineKind::Uring`] for io_uring): every request submitted, then all waited on as a
//!    whole. Describe buffers with [`IoIter`].
//! 4. For a server keeping many requests in flight without blocking: a [`Queue`] (push,
//!    submit, reap) with owned buffers ([`OwnedBuf`]), from a [`BufPool`] whose [`Region`]
//!    the engine registers.
//! 5. For mostly-cached buffered reads behind a thread pool: the pool engine
//!    ([`EngineKind::Pool`]) and its [`FastReadPolicy`] (try `RWF_NOWAIT` inline, offload
//!    what would block, learn per file).
//!
//! Short transfers are exact everywhere: the bytes done are reported, the rest resumed or
//! returned, and errors ([`Error`]) name the file, the request and the offset. The modules
//! [`engine`], [`file`](mod@file) and [`fast_read`] hold what fewer callers need.
//!
//! The source is in layers, every top-level module importing only those below it
//! (`scripts/import-graph` prints the graph and fails on a cycle):
//!
//! | layer | is |
//! |---|---|
//! | `flags`, `rangelock`, `threadpool`, `error` | flags, the range lock, the thread pool, errors |
//! | `buf/`, `bufpool` | aligned memory, registrable regions and their carving; the pool |
//! | `iter`, `fast_read` | [`IoIter`]; the fast-read policy and per-file state |
//! | `engine/` | the [`Engine`] trait, the engines, fixed-file slots |
//! | `file/` | what an open [`File`] is: descriptor, alignment, cached flags, id, range lock |
//! | `request`, `direct/` | the request core; the direct-I/O planner (bounce, read-modify-write) |
//! | `batch`, `queue` | [`Batch`] and [`Queue`], side by side |
//! | `file_io/` | `File`'s I/O calls ([`File::read_at`], [`File::fallocate`]...), over a `Batch` |
//!
//! ```
//! use std::sync::Arc;
//! use vecio::{AlignedBuf, Direct, EngineKind, File, OwnedBuf, Queue, RwFlags};
//! # fn main() -> vecio::Result<()> {
//! # let dir = tempfile::tempdir().unwrap();
//! // Direct I/O where the file system allows it; any offset and length still work.
//! let file = File::options().read(true).write(true).create(true).direct(Direct::Auto)
//!     .open(dir.path().join("data"))?;
//! file.write_all_at(b"hello, vectored world", 3)?; // unaligned: read-modify-write
//! let mut word = [0u8; 8];
//! file.read_exact_at(&mut word, 10)?;
//! assert_eq!(&word, b"vectored");
//!
//! // Many requests in flight from one thread, buffers owned by the queue until reaped.
//! let file = Arc::new(file);
//! let mut queue = Queue::new(EngineKind::Uring.build()?);
//! queue.push_read(&file, 0, vec![OwnedBuf::Aligned(AlignedBuf::page_aligned(4096))],
//!     RwFlags::empty(), 1)?;
//! queue.push_fsync(&file, true, 2)?;
//! queue.submit_and_wait(2)?;
//! let mut done = Vec::new();
//! queue.reap(&mut done);
//! assert_eq!(done.len(), 2);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod batch;
mod buf;
mod bufpool;
mod direct;
pub mod engine;
mod error;
pub mod fast_read;
pub mod file;
mod file_io;
mod flags;
mod iter;
mod queue;
mod rangelock;
mod request;
mod threadpool;

pub use batch::Batch;
pub use buf::{AlignedBuf, Region, PAGE_SIZE};
pub use bufpool::{BufPool, BufPoolOptions};
pub use engine::{Engine, EngineKind};
pub use error::{Error, Invalid, Result};
pub use fast_read::FastReadPolicy;
pub use file::{DioAlign, Direct, File, OpenOptions};
pub use flags::RwFlags;
pub use iter::{Dir, IoIter};
pub use queue::{Completion, OwnedBuf, PushError, Queue};
