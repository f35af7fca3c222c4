//! Errors of `vecio fuse`: mounting and the FUSE connection; and how the system's errors become
//! the answers to requests ([`Errno`], which lives with the ABI in `abi/errno.rs`).

use std::path::PathBuf;

pub use crate::abi::errno::{Errno, OpResult};

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

impl From<rustix::io::Errno> for Errno {
    fn from(e: rustix::io::Errno) -> Self {
        Errno(e.raw_os_error())
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
