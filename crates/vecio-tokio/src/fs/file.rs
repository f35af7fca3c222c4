//! [`File`]: tokio::fs::File's surface over vecio: `AsyncRead`, `AsyncWrite` and `AsyncSeek`
//! with a position of its own (see `stream.rs`), and the `&self` calls (`metadata`,
//! `set_len`, `sync_all`, ...) that first wait for the operation in flight, as tokio's do.

use std::fs::{Metadata, Permissions};
use std::future::Future;
use std::io::{self, SeekFrom};
use std::mem::ManuallyDrop;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::path::Path;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use vecio::RwFlags;

use super::OpenOptions;
use crate::Driver;

/// The largest buffer one `poll_read` or `poll_write` moves, as tokio's default (2 MiB).
pub(super) const DEFAULT_MAX_BUF_SIZE: usize = 2 * 1024 * 1024;

/// An operation started by the stream calls and finished in the background, as tokio's file
/// does: a write returns as soon as its bytes are copied and goes on in the driver.
pub(super) type InFlight = Pin<Box<dyn Future<Output = Done> + Send>>;

/// What a finished background operation came to.
pub(super) enum Done {
    /// A read of `buf` at `at`: bytes read (the buffer is truncated to them) or the error.
    Read {
        result: io::Result<usize>,
        buf: Vec<u8>,
        at: u64,
    },
    /// A write; its buffer comes back for reuse.
    Write {
        result: io::Result<()>,
        buf: Vec<u8>,
    },
}

/// The mutable part of a file: the operation in flight, read-ahead, a pending seek.
pub(super) struct Inner {
    pub(super) in_flight: Option<InFlight>,
    /// Bytes read ahead, starting at file offset `ahead_at`.
    pub(super) ahead: Vec<u8>,
    pub(super) ahead_at: u64,
    /// Where the last read ended, and the read size it had grown to (sequential reads double
    /// it, up to the largest buffer).
    pub(super) last_read_end: u64,
    pub(super) window: usize,
    /// A background write's error, met by the next write, flush or seek.
    pub(super) write_error: Option<io::Error>,
    pub(super) seek: Option<SeekFrom>,
    /// A buffer kept for the next operation.
    pub(super) spare: Vec<u8>,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            in_flight: None,
            ahead: Vec::new(),
            ahead_at: 0,
            last_read_end: u64::MAX,
            window: 0,
            write_error: None,
            seek: None,
            spare: Vec::new(),
        }
    }
}

/// The vecio file and its driver, or, for a `from_std` descriptor vecio cannot serve, the
/// descriptor and why.
pub(super) enum Backing {
    Served(crate::File),
    Unserved { fd: OwnedFd, why: String },
}

/// An open file, as `tokio::fs::File`: the same calls, served by vecio (see the module
/// documentation of [`crate::fs`]).
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// # let dir = tempfile::tempdir()?;
/// use tokio::io::{AsyncReadExt, AsyncSeekExt, AsyncWriteExt, SeekFrom};
/// use vecio_tokio::fs::File;
///
/// let mut file = File::create(dir.path().join("hello")).await?;
/// file.write_all(b"hello, world").await?;
/// file.seek(SeekFrom::Start(7)).await?;
/// let mut word = String::new();
/// File::open(dir.path().join("hello")).await?.read_to_string(&mut word).await?;
/// assert_eq!(word, "hello, world");
/// # Ok(()) }
/// ```
pub struct File {
    pub(super) core: Core,
    pub(super) inner: tokio::sync::Mutex<Inner>,
}

/// What does not change while an operation is in flight.
pub(super) struct Core {
    pub(super) backing: Backing,
    /// The position, shared with `try_clone`'s clones (as a duplicated descriptor shares it).
    pub(super) pos: Arc<AtomicU64>,
    pub(super) append: bool,
    pub(super) max_buf_size: usize,
}

impl File {
    pub(super) fn new(file: vecio::File, driver: Driver, append: bool) -> File {
        Self::with(
            Backing::Served(crate::File::from_vecio(Arc::new(file), driver)),
            0,
            append,
        )
    }

    fn with(backing: Backing, pos: u64, append: bool) -> File {
        File {
            core: Core {
                backing,
                pos: Arc::new(AtomicU64::new(pos)),
                append,
                max_buf_size: DEFAULT_MAX_BUF_SIZE,
            },
            inner: tokio::sync::Mutex::new(Inner::default()),
        }
    }

    /// Opens `path` read-only (buffered).
    pub async fn open(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new().read(true).open(path).await
    }

    /// Opens `path` write-only, creating it or truncating it.
    pub async fn create(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .write(true)
            .create(true)
            .truncate(true)
            .open(path)
            .await
    }

    /// Creates `path` read-write, failing if it exists.
    pub async fn create_new(path: impl AsRef<Path>) -> io::Result<File> {
        OpenOptions::new()
            .read(true)
            .write(true)
            .create_new(true)
            .open(path)
            .await
    }

