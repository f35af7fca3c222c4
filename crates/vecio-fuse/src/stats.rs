//! Counters of the serving threads (`/dev/fuse` workers and FUSE-over-io_uring queues): one
//! set shared by all of them, added to by the dispatcher and read by the server's summary.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::abi::Opcode;

/// Opcodes counted one by one (`FUSE_STATX` is 52); higher ones share the last slot.
const COUNTED_OPCODES: usize = 64;

/// One counter per opcode number.
#[derive(Debug)]
pub struct OpcodeCounts(pub [AtomicU64; COUNTED_OPCODES]);

impl Default for OpcodeCounts {
    fn default() -> Self {
        OpcodeCounts(std::array::from_fn(|_| AtomicU64::new(0)))
    }
}

/// Counters a worker keeps (all workers add into one).
#[derive(Default, Debug)]
pub struct WorkerStats {
    /// Requests served.
    pub requests: AtomicU64,
    /// Requests served, by opcode number (see [`WorkerStats::by_opcode`]).
    pub per_opcode: OpcodeCounts,
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
    /// Counts one request of opcode number `opcode` (known to vecio or not).
    pub fn note_request(&self, opcode: u32) {
        self.requests.fetch_add(1, Ordering::Relaxed);
        let slot = (opcode as usize).min(COUNTED_OPCODES - 1);
        self.per_opcode.0[slot].fetch_add(1, Ordering::Relaxed);
    }

    /// The requests served so far by opcode (only opcodes seen, in opcode order); opcodes vecio
    /// does not know are left out (they are in [`WorkerStats::requests`]).
    pub fn by_opcode(&self) -> Vec<(Opcode, u64)> {
        self.per_opcode
            .0
            .iter()
            .enumerate()
            .filter_map(|(n, c)| {
                let count = c.load(Ordering::Relaxed);
                let op = Opcode::from_raw(n as u32)?;
                (count > 0).then_some((op, count))
            })
            .collect()
    }

    /// The counts as one line: `requests N (LOOKUP a, CREATE b, ...)`, what `SIGUSR1` and the
    /// summary print.
    pub fn requests_line(&self) -> String {
        let ops: Vec<String> = self
            .by_opcode()
            .iter()
            .map(|(op, n)| format!("{} {n}", op.name()))
            .collect();
        format!(
            "requests {} ({})",
            self.requests.load(Ordering::Relaxed),
            ops.join(", ")
        )
    }

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn requests_are_counted_by_opcode() {
        let s = WorkerStats::default();
        for op in [Opcode::Lookup, Opcode::Create, Opcode::Lookup] {
            s.note_request(op as u32);
        }
        s.note_request(4096); // CUSE_INIT: counted in the total only
        assert_eq!(s.requests.load(Ordering::Relaxed), 4);
        assert_eq!(
            s.by_opcode(),
            vec![(Opcode::Lookup, 2), (Opcode::Create, 1)]
        );
        assert_eq!(s.requests_line(), "requests 4 (LOOKUP 2, CREATE 1)");
    }
}
