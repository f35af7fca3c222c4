//! `tokio::fs` over vecio: the same names and signatures, so a tokio program switches by its
//! imports (`use vecio_tokio::fs;` for `use tokio::fs;`).
//!
//! What vecio serves itself:
//! - [`File`] with `AsyncRead`, `AsyncWrite` and `AsyncSeek`: a read the page cache holds is
//!   served on the calling task with `RWF_NOWAIT` (one system call, no hop to a thread pool);
//!   what would block, and every write, goes to a [`Driver`](crate::Driver)'s io_uring.
//!   Sequential reads read ahead. [`OpenOptions::direct`] turns on direct I/O at any
//!   alignment.
//! - [`read`], [`read_to_string`] and [`write()`]: whole files through the same paths; a
//!   read-only open whose path is in the kernel's caches is done on the calling task
//!   (`openat2` with `RESOLVE_CACHED`), any other open on tokio's blocking pool.
//!
//! What is tokio's own, re-exported (each runs its system call on tokio's blocking pool, as
//! in tokio): the directory and name calls ([`create_dir_all`], [`remove_file`], [`rename`],
//! [`read_dir`], [`metadata`], [`copy`], ...), which have no data to move.
//!
//! ```
//! # #[tokio::main(flavor = "current_thread")]
//! # async fn main() -> std::io::Result<()> {
//! # let dir = tempfile::tempdir()?;
//! use vecio_tokio::fs; // was: use tokio::fs;
//! let path = dir.path().join("greeting");
//! fs::write(&path, "hello").await?;
//! assert_eq!(fs::read_to_string(&path).await?, "hello");
//! fs::remove_file(&path).await?;
//! # Ok(()) }
//! ```

mod file;
mod options;
mod stream;

use std::io;
use std::path::Path;

pub use file::File;
pub use options::OpenOptions;
pub use tokio::fs::{
    canonicalize, copy, create_dir, create_dir_all, hard_link, metadata, read_dir, read_link,
    remove_dir, remove_dir_all, remove_file, rename, set_permissions, symlink, symlink_metadata,
    try_exists, DirBuilder, DirEntry, ReadDir,
};

/// Reads the whole file at `path` into a vector.
pub async fn read(path: impl AsRef<Path>) -> io::Result<Vec<u8>> {
    let file = File::open(path).await?;
    let io = file.positional()?;
    let size = io.vecio().size().unwrap_or(0) as usize;
    let mut out: Vec<u8> = Vec::with_capacity(size);
    // The size is a hint: the file may grow or shrink meanwhile. Read until a read returns 0.
    let mut chunk = size.clamp(8192, file::DEFAULT_MAX_BUF_SIZE);
    loop {
        let (n, buf) = io.read_at(vec![0u8; chunk], out.len() as u64).await;
        let n = n?;
        if n == 0 {
            return Ok(out);
        }
        out.extend_from_slice(&buf[..n]);
        chunk = chunk.max(n);
    }
}

/// Reads the whole file at `path` into a string; `InvalidData` if it is not UTF-8.
pub async fn read_to_string(path: impl AsRef<Path>) -> io::Result<String> {
    String::from_utf8(read(path).await?)
        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e.utf8_error()))
}

/// Writes `contents` as the whole file at `path`, creating it or truncating it.
pub async fn write(path: impl AsRef<Path>, contents: impl AsRef<[u8]>) -> io::Result<()> {
    let file = File::create(path).await?;
    let data = contents.as_ref();
    if data.is_empty() {
        return Ok(());
    }
    let (r, _) = file.positional()?.write_all_at(data.to_vec(), 0).await;
    r
}
