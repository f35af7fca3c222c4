//! What vecio asks of the kernel in `FUSE_INIT` ([`InitWants`]) and which of the offered flags it
//! takes ([`agree`]): pure policy over the ABI's flags, used by the mount's negotiation and by
//! the fuzz target's view of it (`wire`).

use crate::abi::InitFlags as f;

/// What the server wants from the connection.
// Without the server, nothing reads `max_pages` (the mount's negotiation does).
#[cfg_attr(not(feature = "server"), allow(dead_code))]
#[derive(Copy, Clone, Debug)]
pub struct InitWants {
    /// Pages per request (1 = the per-segment behaviour before packing; up to 256).
    pub max_pages: u16,
    /// Ask for `FUSE_PASSTHROUGH` for every buffered open (writes too: kill-priv is then
    /// the kernel's).
    pub passthrough: bool,
    /// Ask for `FUSE_PASSTHROUGH` for read-only opens only: writes stay served, so
    /// `FUSE_HANDLE_KILLPRIV_V2` is kept.
    pub passthrough_reads: bool,
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
        if wants.passthrough_reads {
            want |= f::PASSTHROUGH;
        }
    }
    if wants.uring {
        want |= f::OVER_IO_URING;
    }
    want & kernel
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wants() -> InitWants {
        InitWants {
            max_pages: 256,
            passthrough: false,
            passthrough_reads: false,
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
        let reads = InitWants {
            passthrough_reads: true,
            ..plain
        };
        let got = agree(new_kernel | f::HANDLE_KILLPRIV_V2 | f::PASSTHROUGH, &reads);
        assert!(
            got.contains(f::PASSTHROUGH | f::HANDLE_KILLPRIV_V2),
            "read-only passthrough keeps kill-priv v2 for the served writes"
        );
        let got = agree(new_kernel, &plain);
        assert!(got.contains(f::NO_EXPORT_SUPPORT));
        assert!(!got.intersects(f::EXPORT_SUPPORT | f::REQUEST_TIMEOUT | f::ALLOW_IDMAP));
    }
}