    /// An [`OpenOptions`] with nothing set.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// A file from a `std` one, served by the shared driver, at the std file's position. A
    /// descriptor vecio cannot serve (not a regular file or block device), or a machine with
    /// no driver, gives a file whose every read and write fails with the reason (tokio's
    /// `from_std` cannot fail either).
    pub fn from_std(std: std::fs::File) -> File {
        use std::io::Seek;
        let mut std = std;
        let pos = std.stream_position().unwrap_or(0);
        let append =
            rustix::fs::fcntl_getfl(&std).is_ok_and(|f| f.contains(rustix::fs::OFlags::APPEND));
        let fd = OwnedFd::from(std);
        let backing = match (Driver::shared(), served_kind(fd.as_fd())) {
            (Ok(driver), Ok(())) => match dup(fd.as_fd()) {
                Ok(copy) => match vecio::File::from_fd(copy, "(from_std)", RwFlags::empty()) {
                    Ok(file) => Backing::Served(crate::File::from_vecio(Arc::new(file), driver)),
                    Err(e) => Backing::Unserved {
                        fd,
                        why: e.to_string(),
                    },
                },
                Err(e) => Backing::Unserved {
                    fd,
                    why: e.to_string(),
                },
            },
            (Err(e), _) | (_, Err(e)) => Backing::Unserved {
                fd,
                why: e.to_string(),
            },
        };
        Self::with(backing, pos, append)
    }

    /// The positional vecio file (owned-buffer reads and writes at any offset, direct I/O at
    /// any alignment), or why this file has none.
    pub fn positional(&self) -> io::Result<&crate::File> {
        self.core.positional()
    }

    /// Waits for the operation in flight (a background write's error is kept for the next
    /// write or flush, as tokio does).
    async fn settle(&self) -> tokio::sync::MutexGuard<'_, Inner> {
        let mut inner = self.inner.lock().await;
        if let Some(op) = inner.in_flight.take() {
            let done = op.await;
            self.core.finish(&mut inner, done);
        }
        inner
    }

    /// Flushes data and metadata to stable storage (`fsync(2)`), after the write in flight.
    pub async fn sync_all(&self) -> io::Result<()> {
        let mut inner = self.settle().await;
        take_error(&mut inner)?;
        self.positional()?.sync_all().await
    }

    /// Flushes data to stable storage (`fdatasync(2)`), after the write in flight.
    pub async fn sync_data(&self) -> io::Result<()> {
        let mut inner = self.settle().await;
        take_error(&mut inner)?;
        self.positional()?.sync_data().await
    }

    /// Truncates or extends the file to `size` bytes (`ftruncate(2)` under vecio's range lock,
    /// on the blocking pool); the position does not move.
    pub async fn set_len(&self, size: u64) -> io::Result<()> {
        let mut inner = self.settle().await;
        take_error(&mut inner)?;
        inner.ahead.clear();
        let file = self.positional()?.vecio().clone();
        tokio::task::spawn_blocking(move || file.set_len(size))
            .await
            .map_err(io::Error::other)?
    }

    /// The file's metadata (`statx(2)` on the descriptor, on the calling task: it does not
    /// wait for the device), after the operation in flight.
    pub async fn metadata(&self) -> io::Result<Metadata> {
        let _inner = self.settle().await;
        self.borrow_std().metadata()
    }

    /// Sets the file's permissions (`fchmod(2)`), after the operation in flight.
    pub async fn set_permissions(&self, perm: Permissions) -> io::Result<()> {
        let _inner = self.settle().await;
        self.borrow_std().set_permissions(perm)
    }

    /// Sets the file's access and modification times (`futimens(2)`), after the operation in
    /// flight. (tokio's takes its own `FileTimes`; this one takes `std`'s.)
    pub async fn set_times(&self, times: std::fs::FileTimes) -> io::Result<()> {
        let _inner = self.settle().await;
        self.borrow_std().set_times(times)
    }

    /// Sets the modification time, after the operation in flight.
    pub async fn set_modified(&self, time: std::time::SystemTime) -> io::Result<()> {
        self.set_times(std::fs::FileTimes::new().set_modified(time))
            .await
    }

    /// A second handle on the same open file, sharing its position (as a duplicated
    /// descriptor does), after the operation in flight.
    pub async fn try_clone(&self) -> io::Result<File> {
        let mut inner = self.settle().await;
        take_error(&mut inner)?;
        let backing = match &self.core.backing {
            Backing::Served(f) => Backing::Served(f.clone()),
            Backing::Unserved { fd, why } => Backing::Unserved {
                fd: dup(fd.as_fd())?,
                why: why.clone(),
            },
        };
        let mut clone = Self::with(backing, 0, self.core.append);
        clone.core.pos = self.core.pos.clone();
        clone.core.max_buf_size = self.core.max_buf_size;
        Ok(clone)
    }

    /// A `std` file on the same open file description, at this file's position, after the
    /// operation in flight. A direct file stays direct (`O_DIRECT` belongs to the
    /// description).
    ///
    /// # Panics
    /// If the descriptor cannot be duplicated (the process is out of descriptors): the file
    /// may be shared with its clones, so it is never taken from them.
    pub async fn into_std(self) -> std::fs::File {
        drop(self.settle().await);
        self.std_at_position()
    }

    /// As [`into_std`](Self::into_std) when nothing is in flight; otherwise the file back.
    ///
    /// # Panics
    /// As [`into_std`](Self::into_std).
    // tokio::fs::File::try_into_std returns the file itself as its error; a drop-in keeps that.
    #[allow(clippy::result_large_err)]
    pub fn try_into_std(mut self) -> Result<std::fs::File, Self> {
        if self.inner.get_mut().in_flight.is_some() {
            return Err(self);
        }
        Ok(self.std_at_position())
    }

    fn std_at_position(&self) -> std::fs::File {
        use std::io::Seek;
        let fd = match dup(self.as_fd()) {
            Ok(fd) => fd,
            Err(e) => {
                panic!("vecio_tokio::fs::File::into_std: cannot duplicate the descriptor: {e}")
            }
        };
        let mut std = std::fs::File::from(fd);
        let _ = std.seek(SeekFrom::Start(self.core.pos.load(Ordering::Relaxed)));
        std
    }

    /// Sets the largest buffer one stream read or write moves (default 2 MiB).
    ///
    /// # Panics
    /// If `max_buf_size` is 0, as tokio's does.
    pub fn set_max_buf_size(&mut self, max_buf_size: usize) {
        assert!(max_buf_size > 0, "`max_buf_size` must be greater than 0");
        self.core.max_buf_size = max_buf_size;
    }

    /// The largest buffer one stream read or write moves.
    pub fn max_buf_size(&self) -> usize {
        self.core.max_buf_size
    }

    /// The descriptor as a `std::fs::File` for a call, without giving it up.
    fn borrow_std(&self) -> ManuallyDrop<std::fs::File> {
        // SAFETY: the descriptor stays open while `self` lives, and ManuallyDrop keeps the
        // borrowed std file from closing it.
        ManuallyDrop::new(unsafe { std::fs::File::from_raw_fd(self.as_raw_fd()) })
    }
}

