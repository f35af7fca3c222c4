//! [`PushError`]: a refused push, with the request's buffers handed back.

use super::OwnedBuf;
use crate::error::Error;

/// The error of a refused push, with the request's buffers handed back, so the caller can
/// retry or reuse them. Converts into [`Error`] (dropping the buffers) for `?`.
pub struct PushError {
    /// What was wrong.
    pub error: Error,
    /// The request's buffers.
    pub bufs: Vec<OwnedBuf>,
}

impl std::fmt::Debug for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PushError")
            .field("error", &self.error)
            .field("bufs", &self.bufs.len())
            .finish()
    }
}

impl std::fmt::Display for PushError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.error.fmt(f)
    }
}

impl std::error::Error for PushError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        Some(&self.error)
    }
}

impl From<PushError> for Error {
    fn from(e: PushError) -> Error {
        e.error
    }
}

impl From<PushError> for std::io::Error {
    fn from(e: PushError) -> std::io::Error {
        e.error.into()
    }
}
