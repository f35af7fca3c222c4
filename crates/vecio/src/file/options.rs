//! [`OpenOptions`]: how to open a [`File`], as `std::fs::OpenOptions` with vecio's own
//! settings (direct mode, per-call flags computed once).

use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags};

use std::sync::Arc;

use super::{Direct, File};
use crate::error::{Error, Result};
use crate::RwFlags;

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
    pub(super) fn oflags(&self) -> std::result::Result<OFlags, &'static str> {
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
pub(super) fn open_direct(path: &Path, oflags: OFlags, mode: Mode) -> rustix::io::Result<OwnedFd> {
    if oflags.contains(OFlags::WRONLY) {
        let rdwr = (oflags - OFlags::WRONLY) | OFlags::RDWR;
        match rustix::fs::open(path, rdwr, mode) {
            Err(rustix::io::Errno::ACCESS) | Err(rustix::io::Errno::PERM) => {}
            other => return other,
        }
    }
    rustix::fs::open(path, oflags, mode)
}

impl File {
    pub(super) fn open_with(path: &Path, opts: OpenOptions) -> Result<File> {
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
            (opts.read, opts.write || opts.append),
            flags,
            None,
        )
    }
}
