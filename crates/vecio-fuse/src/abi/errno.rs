//! The answer to a request that failed: an errno value, as the kernel's FUSE reply carries it.

/// An error answered to the kernel: an errno value.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct Errno(pub i32);

impl Errno {
    /// `EINVAL`: malformed request.
    pub const INVAL: Errno = Errno(libc::EINVAL);
    /// `ENOSYS`: not implemented.
    pub const NOSYS: Errno = Errno(libc::ENOSYS);
    /// `EBADF`: unknown handle.
    pub const BADF: Errno = Errno(libc::EBADF);
    /// `ENOENT`: unknown node.
    pub const NOENT: Errno = Errno(libc::ENOENT);
    /// `ERANGE`: reply buffer too small.
    pub const RANGE: Errno = Errno(libc::ERANGE);
    /// `EOPNOTSUPP`.
    pub const NOTSUP: Errno = Errno(libc::EOPNOTSUPP);
    /// `EROFS`: read-only mount.
    pub const ROFS: Errno = Errno(libc::EROFS);
    /// `EIO`.
    pub const IO: Errno = Errno(libc::EIO);
    /// `EACCES`: the caller may not use the mount (`-o allow_root`).
    pub const ACCES: Errno = Errno(libc::EACCES);
}

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Self {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

/// Result of serving one request.
pub type OpResult<T> = std::result::Result<T, Errno>;
