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
mod flags;
mod iter;
mod queue;
mod rangelock;
mod region;
mod request;
mod threadpool;

pub use batch::Batch;
pub use buf::{AlignedBuf, PAGE_SIZE};
pub use bufpool::{BufPool, BufPoolOptions};
pub use engine::{Engine, EngineKind};
pub use error::{Error, Invalid, Result};
pub use fast_read::FastReadPolicy;
pub use file::{DioAlign, Direct, File, OpenOptions};
pub use flags::RwFlags;
pub use iter::{Dir, IoIter};
pub use queue::{Completion, OwnedBuf, PushError, Queue};
pub use region::Region;
