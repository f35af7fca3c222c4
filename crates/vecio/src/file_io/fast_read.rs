//! The fast-read policy applied to one file: a buffered read tried inline with `RWF_NOWAIT`,
//! its outcome recorded in the file's own history.

use crate::fast_read::{Attempt, Outcome};
use crate::{FastReadPolicy, File, IoIter, RwFlags};

impl File {
    /// The fast-read policy on its own, for servers with their own thread pool: tries the read
    /// inline with `RWF_NOWAIT` when `policy` says so for this file, and records the outcome.
    pub fn try_read_inline(
        &self,
        iter: IoIter<'_>,
        offset: u64,
        policy: &FastReadPolicy,
    ) -> crate::Result<Attempt> {
        let state = self.fast_read_state();
        if self.is_direct() || !state.should_try(policy) {
            return Ok(Attempt::Skipped);
        }
        let want = iter.len();
        let at_eof = |n: usize| self.size().is_ok_and(|size| offset + n as u64 >= size);
        match self.io_at(iter, offset, RwFlags::NOWAIT) {
            Ok(n) if n == want || n == 0 || at_eof(n) => {
                state.record(Outcome::Hit, policy);
                Ok(Attempt::Done(n))
            }
            Ok(n) => {
                state.record(Outcome::Partial(n as f64 / want as f64), policy);
                Ok(Attempt::Partial(n))
            }
            Err(e) if e.is_would_block() => {
                state.record(Outcome::Miss, policy);
                Ok(Attempt::WouldBlock)
            }
            Err(e) if e.raw_os_error() == Some(libc::EOPNOTSUPP) => {
                state.record(Outcome::Unsupported, policy);
                Ok(Attempt::Skipped)
            }
            Err(e) => Err(e),
        }
    }
}
