//! `File`: an open file or block device with what vecio learned about it at open: direct mode,
//! the direct-I/O alignment (`statx(STATX_DIOALIGN)`, `BLKSSZGET`), and per-file flags computed
//! once (the cached-iocb-flags idea) so no call recomputes them.

use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd, RawFd};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags};

use crate::error::{Error, Result};
use crate::rangelock::RangeLock;
use crate::RwFlags;

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

/// Direct-I/O alignment of a file: what buffers and offsets must be multiples of.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct DioAlign {
    /// Alignment of buffer addresses in memory (`stx_dio_mem_align`).
    pub mem: u32,
    /// Alignment of file offsets and lengths (`stx_dio_offset_align`).
    pub offset: u32,
    /// Where the numbers came from.
    pub source: AlignSource,
}

impl DioAlign {
    /// True when a transfer of `len` bytes at file offset `offset` meets the offset alignment:
    /// the one rule every part of vecio (engines, `Queue`, servers) uses to decide whether a
    /// direct request goes to the kernel as it is or is widened (bounce buffer,
    /// read-modify-write).
    ///
    /// ```
    /// use vecio::{AlignSource, DioAlign};
    /// let a = DioAlign { mem: 512, offset: 4096, source: AlignSource::Statx };
    /// assert!(a.allows(8192, 4096));
    /// assert!(!a.allows(8192, 100));
    /// assert!(a.allows_segment(0x1000, 4096) && !a.allows_segment(0x1001, 4096));
    /// ```
    #[inline]
    pub fn allows(&self, offset: u64, len: u64) -> bool {
        (offset | len) & (self.offset as u64).wrapping_sub(1) == 0
    }

    /// True when a memory segment at address `addr` of `len` bytes may take part in a direct
    /// transfer: its address meets the memory alignment and its length the offset alignment.
    #[inline]
    pub fn allows_segment(&self, addr: usize, len: usize) -> bool {
        addr & (self.mem as usize).wrapping_sub(1) == 0
            && len & (self.offset as usize).wrapping_sub(1) == 0
    }
}

/// Where a [`DioAlign`] was learned.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum AlignSource {
    /// `statx(STATX_DIOALIGN)`.
    Statx,
    /// The block device's logical block size (`BLKSSZGET`).
    BlockSize,
    /// Neither was available: the conservative default of 4096.
    Default,
}

/// The kind of object a [`File`] is.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum FileKind {
    /// A regular file.
    Regular,
    /// A block device.
    Block,
}

