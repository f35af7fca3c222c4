//! The one request core. Every entry point ([`Batch`](crate::Batch), [`Queue`](crate::Queue),
//! the blocking [`File`] calls and the read-modify-write stages) checks a request with
//! [`validate`], and accounts each transfer of it with [`Progress::account`], so the rules for
//! "done", "resume the rest" and "failed after some bytes" are written once.

use crate::error::{Error, Invalid, Result};
use crate::file::{FileKind, MAX_OFFSET};
use crate::{Dir, File, RwFlags};

/// Checks a request of `len` bytes at `offset` before anything reaches the kernel: not empty,
/// within the largest file offset, and of a direction the file was opened for. `index` is the
/// request's index in its batch (0 elsewhere), for the error.
pub(crate) fn validate(file: &File, index: usize, offset: u64, len: usize, dir: Dir) -> Result<()> {
    let invalid = |reason| Error::Invalid {
        path: file.shared_path(),
        request: index,
        offset,
        reason,
    };
    if len == 0 {
        return Err(invalid(Invalid::Empty));
    }
    if offset
        .checked_add(len as u64)
        .is_none_or(|end| end > MAX_OFFSET)
    {
        return Err(invalid(Invalid::Overflow));
    }
    match dir {
        Dir::Dest if !file.is_readable() => Err(invalid(Invalid::NotReadable)),
        Dir::Source if !file.is_writable() => Err(invalid(Invalid::NotWritable)),
        _ => Ok(()),
    }
}

/// Where a request stands after one transfer.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Step {
    /// Bytes are left and nothing stopped it: issue the rest from [`Progress::offset`].
    Resume,
    /// Finished with `bytes` done; `error` is the errno that stopped it short, if one did
    /// (`None`: complete, or a read that reached the end of the file).
    Done {
        /// Bytes moved in all.
        bytes: usize,
        /// What stopped it before the end, when something did.
        error: Option<i32>,
    },
    /// Failed before moving a byte.
    Failed(i32),
}

/// A request's progress: bytes done so far and the offset of what is left.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Progress {
    /// Bytes moved so far.
    pub(crate) done: usize,
    /// File offset of what is left.
    pub(crate) offset: u64,
    /// Read (`Dest`) or write (`Source`).
    pub(crate) dir: Dir,
}

impl Progress {
    /// A request starting at `offset`.
    pub(crate) fn new(offset: u64, dir: Dir) -> Self {
        Progress {
            done: 0,
            offset,
            dir,
        }
    }

    /// Accounts a transfer that moved `n` of the `rest` bytes left and, when `errno` is set,
    /// stopped on that error. A read that moves nothing has reached the end of the file; a
    /// write that moves nothing and has done nothing is `EIO` (no progress is possible).
    pub(crate) fn account(&mut self, n: usize, errno: Option<i32>, rest: usize) -> Step {
        self.done += n;
        self.offset += n as u64;
        if n >= rest {
            return Step::Done {
                bytes: self.done,
                error: None,
            };
        }
        match errno {
            Some(e) if self.done > 0 => Step::Done {
                bytes: self.done,
                error: Some(e),
            },
            Some(e) => Step::Failed(e),
            None if n > 0 => Step::Resume,
            None if self.dir == Dir::Source && self.done == 0 => Step::Failed(libc::EIO),
            None => Step::Done {
                bytes: self.done,
                error: None,
            },
        }
    }

    /// [`account`](Self::account) for a kernel result: bytes (>= 0) or `-errno`.
    pub(crate) fn account_result(&mut self, result: i64, rest: usize) -> Step {
        if result < 0 {
            self.account(0, Some(-result as i32), rest)
        } else {
            self.account(result as usize, None, rest)
        }
    }

    /// True when a read's remainder starts at or past the end of a regular file (`fstat`):
    /// a short read there is finished, without another trip whose only news would be a
    /// zero-byte read.
    pub(crate) fn at_eof(&self, file: &File) -> bool {
        self.dir == Dir::Dest
            && file.kind() == FileKind::Regular
            && file.size().is_ok_and(|size| self.offset >= size)
    }
}

impl Step {
    /// The blocking calls' answer (`read(2)` style): the bytes when any were moved (the error
    /// that stopped them is met by the next call), else the error.
    pub(crate) fn into_result(
        self,
        file: &File,
        index: usize,
        at: u64,
        flags: RwFlags,
    ) -> Result<usize> {
        match self {
            Step::Resume => Ok(0),
            Step::Done { bytes, .. } => Ok(bytes),
            Step::Failed(errno) => Err(file.request_error(index, at, flags, errno)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_complete_transfer_is_done() {
        let mut p = Progress::new(100, Dir::Dest);
        assert_eq!(
            p.account(10, None, 10),
            Step::Done {
                bytes: 10,
                error: None
            }
        );
        assert_eq!(p.offset, 110);
    }

    #[test]
    fn a_short_transfer_resumes_and_a_zero_read_is_end_of_file() {
        let mut p = Progress::new(0, Dir::Dest);
        assert_eq!(p.account(4, None, 10), Step::Resume);
        assert_eq!(
            p.account(0, None, 6),
            Step::Done {
                bytes: 4,
                error: None
            }
        );
    }

    #[test]
    fn an_error_after_bytes_keeps_both() {
        let mut p = Progress::new(0, Dir::Source);
        assert_eq!(p.account_result(4, 10), Step::Resume);
        assert_eq!(
            p.account_result(-(libc::ENOSPC as i64), 6),
            Step::Done {
                bytes: 4,
                error: Some(libc::ENOSPC)
            }
        );
    }

    #[test]
    fn a_write_that_moves_nothing_fails() {
        let mut p = Progress::new(0, Dir::Source);
        assert_eq!(p.account(0, None, 10), Step::Failed(libc::EIO));
        let mut p = Progress::new(0, Dir::Dest);
        assert_eq!(
            p.account_result(-(libc::EIO as i64), 10),
            Step::Failed(libc::EIO)
        );
    }
}
