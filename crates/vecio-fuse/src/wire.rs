//! The request decoder as a fuzzer, or a tool reading captured requests, sees it: a request's
//! header and arguments ([`Request`], [`Body`]), its extensions ([`Extensions`]), and the
//! `FUSE_INIT` offer and what vecio takes from it. Nothing here touches a file or the kernel.

use crate::abi::{InitFlags, InitIn};
use crate::init::{agree, InitWants};

pub use crate::abi::ext::Extensions;
pub use crate::abi::request::{Body, Request};

/// The flags the kernel offers in `init` (`flags`, and `flags2` above bit 31 when
/// `FUSE_INIT_EXT` is set; [`InitFlags::offered`]).
pub fn offered(init: &InitIn) -> InitFlags {
    InitFlags::offered(init)
}

/// What vecio agrees to when `offered` is offered, for a mount with every option on (export,
/// request timeout, idmap, ACLs, write-back cache, passthrough, io_uring).
pub fn agreed(offered: InitFlags) -> InitFlags {
    let wants = InitWants {
        max_pages: 256,
        passthrough: true,
        passthrough_reads: true,
        uring: true,
        posix_acl: true,
        writeback_cache: true,
        export: true,
        request_timeout: Some(30),
        idmap: true,
    };
    agree(offered, &wants)
}
