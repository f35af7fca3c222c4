//! What the server holds now, for the debug log and `SIGUSR1`: connections, open exports and
//! what the library holds for them (docs/architecture.md says who owns each and until when).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::exports::Exports;

/// A snapshot of what a [`Server`](crate::Server) holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Client connections open now (each with its own ring and buffers).
    pub connections: usize,
    /// Exports whose file is open: one for a single export; for a directory, the names asked
    /// for and not retired.
    pub exports: usize,
    /// Exports retired (file removed or replaced) that a connection still uses.
    pub retired: usize,
    /// `vecio::File`s open in the process.
    pub open_files: u64,
    /// io_uring fixed-file slots holding a file, over every ring of the process.
    pub ring_slots: usize,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "connections {}, exports {} (retired, still in use: {}), open files {}, ring slots {}",
            self.connections, self.exports, self.retired, self.open_files, self.ring_slots
        )
    }
}

/// Reads what a server holds, from any thread (see [`Server::held`](crate::Server::held)).
#[derive(Clone)]
pub struct HeldCounter {
    pub(crate) exports: Arc<Exports>,
    pub(crate) connections: Arc<AtomicUsize>,
}

impl HeldCounter {
    /// What the server holds now.
    pub fn now(&self) -> Held {
        let (exports, retired) = self.exports.open_counts();
        Held {
            connections: self.connections.load(Ordering::Relaxed),
            exports,
            retired,
            open_files: vecio::File::open_count(),
            ring_slots: vecio::engine::registered_files(),
        }
    }
}

/// Counts one connection while alive.
pub(crate) struct ConnectionCount(Arc<AtomicUsize>);

impl ConnectionCount {
    pub(crate) fn new(count: &Arc<AtomicUsize>) -> ConnectionCount {
        count.fetch_add(1, Ordering::Relaxed);
        ConnectionCount(count.clone())
    }
}

impl Drop for ConnectionCount {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}
