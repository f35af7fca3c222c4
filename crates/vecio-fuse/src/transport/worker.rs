//! A worker thread: its own `/dev/fuse` descriptor, its own engine (ring), its own buffers.
//!
//! Requests are read into a page-aligned buffer at offset `PAGE_SIZE - 80`, so the 80 bytes of
//! `fuse_in_header` + `fuse_write_in` end exactly on a page boundary and a `WRITE` payload
//! starts page-aligned: an `O_DIRECT` backing file takes it as it is, with no copy. Every other
//! request is contiguous from the same start.

use std::sync::Arc;

use vecio::{AlignedBuf, Engine, Region, PAGE_SIZE};

use crate::abi::request::Request;
use crate::abi::{self, WRITE_HEADERS};
use crate::error::{OpResult, Result};
use crate::fs::Fs;
use crate::ops::{self, Ctx, Incoming, LateReply};
use crate::stats::WorkerStats;
use crate::transport::dev::{Channel, Received};

/// One worker's state.
pub struct Worker {
    chan: Arc<Channel>,
    later: Arc<dyn LateReply>,
    fs: Arc<Fs>,
    engine: Box<dyn Engine>,
    request: AlignedBuf,
    reply: AlignedBuf,
    /// The region `request` and `reply` lie in, when `engine` registered it.
    region: Option<Region>,
    stats: Arc<WorkerStats>,
}

/// Offset in the request buffer where a request is read.
const START: usize = PAGE_SIZE - WRITE_HEADERS;

/// A worker's channel answers requests it returned from without a reply (a waiting lock):
/// the reply must go through the descriptor the request was read from.
impl LateReply for Channel {
    fn send(&self, unique: u64, result: OpResult<Vec<u8>>) {
        let sent = match result {
            Ok(bytes) => self.reply(unique, 0, &[&bytes]),
            Err(e) => self.reply_error(unique, e.0),
        };
        if let Err(e) = sent {
            tracing::debug!(unique, "late reply failed: {e}");
        }
    }
}

impl Worker {
    /// A worker on `chan` serving `fs`, with requests of up to `max_write` bytes of payload.
    pub fn new(
        chan: Channel,
        fs: Arc<Fs>,
        mut engine: Box<dyn Engine>,
        max_write: usize,
        stats: Arc<WorkerStats>,
    ) -> Worker {
        // The kernel wants room for the largest WRITE (headers + max_write) and never less
        // than FUSE_MIN_READ_BUFFER.
        let room = (WRITE_HEADERS + max_write).max(abi::MIN_READ_BUFFER) + PAGE_SIZE;
        let chan = Arc::new(chan);
        let sizes = [START + room, max_write.max(PAGE_SIZE)];
        let (mut bufs, region) = crate::transport::buffers::registered(engine.as_mut(), &sizes);
        let reply = bufs
            .pop()
            .unwrap_or_else(|| AlignedBuf::page_aligned(sizes[1]));
        let request = bufs
            .pop()
            .unwrap_or_else(|| AlignedBuf::page_aligned(sizes[0]));
        Worker {
            later: chan.clone(),
            chan,
            fs,
            engine,
            request,
            reply,
            region,
            stats,
        }
    }

    /// Serves requests until the file system is unmounted.
    pub fn run(mut self) -> Result<()> {
        crate::fs::creds::serving_thread();
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
            later,
            fs,
            engine,
            request,
            reply,
            region,
            stats,
        } = self;
        let bytes = &request[START..START + n];
        let req = match Request::parse(bytes) {
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
        let h = req.header;
        let mut ctx = Ctx {
            fs,
            engine: engine.as_mut(),
            region: region.as_ref(),
            stats,
            later: Some(later),
        };
        let incoming = Incoming {
            header: h,
            body: req.body,
            ext: req.ext,
            payload: None,
        };
        let sent = match ops::dispatch(&mut ctx, incoming, reply) {
            Ok(answer) => match answer.payload(reply) {
                Some(p) => chan.reply(h.unique, 0, &[p]),
                None => Ok(()),
            },
            Err(e) => chan.reply_error(h.unique, e.0),
        };
        if let Err(e) = sent {
            tracing::debug!(opcode = h.opcode, "reply failed: {e}");
        }
    }
}
