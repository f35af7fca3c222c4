//! [`File`]: an open file or block device with what vecio learned about it at open: direct mode,
//! the direct-I/O alignment (`statx(STATX_DIOALIGN)`, `BLKSSZGET`), and per-file flags computed
//! once (the cached-iocb-flags idea) so no call recomputes them.
//!
//! The crate root has what most callers name ([`File`], [`OpenOptions`], [`Direct`],
//! [`DioAlign`]); this module also has what some answers are made of: [`FileKind`],
//! [`AlignSource`], the aligned [`Window`] around a request, [`Attempt`] and
//! [`FallocateFlags`].
//!
//! # The file layer
//!
//! This module is what an open file *is*: the descriptor, its kind and access mode, its
//! alignment and the block arithmetic over it (`window.rs`), the flags cached at open, its
//! process-unique id (the key of its fixed-file slots), its range lock and its fast-read
//! history; and opening (`options.rs`). The request core, `direct/`, `Batch` and `Queue` are
//! built on it. The calls that move bytes ([`File::read_at`], [`File::write_at`],
//! [`File::io_at`], [`File::fallocate`], [`File::try_read_inline`]...) run requests through
//! those layers, so they are written a layer above them, in the crate's `file_io/`; they are
//! methods of the same [`File`].

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use rustix::fs::OFlags;

use crate::error::{Error, Result};
use crate::fast_read::{FastReadPolicy, FastReadState, FastReadStats};
use crate::rangelock::RangeLock;
use crate::RwFlags;

mod align;
mod options;
mod window;

pub use crate::fast_read::Attempt;
use align::probe_alignment;
pub use align::{AlignSource, DioAlign};
pub use options::OpenOptions;
/// `fallocate(2)` modes, for [`File::fallocate`].
pub use rustix::fs::FallocateFlags;
pub use window::Window;

/// Whether a file is opened for direct I/O (`O_DIRECT`, bypassing the page cache).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum Direct {
    /// Buffered I/O through the page cache.
    Off,
    /// Direct I/O; opening fails if the file system refuses it.
    On,
    /// Direct I/O where the file system allows it, buffered elsewhere (said once, at info level).
    #[default]
    Auto,
}

/// The kind of object a [`File`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A block device.
    Block,
}

/// Largest file offset a request may reach (`loff_t` is signed).
pub(crate) const MAX_OFFSET: u64 = i64::MAX as u64;

static NEXT_FILE_ID: AtomicU64 = AtomicU64::new(1);

/// `File`s alive in this process.
static OPEN_FILES: AtomicU64 = AtomicU64::new(0);

/// An open file or block device, ready for vecio requests.
///
/// ```
/// # fn main() -> vecio::Result<()> {
/// let dir = tempfile::tempdir().unwrap();
/// let file = vecio::File::options().read(true).write(true).create(true)
///     .open(dir.path().join("data"))?;
/// file.write_at(b"hello", 0)?;
/// let mut buf = [0u8; 5];
/// assert_eq!(file.read_at(&mut buf, 0)?, 5);
/// # Ok(()) }
/// ```
pub struct File {
    fd: OwnedFd,
    path: Arc<Path>,
    id: u64,
    kind: FileKind,
    direct: bool,
    align: DioAlign,
    readable: bool,
    writable: bool,
    /// Flags added to every call (cached at open).
    base_flags: RwFlags,
    /// `offset - 1` and `mem - 1` of the alignment, or 0 for buffered files: the whole
    /// alignment test of the hot path is two ANDs.
    offset_mask: u64,
    mem_mask: usize,
    /// Flags the kernel refused on this file (`EOPNOTSUPP`), learned at run time.
    refused: AtomicU32,
    /// The inode's range lock, shared by every `File` of the inode in this process.
    pub(crate) locks: Arc<RangeLock>,
    pub(crate) fast: FastReadState,
    /// Buffered, readable, no per-file flags: `read_at` is a bare `pread` (decided at open).
    pub(crate) plain_read: bool,
    /// Buffered, writable, no per-file flags: `write_at` is a bare `pwrite`.
    pub(crate) plain_write: bool,
    raw: RawFd,
}

impl File {
    /// Options for opening a file, nothing set (as `std::fs::File::options`): say `read`,
    /// `write` or `append`. [`Direct::Auto`], no per-call flags.
    pub fn options() -> OpenOptions {
        OpenOptions::new()
    }

    /// Opens `path` read-only with [`Direct::Auto`].
    pub fn open(path: impl AsRef<Path>) -> Result<File> {
        Self::options().read(true).open(path)
    }

