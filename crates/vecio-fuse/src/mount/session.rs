//! `FUSE_INIT`: what vecio asks of the kernel and what the kernel grants.

use zerocopy::IntoBytes;

use crate::abi::request::Request;
use crate::abi::{self, InitFlags as f, InitIn, InitOut};
use crate::error::{Error, Result};
use crate::transport::dev::{Channel, Received};

/// What the server wants from the connection.
#[derive(Copy, Clone, Debug)]
pub struct InitWants {
    /// Pages per request (1 = the per-segment behaviour before packing; up to 256).
    pub max_pages: u16,
    /// Ask for `FUSE_PASSTHROUGH`.
    pub passthrough: bool,
    /// Ask for FUSE over io_uring.
    pub uring: bool,
    /// Ask the kernel to enforce POSIX ACLs (`FUSE_POSIX_ACL`, which implies
    /// `default_permissions`; asked for when the mount has it).
    pub posix_acl: bool,
    /// Ask for `FUSE_WRITEBACK_CACHE` (`-o writeback_cache`).
    pub writeback_cache: bool,
    /// Serve the kernel's file handles (`FUSE_EXPORT_SUPPORT`); otherwise refuse them cleanly
    /// (`FUSE_NO_EXPORT_SUPPORT`, where the kernel offers it).
    pub export: bool,
    /// Let the kernel abort the connection when a request waits this many seconds
    /// (`FUSE_REQUEST_TIMEOUT`, `-o timeout_s=`).
    pub request_timeout: Option<u16>,
    /// Allow idmapped mounts (`FUSE_ALLOW_IDMAP`; the kernel requires `default_permissions`).
    pub idmap: bool,
}

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

/// The `FUSE_INIT` flags vecio takes from what the kernel offers (`kernel`): each feature only
/// when offered.
pub(crate) fn agree(kernel: f, wants: &InitWants) -> f {
    let mut want = f::ASYNC_READ
        | f::BIG_WRITES
        | f::DO_READDIRPLUS
        | f::READDIRPLUS_AUTO
        | f::ASYNC_DIO
        | f::PARALLEL_DIROPS
        | f::MAX_PAGES
        | f::ABORT_ERROR
        | f::DIRECT_IO_ALLOW_MMAP
        | f::DONT_MASK
        | f::INIT_EXT
        | f::SETXATTR_EXT
        | f::SECURITY_CTX
        | f::CREATE_SUPP_GROUP;
    // Locks served by the backing file system need replies sent after the request
    // returned (a waiting SETLKW), which only /dev/fuse workers can send; over io_uring
    // the kernel keeps the locks itself (still exact among users of this mount).
    if !wants.uring {
        want |= f::POSIX_LOCKS | f::FLOCK_LOCKS;
    }
    if wants.posix_acl {
        want |= f::POSIX_ACL;
    }
    if wants.writeback_cache {
        want |= f::WRITEBACK_CACHE;
    }
    want |= if wants.export {
        f::EXPORT_SUPPORT
    } else {
        f::NO_EXPORT_SUPPORT
    };
    if wants.request_timeout.is_some() {
        want |= f::REQUEST_TIMEOUT;
    }
    if wants.idmap {
        want |= f::ALLOW_IDMAP;
    }
    // Kill-priv v2 leaves clearing setuid/setgid on a write to the server, which a
    // passthrough write never reaches (the kernel writes the backing file as the server, who
    // keeps the bits): with passthrough the kernel clears them itself, through SETATTR.
    if wants.passthrough {
        want |= f::PASSTHROUGH;
    } else {
        want |= f::HANDLE_KILLPRIV_V2;
    }
    if wants.uring {
        want |= f::OVER_IO_URING;
    }
    want & kernel
}

fn reply(chan: &Channel, unique: u64, out: &InitOut) -> Result<()> {
    chan.reply(unique, 0, &[out.as_bytes()])
        .map_err(|e| Error::Device {
            what: "INIT reply",
            source: e,
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wants() -> InitWants {
        InitWants {
            max_pages: 256,
            passthrough: false,
            uring: false,
            posix_acl: true,
            writeback_cache: false,
            export: true,
            request_timeout: Some(30),
            idmap: true,
        }
    }

    #[test]
    fn features_are_taken_only_when_offered() {
        let newer = f::SECURITY_CTX
            | f::CREATE_SUPP_GROUP
            | f::SETXATTR_EXT
            | f::ALLOW_IDMAP
            | f::REQUEST_TIMEOUT
            | f::EXPORT_SUPPORT
            | f::NO_EXPORT_SUPPORT;
        let old_kernel = f::ASYNC_READ | f::POSIX_LOCKS | f::INIT_EXT;
        assert!(!agree(old_kernel, &wants()).intersects(newer));
        let new_kernel = old_kernel | newer;
        let got = agree(new_kernel, &wants());
        assert!(got.contains(newer - f::NO_EXPORT_SUPPORT));
        assert!(
            !got.contains(f::NO_EXPORT_SUPPORT),
            "both export flags at once"
        );
        let plain = InitWants {
            export: false,
            request_timeout: None,
            idmap: false,
            ..wants()
        };
        let got = agree(new_kernel | f::HANDLE_KILLPRIV_V2 | f::PASSTHROUGH, &plain);
        assert!(got.contains(f::HANDLE_KILLPRIV_V2) && !got.contains(f::PASSTHROUGH));
        let through = InitWants {
            passthrough: true,
            ..wants()
        };
        let got = agree(
            new_kernel | f::HANDLE_KILLPRIV_V2 | f::PASSTHROUGH,
            &through,
        );
        assert!(
            got.contains(f::PASSTHROUGH) && !got.contains(f::HANDLE_KILLPRIV_V2),
            "kill-priv v2 with passthrough keeps setuid on a passthrough write"
        );
        let got = agree(new_kernel, &plain);
        assert!(got.contains(f::NO_EXPORT_SUPPORT));
        assert!(!got.intersects(f::EXPORT_SUPPORT | f::REQUEST_TIMEOUT | f::ALLOW_IDMAP));
    }
}
