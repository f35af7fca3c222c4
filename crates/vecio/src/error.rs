//! The one error type of the crate: every variant names the file, and where a request is
//! involved, its index in the batch and its offset.

use std::io;
use std::path::Path;
use std::sync::Arc;

use crate::RwFlags;

/// Errors returned by vecio. Each names the file; request errors also carry the request's index
/// in its batch and its file offset.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// The file could not be opened or inspected.
    #[error("{path}: cannot open: {source}", path = path.display())]
    Open {
        /// The file.
        path: Arc<Path>,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// `Direct::On` was asked for and the file system refuses `O_DIRECT`.
    #[error("{path}: direct I/O (O_DIRECT) refused: {source}", path = path.display())]
    DirectRefused {
        /// The file.
        path: Arc<Path>,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The path is neither a regular file nor a block device.
    #[error("{path}: not a regular file or block device", path = path.display())]
    NotRegular {
        /// The file.
        path: Arc<Path>,
    },
    /// A request failed in the kernel.
    #[error("{path}: request {request} at offset {offset}: {source}", path = path.display())]
    Io {
        /// The file.
        path: Arc<Path>,
        /// The request's index in its batch.
        request: usize,
        /// The file offset the failing call was made at.
        offset: u64,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
    /// The file or kernel refused a per-call flag (`EOPNOTSUPP`).
    #[error("{path}: request {request} at offset {offset}: flags {flag:?} refused by the file system or kernel", path = path.display())]
    Unsupported {
        /// The flags of the refused call.
        flag: RwFlags,
        /// The file.
        path: Arc<Path>,
        /// The request's index in its batch.
        request: usize,
        /// The file offset of the refused call.
        offset: u64,
    },
    /// A request was malformed: empty, overflowing, or of the wrong direction for the file.
    #[error("{path}: request {request} at offset {offset}: {reason}", path = path.display())]
    Invalid {
        /// The file.
        path: Arc<Path>,
        /// The request's index in its batch.
        request: usize,
        /// The request's offset.
        offset: u64,
        /// What is wrong with it.
        reason: Invalid,
    },
    /// An engine could not be set up (io_uring refused, thread spawn failed, ...).
    #[error("{engine} engine: {source}")]
    Engine {
        /// Which engine.
        engine: &'static str,
        /// What the kernel said.
        #[source]
        source: io::Error,
    },
}

/// Why a request was refused before reaching the kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum Invalid {
    /// The request moves no bytes.
    #[error("empty request (no bytes to move)")]
    Empty,
    /// `offset + length` does not fit in a file offset.
    #[error("offset + length overflows a file offset")]
    Overflow,
    /// A write to a file opened without write access.
    #[error("file is not open for writing")]
    NotWritable,
    /// A read from a file opened without read access.
    #[error("file is not open for reading")]
    NotReadable,
    /// A read into buffers that were given for writing (or the reverse).
    #[error("buffers are of the wrong direction for this request")]
    Direction,
}

impl Error {
    /// The `io::Error` behind a kernel failure, if this is one.
    pub fn io_error(&self) -> Option<&io::Error> {
        match self {
            Error::Io { source, .. }
            | Error::Open { source, .. }
            | Error::DirectRefused { source, .. }
            | Error::Engine { source, .. } => Some(source),
            _ => None,
        }
    }

    /// True when the request would have blocked (`EAGAIN` under [`RwFlags::NOWAIT`]).
    pub fn is_would_block(&self) -> bool {
        self.io_error()
            .is_some_and(|e| e.raw_os_error() == Some(libc::EAGAIN))
    }

    /// The raw errno behind a kernel failure, if any.
    pub fn raw_os_error(&self) -> Option<i32> {
        match self {
            Error::Unsupported { .. } => Some(libc::EOPNOTSUPP),
            _ => self.io_error().and_then(io::Error::raw_os_error),
        }
    }
}

/// The crate's result type.
pub type Result<T, E = Error> = std::result::Result<T, E>;

impl From<Error> for io::Error {
    /// An `io::Error` of the kind the errno behind `e` maps to (`InvalidInput` for a malformed
    /// request or a path that is not a file or device), whose message is `e`'s (with the file,
    /// request and offset) and whose inner error is `e` itself: `get_ref()` and a downcast give
    /// it back, with its [`raw_os_error`](Error::raw_os_error).
    fn from(e: Error) -> io::Error {
        let kind = match (&e, e.raw_os_error()) {
            (Error::Invalid { .. } | Error::NotRegular { .. }, _) => io::ErrorKind::InvalidInput,
            (_, Some(errno)) => io::Error::from_raw_os_error(errno).kind(),
            (_, None) => e.io_error().map_or(io::ErrorKind::Other, io::Error::kind),
        };
        io::Error::new(kind, e)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_keeps_the_kind_and_the_vecio_error() {
        let e = Error::Io {
            path: Arc::from(Path::new("/x")),
            request: 2,
            offset: 4096,
            source: io::Error::from_raw_os_error(libc::ENOSPC),
        };
        let io: io::Error = e.into();
        assert_eq!(io.kind(), io::ErrorKind::StorageFull);
        assert!(
            io.to_string().contains("/x: request 2 at offset 4096"),
            "{io}"
        );
        let back = io.get_ref().and_then(|i| i.downcast_ref::<Error>());
        assert_eq!(back.and_then(Error::raw_os_error), Some(libc::ENOSPC));
        let bad = Error::Invalid {
            path: Arc::from(Path::new("/x")),
            request: 0,
            offset: 0,
            reason: Invalid::Empty,
        };
        assert_eq!(io::Error::from(bad).kind(), io::ErrorKind::InvalidInput);
    }
}