/// How to open a [`File`]; see [`File::options`]. Like `std::fs::OpenOptions`, nothing is
/// set at first: say `read`, `write` or `append`.
///
/// ```
/// use vecio::{Direct, File};
/// # fn main() -> vecio::Result<()> {
/// # let dir = tempfile::tempdir().unwrap();
/// let log = File::options().append(true).create(true).direct(Direct::Off)
///     .open(dir.path().join("log"))?;
/// log.write_at(b"one ", 0)?;
/// log.write_at(b"two", 0)?; // appended: the offset is ignored, as with O_APPEND
/// assert_eq!(log.size().unwrap(), 7);
/// assert!(File::options().open(dir.path().join("log")).is_err()); // neither read nor write
/// # Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    create: bool,
    create_new: bool,
    truncate: bool,
    mode: u32,
    custom_flags: i32,
    direct: Direct,
    flags: RwFlags,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Nothing set, as `std::fs::OpenOptions::new`: no access, no creation, mode `0o666`
    /// (before the umask), [`Direct::Auto`], no per-call flags.
    pub fn new() -> Self {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            create: false,
            create_new: false,
            truncate: false,
            mode: 0o666,
            custom_flags: 0,
            direct: Direct::Auto,
            flags: RwFlags::empty(),
        }
    }
    /// Open for reading (`O_RDONLY` or `O_RDWR`).
    pub fn read(mut self, yes: bool) -> Self {
        self.read = yes;
        self
    }
    /// Open for writing (`O_WRONLY` or `O_RDWR`).
    pub fn write(mut self, yes: bool) -> Self {
        self.write = yes;
        self
    }
    /// Open for appending: writable, and every write goes to the end of the file. vecio
    /// carries it as the per-call `RWF_APPEND` (computed once here) rather than `O_APPEND`,
    /// so that its own aligned writes of a direct file's edge blocks still land where they
    /// belong.
    pub fn append(mut self, yes: bool) -> Self {
        self.append = yes;
        self
    }
    /// Create the file if it does not exist (`O_CREAT`, with [`mode`](Self::mode)); needs
    /// `write` or `append`.
    pub fn create(mut self, yes: bool) -> Self {
        self.create = yes;
        self
    }
    /// Create the file, failing if it exists (`O_CREAT | O_EXCL`); needs `write` or `append`.
    pub fn create_new(mut self, yes: bool) -> Self {
        self.create_new = yes;
        self
    }
    /// Truncate the file to zero length at open (`O_TRUNC`); needs `write`.
    pub fn truncate(mut self, yes: bool) -> Self {
        self.truncate = yes;
        self
    }
    /// Permission bits of a created file, before the umask (default `0o666`), as
    /// `std::os::unix::fs::OpenOptionsExt::mode`.
    pub fn mode(mut self, mode: u32) -> Self {
        self.mode = mode;
        self
    }
    /// Extra `open(2)` flags (`O_NOATIME`, `O_NOFOLLOW`, ...), as
    /// `std::os::unix::fs::OpenOptionsExt::custom_flags`; the access mode bits are ignored.
    pub fn custom_flags(mut self, flags: i32) -> Self {
        self.custom_flags = flags;
        self
    }
    /// Direct-I/O mode (default: [`Direct::Auto`]).
    pub fn direct(mut self, mode: Direct) -> Self {
        self.direct = mode;
        self
    }
    /// Flags added to every call on this file (for example [`RwFlags::DSYNC`] instead of
    /// `O_DSYNC`), computed once here rather than per call.
    pub fn flags(mut self, flags: RwFlags) -> Self {
        self.flags = flags;
        self
    }

    /// Opens `path` (`open(2)`, then `statx(2)` for the direct-I/O alignment). Fails with
    /// `EINVAL` (as `std` does) when no access is asked for, or creation or truncation is
    /// asked for without write access.
    pub fn open(self, path: impl AsRef<Path>) -> Result<File> {
        File::open_with(path.as_ref(), self)
    }

    /// The `open(2)` flags, or why the options cannot open anything.
    fn oflags(&self) -> std::result::Result<OFlags, &'static str> {
        let write = self.write || self.append;
        let mut oflags = match (self.read, write) {
            (true, true) => OFlags::RDWR,
            (false, true) => OFlags::WRONLY,
            (true, false) => OFlags::RDONLY,
            (false, false) => return Err("neither read, write nor append access asked for"),
        };
        if (self.create || self.create_new || self.truncate) && !write {
            return Err("creating or truncating a file needs write or append access");
        }
        if self.truncate && self.append && !self.write {
            return Err("truncating a file needs write access");
        }
        if self.create_new {
            oflags |= OFlags::CREATE | OFlags::EXCL;
        } else if self.create {
            oflags |= OFlags::CREATE;
        }
        if self.truncate {
            oflags |= OFlags::TRUNC;
        }
        let custom = OFlags::from_bits_retain(self.custom_flags as u32 & !(libc::O_ACCMODE as u32));
        Ok(oflags | custom)
    }
}

