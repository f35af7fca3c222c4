//! Waiting for a [`Queue`]'s completions from outside: an eventfd the engine signals, for
//! `poll(2)`, epoll or an async runtime.

use std::os::fd::OwnedFd;
use std::sync::Arc;

use super::Queue;
use crate::error::Result;

impl Queue {
    /// Asks the engine to signal `eventfd` whenever a completion becomes ready (see
    /// [`Engine::notify_on`](crate::Engine::notify_on)): wait until it is readable, read it
    /// to reset it, then [`submit`](Self::submit) and [`reap`](Self::reap). Returns `false`
    /// for engines that complete everything inside `submit` (serial, sync): their completions
    /// are ready to reap when `submit` returns, and nothing is ever signalled.
    ///
    /// Requests [parked](Self::parked) behind ranges that *other threads* hold are retried on
    /// every `submit` and `reap`; nothing signals their release, so a caller waiting on the
    /// eventfd alone should also call `submit` now and then while `parked() > 0`.
    pub fn notify_on(&mut self, eventfd: Arc<OwnedFd>) -> Result<bool> {
        self.engine
            .notify_on(eventfd)
            .map_err(|e| self.engine_error(e))
    }
}
