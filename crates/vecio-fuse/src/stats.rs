//! Counters of the serving threads (`/dev/fuse` workers and FUSE-over-io_uring queues): one
//! set shared by all of them, added to by the dispatcher and read by the server's summary.

use std::sync::atomic::{AtomicU64, Ordering};

/// Counters a worker keeps (all workers add into one).
#[derive(Default, Debug)]
pub struct WorkerStats {
    /// Requests served.
    pub requests: AtomicU64,
    /// `READ` requests and their bytes.
    pub reads: AtomicU64,
    /// Bytes read.
    pub read_bytes: AtomicU64,
    /// `WRITE` requests.
    pub writes: AtomicU64,
    /// Bytes written.
    pub write_bytes: AtomicU64,
    /// Largest `READ` or `WRITE` seen, in bytes.
    pub largest_io: AtomicU64,
    /// `WRITE` payloads that arrived page-aligned.
    pub aligned_payloads: AtomicU64,
    /// Requests that came through FUSE over io_uring (the rest came through `/dev/fuse`).
    pub ring_requests: AtomicU64,
    /// Engine reads and writes that ran on a registered buffer (see `crate::transport::buffers`).
    pub fixed_buffer_ops: AtomicU64,
}

impl WorkerStats {
    /// Counts a served `READ` of `n` bytes.
    pub fn note_read(&self, n: usize) {
        self.reads.fetch_add(1, Ordering::Relaxed);
        self.read_bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.largest_io.fetch_max(n as u64, Ordering::Relaxed);
    }

    /// Counts a served `WRITE` of `n` bytes whose payload was (or was not) page-aligned.
    pub fn note_write(&self, n: usize, aligned: bool) {
        self.writes.fetch_add(1, Ordering::Relaxed);
        self.write_bytes.fetch_add(n as u64, Ordering::Relaxed);
        self.largest_io.fetch_max(n as u64, Ordering::Relaxed);
        self.aligned_payloads
            .fetch_add(aligned as u64, Ordering::Relaxed);
    }
}