/// Opens with `O_DIRECT`. A write-only open asks for read access too where the caller's
/// permissions allow it, so that an unaligned write can read the edge blocks of its
/// read-modify-write (the `File` stays write-only to its user); without read permission the
/// open is write-only, and unaligned writes to it fail with `EBADF`.
fn open_direct(path: &Path, oflags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
    if oflags.contains(OFlags::WRONLY) {
        let rdwr = (oflags - OFlags::WRONLY) | OFlags::RDWR;
        match rustix::fs::open(path, rdwr, mode) {
            Err(rustix::io::Errno::ACCESS) | Err(rustix::io::Errno::PERM) => {}
            other => return other,
        }
    }
    rustix::fs::open(path, oflags, mode)
}

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
    pub(crate) fast: crate::FastReadState,
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

    fn open_with(path: &Path, opts: OpenOptions) -> Result<File> {
        let shared: Arc<Path> = Arc::from(path);
        let open_err = |source: std::io::Error| Error::Open {
            path: shared.clone(),
            source,
        };
        let mut oflags = opts
            .oflags()
            .map_err(|why| open_err(std::io::Error::new(std::io::ErrorKind::InvalidInput, why)))?;
        // O_NONBLOCK so that opening a FIFO cannot hang; it is cleared once the file is known
        // to be a regular file or block device.
        oflags |= OFlags::CLOEXEC | OFlags::NONBLOCK;
        let mode = Mode::from_bits_truncate(opts.mode);
        let not_regular = || {
            rustix::fs::stat(path).is_ok_and(|st| {
                let t = rustix::fs::FileType::from_raw_mode(st.st_mode);
                !matches!(
                    t,
                    rustix::fs::FileType::RegularFile | rustix::fs::FileType::BlockDevice
                )
            })
        };
        let (fd, direct) = match opts.direct {
            Direct::Off => (
                rustix::fs::open(path, oflags, mode).map_err(|e| open_err(e.into()))?,
                false,
            ),
            Direct::On | Direct::Auto => match open_direct(path, oflags | OFlags::DIRECT, mode) {
                Ok(fd) => (fd, true),
                Err(e) if e == rustix::io::Errno::INVAL && not_regular() => {
                    return Err(Error::NotRegular { path: shared })
                }
                Err(e) if e == rustix::io::Errno::INVAL && opts.direct == Direct::On => {
                    return Err(Error::DirectRefused {
                        path: shared,
                        source: e.into(),
                    })
                }
                Err(e) if e == rustix::io::Errno::INVAL => {
                    tracing::info!(path = %path.display(), "O_DIRECT refused by the file system; using buffered I/O");
                    (
                        rustix::fs::open(path, oflags, mode).map_err(|e| open_err(e.into()))?,
                        false,
                    )
                }
                Err(e) => return Err(open_err(e.into())),
            },
        };
        let flags = if opts.append {
            opts.flags | RwFlags::APPEND
        } else {
            opts.flags
        };
        Self::finish(
            fd,
            shared,
            direct,
            opts.read,
            opts.write || opts.append,
            flags,
        )
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
        Self::finish(fd, shared, direct, read, write, flags)
    }

    fn finish(
        fd: OwnedFd,
        shared: Arc<Path>,
        direct: bool,
        readable: bool,
        writable: bool,
        flags: RwFlags,
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
        let status = rustix::fs::fcntl_getfl(&fd).map_err(|e| open_err(e.into()))?;
        rustix::fs::fcntl_setfl(&fd, status - OFlags::NONBLOCK).map_err(|e| open_err(e.into()))?;
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
            fast: crate::FastReadState::default(),
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
    pub(crate) fn fast_read_ptr(&self) -> *const crate::FastReadState {
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

fn probe_alignment(fd: BorrowedFd<'_>, kind: FileKind) -> DioAlign {
    use rustix::fs::{AtFlags, StatxFlags};
    if let Ok(stx) = rustix::fs::statx(fd, "", AtFlags::EMPTY_PATH, StatxFlags::DIOALIGN) {
        let has = StatxFlags::from_bits_retain(stx.stx_mask).contains(StatxFlags::DIOALIGN);
        if has && stx.stx_dio_mem_align > 0 && stx.stx_dio_offset_align > 0 {
            return DioAlign {
                mem: stx.stx_dio_mem_align,
                offset: stx.stx_dio_offset_align,
                source: AlignSource::Statx,
            };
        }
    }
    if kind == FileKind::Block {
        if let Ok(bs) = logical_block_size(fd) {
            return DioAlign {
                mem: bs,
                offset: bs,
                source: AlignSource::BlockSize,
            };
        }
    }
    DioAlign {
        mem: 4096,
        offset: 4096,
        source: AlignSource::Default,
    }
}

fn logical_block_size(fd: BorrowedFd<'_>) -> std::io::Result<u32> {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one c_int through the pointer, which is valid for that write.
    let r = unsafe { libc::ioctl(fd.as_raw_fd(), libc::BLKSSZGET, &mut size) };
    if r < 0 || size <= 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(size as u32)
}

fn block_size_bytes(fd: BorrowedFd<'_>) -> std::io::Result<u64> {
    // The end of a block device is its size; vecio never uses the file position otherwise.
    Ok(rustix::fs::seek(fd, rustix::fs::SeekFrom::End(0))?)
}
