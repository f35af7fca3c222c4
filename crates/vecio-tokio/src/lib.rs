//! vecio for tokio: an async [`File`] over vecio's completion [`Queue`](vecio::Queue), in an
//! ordinary multi-threaded tokio runtime, with no tokio-uring and no runtime of its own.
//!
//! `tokio::fs` sends every read to `spawn_blocking`: each one, even one the page cache holds,
//! waits behind a hop to a thread pool and back. Here:
//!
//! - a buffered read is tried inline first with `RWF_NOWAIT` (vecio's per-file fast-read
//!   policy): served by the page cache, it costs one system call on the calling task;
//! - what would block, every write and every direct request goes to a [`Driver`]: one vecio
//!   queue (io_uring by default) and one thread of its own that alone enters it, submitting
//!   what the tasks push and handing each completion to the task's future
//!   ([`File::open`] uses one driver shared by the process);
//! - direct I/O works at any offset, length and buffer alignment (bounce reads and
//!   read-modify-writes run as asynchronous stages inside the queue);
//! - buffers are owned by the call and handed back with its result, so a future dropped
//!   mid-flight cannot leave the kernel writing into freed memory.
//!
//! ```
//! # #[tokio::main(flavor = "multi_thread", worker_threads = 2)]
//! # async fn main() -> std::io::Result<()> {
//! # let dir = tempfile::tempdir()?;
//! use vecio::{Direct, File as VecioFile};
//! use vecio_tokio::File;
//!
//! let opts = VecioFile::options().read(true).write(true).create(true).direct(Direct::Auto);
//! let file = File::open(dir.path().join("data"), opts).await?;
//! let (res, _) = file.write_all_at(b"hello, async vectored world".to_vec(), 3).await;
//! res?; // unaligned on a direct file: a read-modify-write inside the queue
//! let (res, word) = file.read_exact_at(vec![0u8; 5], 10).await;
//! res?;
//! assert_eq!(&word, b"async");
//! file.sync_data().await?;
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

mod driver;
mod file;
pub mod fs;

pub use driver::Driver;
pub use file::{File, IoBuf};
