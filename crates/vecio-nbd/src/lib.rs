//! vecio-nbd: the user-space loop device. A file or block device exported over NBD (the
//! network block device protocol that qemu, libnbd, nbdkit and fio speak), with direct and
//! asynchronous I/O through the vecio engine: what the kernel's loop driver gained in 2015
//! (`O_DIRECT` plus AIO on the backing file: no double caching, fewer context switches),
//! served from user space on a kernel without ublk or an nbd driver.
//!
//! - [`Export`]: the backing file, opened once (`O_DIRECT` by default) and shared by every
//!   connection, so flush and FUA are visible across connections (`NBD_FLAG_CAN_MULTI_CONN`).
//! - [`ExportDir`]: every regular file of a directory, each an export under its file name,
//!   opened on first use beneath the directory (no name, link or `..` leads out of it) and
//!   then shared the same way (`vecio nbd --dir`).
//! - [`Server`]: Unix-socket and TCP listeners, a thread per connection, each with its own
//!   [`vecio::Queue`] over its own engine; many requests in flight per connection, submitted
//!   together, answered as they complete. Clean shutdown through a [`ShutdownHandle`].
//! - [`proto`]: the wire format, pure encode/decode.
//!
//! The protocol followed is the NBD project's `doc/proto.md`: fixed newstyle handshake,
//! simple and structured replies, extended headers (`NBD_OPT_EXTENDED_HEADERS`: 64-bit
//! lengths, `NBD_REPLY_TYPE_BLOCK_STATUS_EXT`, a block-status payload filter), READ, WRITE, FLUSH, TRIM, WRITE_ZEROES (NO_HOLE,
//! FAST_ZERO), BLOCK_STATUS (`base:allocation`), CACHE, DISC; FUA and DF flags; TLS through
//! `NBD_OPT_STARTTLS` ([`Tls`]); access control by address ([`IpFilter`], nbdkit's ip
//! filter) and by TLS identity ([`Authz`], qemu's `authz-list`).

#![warn(missing_docs)]

/// Declares each item only with the `server` feature (on by default): without it the crate is
/// [`proto`] alone, which is all the fuzz targets build (no TLS, no vecio, no I/O).
macro_rules! server {
    ($($item:item)*) => { $( #[cfg(feature = "server")] $item )* };
}

pub mod proto;
pub use proto::Malformed;

server! {
    mod access;
    mod activation;
    mod check;
    mod conn;
    mod dir;
    mod error;
    mod export;
    mod exports;
    mod handshake;
    mod held;
    mod holes;
    pub mod image_format;
    pub mod image_lock;
    mod ops;
    mod recv;
    mod send;
    mod server;
    mod sparse;
    mod stream;
    mod tls;

    pub use access::{AddrRule, Authz, AuthzRule, Cred, IpFilter, MatchFormat, Peer, Policy};
    pub use activation::listen_fds;
    pub use dir::{check_name, ExportDir};
    pub use error::{Error, Result};
    pub use export::{Cache, Export, ExportOptions, MAX_PAYLOAD, MIN_BLOCK, PREFERRED_BLOCK};
    pub use held::{Held, HeldCounter};
    pub use server::{ListenAddr, Server, ServerOptions};
    pub use stream::ShutdownHandle;
    pub use tls::{Tls, TlsMode};
}
