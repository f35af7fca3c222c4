//! `FUSE_INIT`: what vecio asks of the kernel and what the kernel grants.

use zerocopy::IntoBytes;

use crate::abi::request::Request;
use crate::abi::{self, InitFlags as f, InitIn, InitOut};
use crate::error::{Error, Result};
pub use crate::init::InitWants;
use crate::init::agree;
use crate::transport::dev::{Channel, Received};

/// What was agreed.
#[derive(Copy, Clone, Debug)]
pub struct Negotiated {
    /// Minor protocol version in use.
    pub minor: u32,
    /// Agreed `FUSE_INIT` flags (64 bits).
    pub flags: f,
    /// Pages per request.
    pub max_pages: u16,
    /// Largest `WRITE` payload (and `READ` size).
    pub max_write: u32,
    /// Seconds after which the kernel aborts the connection on a request left unanswered
    /// (`FUSE_REQUEST_TIMEOUT`; 0: none).
    pub request_timeout: u16,
}

impl Negotiated {
    /// True when the kernel granted `flag`.
    pub fn has(&self, flag: f) -> bool {
        self.flags.contains(flag)
    }
}

/// The largest `max_pages` the kernel accepts (`/proc/sys/fs/fuse/max_pages_limit`).
pub fn max_pages_limit() -> u16 {
    std::fs::read_to_string("/proc/sys/fs/fuse/max_pages_limit")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map(|n| n.min(u16::MAX as u32) as u16)
        .unwrap_or(256)
}

/// Reads the kernel's `FUSE_INIT` from `chan` (into `buf`) and answers it.
pub fn negotiate(chan: &Channel, buf: &mut [u8], wants: InitWants) -> Result<Negotiated> {
    loop {
        let n = match chan.receive(buf)? {
            Received::Request(n) => n,
            Received::Gone => return Err(Error::Init("connection closed before INIT".into())),
        };
        let mut req = Request::parse(&buf[..n])
            .map_err(|e| Error::Init(format!("malformed request (errno {})", e.0)))?;
        if req.header.opcode != abi::Opcode::Init as u32 {
            return Err(Error::Init(format!(
                "first request is opcode {}, not INIT",
                req.header.opcode
            )));
        }
        let init: InitIn = req
            .body
            .arg()
            .map_err(|_| Error::Init("short INIT".into()))?;
        if init.major > abi::KERNEL_VERSION {
            // The kernel offers a newer major: answer ours and wait for its next INIT.
            let out = InitOut {
                major: abi::KERNEL_VERSION,
                minor: abi::KERNEL_MINOR_VERSION,
                ..Default::default()
            };
            reply(chan, req.header.unique, &out)?;
            continue;
        }
        if init.major < abi::KERNEL_VERSION || init.minor < 28 {
            let _ = chan.reply_error(req.header.unique, libc::EPROTO);
            return Err(Error::Init(format!(
                "kernel speaks FUSE {}.{}; vecio needs 7.28 or later",
                init.major, init.minor
            )));
        }
        let flags = agree(f::offered(&init), &wants);
        let max_pages = wants.max_pages.clamp(1, max_pages_limit());
        let max_write = max_pages as u32 * vecio::PAGE_SIZE as u32;
        let out = InitOut {
            major: abi::KERNEL_VERSION,
            minor: init.minor.min(abi::KERNEL_MINOR_VERSION),
            max_readahead: init.max_readahead,
            flags: flags.bits() as u32,
            flags2: (flags.bits() >> 32) as u32,
            max_background: 64,
            congestion_threshold: 48,
            max_write,
            time_gran: 1,
            max_pages,
            max_stack_depth: if flags.contains(f::PASSTHROUGH) { 1 } else { 0 },
            request_timeout: match wants.request_timeout {
                Some(secs) if flags.contains(f::REQUEST_TIMEOUT) => secs,
                _ => 0,
            },
            ..Default::default()
        };
        reply(chan, req.header.unique, &out)?;
        return Ok(Negotiated {
            minor: out.minor,
            flags,
            max_pages,
            max_write,
            request_timeout: out.request_timeout,
        });
    }
}

fn reply(chan: &Channel, unique: u64, out: &InitOut) -> Result<()> {
    chan.reply(unique, 0, &[out.as_bytes()])
        .map_err(|e| Error::Device {
            what: "INIT reply",
            source: e,
        })
}
