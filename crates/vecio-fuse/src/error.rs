//! Errors of `vecio fuse`: mounting, the FUSE connection, and the answers to requests.

use std::path::PathBuf;

/// What can stop the server (request errors are answered to the kernel, not returned here).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The source directory cannot be served.
    #[error("source {path}: {source}")]
    Source {
        /// The directory.
        path: PathBuf,
        /// Why.
        source: std::io::Error,
    },
    /// Mounting failed.
    #[error("mounting on {mountpoint}: {reason}")]
    Mount {
        /// The mount point.
        mountpoint: PathBuf,
        /// What went wrong, for a person.
        reason: String,
    },
    /// `/dev/fuse` failed.
    #[error("/dev/fuse: {what}: {source}")]
    Device {
        /// The step.
        what: &'static str,
        /// The system error.
        source: std::io::Error,
    },
    /// The kernel's `FUSE_INIT` could not be accepted.
    #[error("FUSE_INIT: {0}")]
    Init(String),
    /// A bad option.
    #[error("{0}")]
    Option(String),
}

/// Result of the server's own steps.
pub type Result<T> = std::result::Result<T, Error>;

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
}

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Self {
        Errno(e.raw_os_error())
    }
}

impl From<std::io::Error> for Errno {
    fn from(e: std::io::Error) -> Self {
        Errno(e.raw_os_error().unwrap_or(libc::EIO))
    }
}

impl From<vecio::Error> for Errno {
    fn from(e: vecio::Error) -> Self {
        use vecio::Invalid;
        if let Some(n) = e.raw_os_error() {
            return Errno(n);
        }
        match e {
            vecio::Error::Invalid {
                reason: Invalid::NotReadable | Invalid::NotWritable,
                ..
            } => Errno::BADF,
            vecio::Error::Invalid {
                reason: Invalid::Overflow,
                ..
            } => Errno(libc::EFBIG),
            vecio::Error::Invalid { .. } | vecio::Error::NotRegular { .. } => Errno::INVAL,
            _ => Errno::IO,
        }
    }
}

/// Result of serving one request.
pub type OpResult<T> = std::result::Result<T, Errno>;
