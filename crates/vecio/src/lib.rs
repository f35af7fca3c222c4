//! vecio: the Linux vectored-I/O design in user space.
//!
//! - [`IoIter`]: one type over the buffers of a request (`Ubuf`, `Iovec`, `Pages`).
//! - [`File`]: an open file or block device with its direct-I/O alignment and cached flags.
//! - [`Batch`]: many requests submitted together and waited on as a whole, through an
//!   [`Engine`] (serial, sync, io_uring). Direct I/O is correct for any request: unaligned
//!   reads go through a bounce buffer, unaligned writes read-modify-write their edge blocks
//!   under a range lock. Short transfers are exact.
//! - [`Queue`]: the completion API (push, submit, reap) with owned buffers, for servers that
//!   keep many requests in flight from one thread.
//! - [`RwFlags`]: per-call `RWF_*` flags, carried by every engine.

mod align;
mod batch;
mod buf;
pub mod engine;
mod error;
mod fastread;
mod file;
mod file_io;
mod flags;
mod iter;
mod queue;
mod rangelock;
mod space;
mod threadpool;

pub use batch::Batch;
pub use buf::{AlignedBuf, PagePool, PoolBuf, PAGE_SIZE};
pub use engine::{Engine, EngineKind};
pub use error::{Error, Invalid, Result};
pub use fastread::{
    Attempt, Decision, FastReadMode, FastReadPolicy, FastReadState, FastReadStats, Outcome,
};
pub use file::{AlignSource, DioAlign, Direct, File, FileKind, OpenOptions};
pub use flags::RwFlags;
pub use iter::{Dir, IoIter, IterKind};
pub use queue::{Completion, OwnedBuf, Queue};
pub use threadpool::{Job, ThreadPool, WhenFull};
/// `fallocate(2)` modes, for [`File::fallocate`].
pub use rustix::fs::FallocateFlags;
