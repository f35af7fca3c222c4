//! A worker thread: its own `/dev/fuse` descriptor, its own engine (ring), its own buffers.
//!
//! Requests are read into a page-aligned buffer at offset `PAGE_SIZE - 80`, so the 80 bytes of
//! `fuse_in_header` + `fuse_write_in` end exactly on a page boundary and a `WRITE` payload
//! starts page-aligned: an `O_DIRECT` backing file takes it as it is, with no copy. Every other
//! request is contiguous from the same start.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use vecio::{AlignedBuf, Engine, PAGE_SIZE};
use zerocopy::IntoBytes;

use crate::abi::{self, opcode, WRITE_HEADERS};
use crate::dev::{Channel, Received};
use crate::error::{Errno, Result};
use crate::fs::Fs;
use crate::ops::{self, Answer};
use crate::request::Request;

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

/// One worker's state.
pub struct Worker {
    chan: Channel,
    fs: Arc<Fs>,
    engine: Box<dyn Engine>,
    request: AlignedBuf,
    reply: AlignedBuf,
    stats: Arc<WorkerStats>,
}

/// Offset in the request buffer where a request is read.
const START: usize = PAGE_SIZE - WRITE_HEADERS;

impl Worker {
    /// A worker on `chan` serving `fs`, with requests of up to `max_write` bytes of payload.
    pub fn new(
        chan: Channel,
        fs: Arc<Fs>,
        engine: Box<dyn Engine>,
        max_write: usize,
        stats: Arc<WorkerStats>,
    ) -> Worker {
        // The kernel wants room for the largest WRITE (headers + max_write) and never less
        // than FUSE_MIN_READ_BUFFER.
        let room = (WRITE_HEADERS + max_write).max(abi::MIN_READ_BUFFER) + PAGE_SIZE;
        Worker {
            chan,
            fs,
            engine,
            request: AlignedBuf::page_aligned(START + room),
            reply: AlignedBuf::page_aligned(max_write.max(PAGE_SIZE)),
            stats,
        }
    }

    /// Serves requests until the file system is unmounted.
    pub fn run(mut self) -> Result<()> {
        crate::creds::own_umask();
        loop {
            let n = match self.chan.receive(&mut self.request[START..])? {
                Received::Request(n) => n,
                Received::Gone => return Ok(()),
            };
            self.serve(n);
        }
    }

    fn serve(&mut self, n: usize) {
        let Worker {
            chan,
            fs,
            engine,
            request,
            reply,
            stats,
        } = self;
        let bytes = &request[START..START + n];
        let mut req = match Request::parse(bytes) {
            Ok(r) => r,
            Err(e) => {
                // A header too short to name the request cannot be answered.
                if let Ok((h, _)) = <abi::InHeader as zerocopy::FromBytes>::read_from_prefix(bytes)
                {
                    let _ = chan.reply_error(h.unique, e.0);
                }
                return;
            }
        };
        stats.requests.fetch_add(1, Ordering::Relaxed);
        let h = req.header;
        let sent = match h.opcode {
            opcode::READ => match crate::io::read(fs, engine.as_mut(), &mut req.body, reply) {
                Ok(k) => {
                    stats.note_read(k);
                    chan.reply(h.unique, 0, &[&reply[..k]])
                }
                Err(e) => chan.reply_error(h.unique, e.0),
            },
            opcode::WRITE => {
                let aligned = (bytes.as_ptr() as usize + WRITE_HEADERS) % PAGE_SIZE == 0;
                match crate::io::write(fs, engine.as_mut(), &mut req.body) {
                    Ok(out) => {
                        stats.note_write(out.size as usize, aligned);
                        chan.reply(h.unique, 0, &[out.as_bytes()])
                    }
                    Err(e) => chan.reply_error(h.unique, e.0),
                }
            }
            // INIT was answered before the workers started; another one is a protocol error.
            opcode::INIT => chan.reply_error(h.unique, Errno::INVAL.0),
            _ => match ops::dispatch(fs, &h, &mut req.body) {
                Ok(Answer::Bytes(b)) => chan.reply(h.unique, 0, &[&b]),
                Ok(Answer::Nothing) => Ok(()),
                Err(e) => chan.reply_error(h.unique, e.0),
            },
        };
        if let Err(e) = sent {
            tracing::debug!(opcode = h.opcode, "reply failed: {e}");
        }
    }
}
