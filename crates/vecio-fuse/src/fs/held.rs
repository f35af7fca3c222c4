//! What the server holds now, for the debug log and `SIGUSR1`: every per-file resource has an
//! owner and an end (docs/architecture.md), and these counts show whether they came back.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use crate::fs::Fs;

/// Passthrough backing files registered with the kernel now, over every mount of the process.
pub(crate) static BACKINGS: AtomicUsize = AtomicUsize::new(0);

/// A snapshot of what a [`Server`](crate::Server) holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Held {
    /// Node ids the kernel holds (until `FORGET`).
    pub nodes: usize,
    /// `O_PATH` descriptors of nodes, cached or kept while open.
    pub node_fds: usize,
    /// Open file handles (until `RELEASE`).
    pub file_handles: usize,
    /// Open directory handles (until `RELEASEDIR`).
    pub dir_handles: usize,
    /// `vecio::File`s open in the process.
    pub open_files: u64,
    /// io_uring fixed-file slots holding a file, over every ring of the process.
    pub ring_slots: usize,
    /// Passthrough backing files registered with the kernel.
    pub backings: usize,
}

impl std::fmt::Display for Held {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "nodes {} (descriptors {}), handles {} files + {} directories, open files {}, ring slots {}, passthrough backings {}",
            self.nodes,
            self.node_fds,
            self.file_handles,
            self.dir_handles,
            self.open_files,
            self.ring_slots,
            self.backings
        )
    }
}

/// Reads what a server holds, and the requests it served, from any thread (see
/// [`Server::held`](crate::Server::held)).
#[derive(Clone)]
pub struct HeldCounter(pub(crate) Arc<Fs>, pub(crate) Arc<crate::WorkerStats>);

impl HeldCounter {
    /// What the server holds now.
    pub fn now(&self) -> Held {
        held(&self.0)
    }

    /// The requests served so far, by opcode.
    pub fn stats(&self) -> &crate::WorkerStats {
        &self.1
    }

    /// What `SIGUSR1` prints: what the server holds, then the requests it served so far
    /// (`...; served requests N (LOOKUP a, ...)`).
    pub fn report(&self) -> String {
        format!("{}; served {}", self.now(), self.1.requests_line())
    }
}

/// What `fs` holds now.
pub(crate) fn held(fs: &Fs) -> Held {
    let (nodes, node_fds) = fs.inodes.counts();
    let (file_handles, dir_handles) = fs.handles.counts();
    Held {
        nodes,
        node_fds,
        file_handles,
        dir_handles,
        open_files: vecio::File::open_count(),
        ring_slots: vecio::engine::registered_files(),
        backings: BACKINGS.load(Ordering::Relaxed),
    }
}