impl Core {
    /// See [`File::positional`].
    pub(super) fn positional(&self) -> io::Result<&crate::File> {
        match &self.backing {
            Backing::Served(f) => Ok(f),
            Backing::Unserved { why, .. } => {
                Err(io::Error::new(io::ErrorKind::Unsupported, why.clone()))
            }
        }
    }
}

/// A background write's error, if one is waiting.
pub(super) fn take_error(inner: &mut Inner) -> io::Result<()> {
    match inner.write_error.take() {
        Some(e) => Err(e),
        None => Ok(()),
    }
}

fn dup(fd: BorrowedFd<'_>) -> io::Result<OwnedFd> {
    Ok(rustix::io::fcntl_dupfd_cloexec(fd, 0)?)
}

/// `Ok` for what vecio serves: a regular file or a block device.
fn served_kind(fd: BorrowedFd<'_>) -> io::Result<()> {
    let st = rustix::fs::fstat(fd)?;
    match rustix::fs::FileType::from_raw_mode(st.st_mode) {
        rustix::fs::FileType::RegularFile | rustix::fs::FileType::BlockDevice => Ok(()),
        _ => Err(io::Error::new(
            io::ErrorKind::Unsupported,
            "vecio serves regular files and block devices only",
        )),
    }
}

impl From<std::fs::File> for File {
    /// As [`File::from_std`].
    fn from(std: std::fs::File) -> File {
        File::from_std(std)
    }
}

impl FromRawFd for File {
    /// As [`File::from_std`] on the descriptor.
    ///
    /// # Safety
    /// `fd` is an open descriptor the caller owns and gives up, as for `std::fs::File`.
    unsafe fn from_raw_fd(fd: RawFd) -> File {
        // SAFETY: the caller's guarantee, passed on.
        File::from_std(unsafe { std::fs::File::from_raw_fd(fd) })
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.as_fd().as_raw_fd()
    }
}

impl AsFd for File {
    fn as_fd(&self) -> BorrowedFd<'_> {
        match &self.core.backing {
            Backing::Served(f) => f.vecio().as_fd(),
            Backing::Unserved { fd, .. } => fd.as_fd(),
        }
    }
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let mut d = f.debug_struct("vecio_tokio::fs::File");
        match &self.core.backing {
            Backing::Served(file) => d.field("file", file.vecio()),
            Backing::Unserved { fd, why } => d.field("fd", fd).field("unserved", why),
        };
        d.field("pos", &self.core.pos.load(Ordering::Relaxed))
            .finish()
    }
}