    /// Wraps a descriptor the caller opened itself (for example with `openat2` beneath a
    /// directory, as a file server does), learning what [`File::open`] learns: kind, direct
    /// mode (`O_DIRECT` in the descriptor's status flags), access mode and alignment. `label`
    /// names the file in error messages. Fails with [`Error::NotRegular`] unless `fd` is a
    /// regular file or block device.
    pub fn from_fd(fd: OwnedFd, label: impl AsRef<Path>, flags: RwFlags) -> Result<File> {
        let shared: Arc<Path> = Arc::from(label.as_ref());
        let status = rustix::fs::fcntl_getfl(&fd).map_err(|e| Error::Open {
            path: shared.clone(),
            source: e.into(),
        })?;
        let (read, write) = match status & OFlags::RWMODE {
            m if m == OFlags::RDWR => (true, true),
            m if m == OFlags::WRONLY => (false, true),
            _ => (true, false),
        };
        let direct = status.contains(OFlags::DIRECT);
        Self::finish(fd, shared, direct, (read, write), flags, Some(status))
    }

    /// The `File` over `fd`; `status` is its status flags when the caller read them already.
    fn finish(
        fd: OwnedFd,
        shared: Arc<Path>,
        direct: bool,
        (readable, writable): (bool, bool),
        flags: RwFlags,
        status: Option<OFlags>,
    ) -> Result<File> {
        let open_err = |source: std::io::Error| Error::Open {
            path: shared.clone(),
            source,
        };
        let st = rustix::fs::fstat(&fd).map_err(|e| open_err(e.into()))?;
        let kind = match rustix::fs::FileType::from_raw_mode(st.st_mode) {
            rustix::fs::FileType::RegularFile => FileKind::Regular,
            rustix::fs::FileType::BlockDevice => FileKind::Block,
            _ => return Err(Error::NotRegular { path: shared }),
        };
        let status = match status {
            Some(s) => s,
            None => rustix::fs::fcntl_getfl(&fd).map_err(|e| open_err(e.into()))?,
        };
        if status.contains(OFlags::NONBLOCK) {
            rustix::fs::fcntl_setfl(&fd, status - OFlags::NONBLOCK)
                .map_err(|e| open_err(e.into()))?;
        }
        let align = probe_alignment(fd.as_fd(), kind);
        let (offset_mask, mem_mask) = if direct {
            (align.offset as u64 - 1, align.mem as usize - 1)
        } else {
            (0, 0)
        };
        let raw = fd.as_raw_fd();
        OPEN_FILES.fetch_add(1, Ordering::Relaxed);
        Ok(File {
            fd,
            path: shared,
            id: NEXT_FILE_ID.fetch_add(1, Ordering::Relaxed),
            kind,
            direct,
            align,
            readable,
            writable,
            base_flags: flags,
            offset_mask,
            mem_mask,
            refused: AtomicU32::new(0),
            // A block device is known by its device number, whichever node opened it.
            locks: match kind {
                FileKind::Block => crate::rangelock::for_inode(u64::MAX, st.st_rdev),
                FileKind::Regular => crate::rangelock::for_inode(st.st_dev, st.st_ino),
            },
            fast: FastReadState::default(),
            plain_read: !direct && readable && flags.is_empty(),
            plain_write: !direct && writable && flags.is_empty(),
            raw,
        })
    }

    /// The path the file was opened by.
    pub fn path(&self) -> &Path {
        &self.path
    }

    pub(crate) fn shared_path(&self) -> Arc<Path> {
        self.path.clone()
    }

    /// A process-unique id, used by engines to map files to fixed-file slots.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// How many `File`s are open in this process now: what a server prints as its open files,
    /// and what a test compares with its baseline.
    pub fn open_count() -> u64 {
        OPEN_FILES.load(Ordering::Relaxed)
    }

    /// Regular file or block device.
    pub fn kind(&self) -> FileKind {
        self.kind
    }

    /// True when the file was opened with `O_DIRECT`.
    pub fn is_direct(&self) -> bool {
        self.direct
    }

    /// The direct-I/O alignment learned at open (meaningful whether or not direct I/O is on).
    pub fn dio_align(&self) -> DioAlign {
        self.align
    }

    /// True when the file can be read.
    pub fn is_readable(&self) -> bool {
        self.readable
    }

    /// True when the file can be written.
    pub fn is_writable(&self) -> bool {
        self.writable
    }

    /// Flags added to every call on this file.
    pub fn base_flags(&self) -> RwFlags {
        self.base_flags
    }

