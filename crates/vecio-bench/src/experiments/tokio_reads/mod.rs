//! `vecio bench tokio`: the 2015 preadv2 document's experiment (seed 002) in today's Rust.
//!
//! 16 KiB reads, 32 tasks in flight in a multi-threaded tokio runtime, over (a) a mostly
//! cached file, (b) a large file opened O_DIRECT, (c) the 73/18/9 mix of `bench nowait`
//! (cached random / uncached random / sequential), through `tokio::fs` style (`spawn_blocking`
//! with `pread`, as `tokio::fs` does), through vecio-tokio, and through tokio-uring (its own
//! single-threaded io_uring runtime) for comparison.

use std::path::PathBuf;
use std::time::Duration;

/// Bytes per read.
pub const READ: usize = 16 * 1024;

/// Options of `vecio bench tokio`.
#[derive(Debug, Clone)]
pub struct TokioOptions {
    /// Directory for the scratch files (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Size of the cached file.
    pub medium: u64,
    /// Size of the large (uncached / direct) file.
    pub large: u64,
    /// Time per measurement.
    pub runtime: Duration,
    /// Repetitions.
    pub repeat: u32,
    /// Tasks in flight.
    pub tasks: usize,
    /// tokio::fs and vecio-tokio on a current-thread runtime (default: multi-threaded, as an
    /// ordinary service runs).
    pub current_thread: bool,
}

impl Default for TokioOptions {
    fn default() -> Self {
        TokioOptions {
            dir: None,
            medium: 64 << 20,
            large: 1 << 30,
            runtime: Duration::from_secs(3),
            repeat: 3,
            tasks: 32,
            current_thread: false,
        }
    }
}

mod run;
mod uring_path;
pub use run::{render, run, targets, Cell, TokioReport};