    /// Flags the kernel has refused on this file so far.
    pub fn refused_flags(&self) -> RwFlags {
        RwFlags::from_bits_retain(self.refused.load(Ordering::Relaxed))
    }

    pub(crate) fn note_refused(&self, flags: RwFlags) {
        self.refused.fetch_or(flags.bits(), Ordering::Relaxed);
    }

    /// True when a request at `offset` over `iter` can go to the kernel as it is: always for
    /// buffered files; for direct files when offset, length and every segment are aligned.
    #[inline]
    pub fn is_aligned_request(&self, offset: u64, iter: &crate::IoIter<'_>) -> bool {
        if !self.direct {
            return true;
        }
        self.align.allows(offset, iter.len() as u64)
            && iter.is_aligned(self.mem_mask + 1, self.offset_mask as usize + 1)
    }

    /// Size of the file in bytes (`fstat(2)`), or of the block device (`lseek(2)` with
    /// `SEEK_END`).
    pub fn size(&self) -> std::io::Result<u64> {
        match self.kind {
            FileKind::Regular => Ok(rustix::fs::fstat(&self.fd)?.st_size as u64),
            FileKind::Block => block_size_bytes(self.fd.as_fd()),
        }
    }

    /// Flushes written data to stable storage (`fdatasync(2)`).
    pub fn sync_data(&self) -> std::io::Result<()> {
        Ok(rustix::fs::fdatasync(&self.fd)?)
    }

    /// The fast-read state engines may use, or null for a direct file (a direct read always
    /// waits for the device, so trying it inline would block the caller).
    pub(crate) fn fast_read_ptr(&self) -> *const FastReadState {
        if self.direct {
            std::ptr::null()
        } else {
            &self.fast
        }
    }

    /// The descriptor, cached so the hot path does not go through `OwnedFd`.
    #[inline]
    pub(crate) fn raw_fd(&self) -> RawFd {
        self.raw
    }

    /// Path for error messages.
    pub fn display_path(&self) -> PathBuf {
        self.path.to_path_buf()
    }

    /// This file's fast-read history.
    pub(crate) fn fast_read_state(&self) -> &FastReadState {
        &self.fast
    }

    /// A snapshot of this file's fast-read counters under `policy`.
    pub fn fast_read_stats(&self, policy: &FastReadPolicy) -> FastReadStats {
        self.fast.stats(policy)
    }

    /// `ftruncate(2)` for a caller that already holds the blocks from `len` on (the
    /// read-modify-write cutting back the end it grew).
    pub(crate) fn set_len_unlocked(&self, len: u64) -> std::io::Result<()> {
        Ok(rustix::fs::ftruncate(self, len)?)
    }

    /// The error for request `index` failing at `offset` with `errno`: a refused flag becomes
    /// [`Error::Unsupported`] (and is remembered on the file), anything else [`Error::Io`].
    pub(crate) fn request_error(
        &self,
        index: usize,
        offset: u64,
        flags: RwFlags,
        errno: i32,
    ) -> Error {
        if errno == libc::EOPNOTSUPP && !flags.is_empty() {
            self.note_refused(flags);
            return Error::Unsupported {
                flag: flags,
                path: self.shared_path(),
                request: index,
                offset,
            };
        }
        Error::Io {
            path: self.shared_path(),
            request: index,
            offset,
            source: std::io::Error::from_raw_os_error(errno),
        }
    }
}

/// Dropping the last owner of a `File` closes it everywhere: every io_uring ring that holds it
/// in a fixed-file slot lets go at once (even with other requests in flight), so an unlinked
/// file's blocks come back as they would after `close(2)`.
impl Drop for File {
    fn drop(&mut self) {
        crate::engine::release_file(self.id);
        OPEN_FILES.fetch_sub(1, Ordering::Relaxed);
    }
}

impl AsRawFd for File {
    fn as_raw_fd(&self) -> RawFd {
        self.fd.as_raw_fd()
    }
}

impl AsFd for File {
    #[inline]
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.fd.as_fd()
    }
}

impl std::fmt::Debug for File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("File")
            .field("path", &self.path)
            .field("kind", &self.kind)
            .field("direct", &self.direct)
            .field("align", &self.align)
            .finish()
    }
}

fn block_size_bytes(fd: BorrowedFd<'_>) -> std::io::Result<u64> {
    // The end of a block device is its size; vecio never uses the file position otherwise.
    Ok(rustix::fs::seek(fd, rustix::fs::SeekFrom::End(0))?)
}
