//! vecio fuse: a FUSE passthrough file server built on the vecio engine.
//!
//! - Large scatter-gather requests: `max_pages` up to the kernel's limit (256 pages, 1 MiB per
//!   request), each `READ` and `WRITE` served as one batched vecio submission.
//! - Write payloads land page-aligned (the request is read so that its headers end on a page
//!   boundary), so `O_DIRECT` backing files take them without a copy.
//! - Direct I/O end to end: an `O_DIRECT` open (or `-o direct_io`) gets `FOPEN_DIRECT_IO` and
//!   parallel direct writes, and a direct backing file whose alignment vecio handles.
//! - One worker per CPU, each with its own `/dev/fuse` clone and its own ring.
//! - FUSE over io_uring (`Config::uring`): one queue per CPU, requests and replies through
//!   page-aligned ring buffers, with `/dev/fuse` kept for forgets and interrupts.
//! - Confinement: every name is resolved with `openat2(RESOLVE_BENEATH)` from an inode
//!   descriptor, one component at a time; symlinks are never followed by the server.
//!
//! The source is in layers, one folder each, every one importing only the layers below it
//! (`scripts/import-graph` prints the graph and fails on a cycle):
//!
//! | layer | is |
//! |---|---|
//! | `abi/` | the kernel's FUSE ABI: structs, opcodes, flags; a request's decoding |
//! | `fs/` | the passthrough file system: inodes, handles, credentials, locks, backing ids |
//! | `ops/` | every opcode's handler, `READ` and `WRITE` included, and the one dispatcher |
//! | `transport/` | `/dev/fuse` and its workers, FUSE over io_uring, registered buffers |
//! | `mount/` | mounting (`mount(2)`, `fusermount3`) and the `FUSE_INIT` agreement |
//! | `sandbox/` | namespaces, capabilities and the seccomp filter of the serving threads |
//! | `server.rs` | the server: mounts, agrees, confines, starts the transport, waits |
//!
//! `error.rs` and `stats.rs` are under every layer; `init.rs` (what vecio takes of `FUSE_INIT`,
//! pure) under `mount/`; `wire.rs` is the decoder's public face (for the fuzzer). Without the
//! `server` feature (on by default) the crate is `abi/`, `init.rs` and `wire.rs` alone.
//!
//! ```no_run
//! use vecio_fuse::{Config, Server};
//! # fn main() -> vecio_fuse::Result<()> {
//! let server = Server::mount("/srv/data".as_ref(), "/mnt/data".as_ref(), Config::default())?;
//! let unmounter = server.unmounter(); // call unmounter.unmount() from a signal thread
//! let summary = server.run()?;        // serves until unmounted
//! println!("{} requests", summary.stats.requests.load(std::sync::atomic::Ordering::Relaxed));
//! # drop(unmounter); Ok(()) }
//! ```

#![warn(missing_docs)]

/// Declares each item only with the `server` feature (on by default): without it the crate is
/// the kernel ABI, the `FUSE_INIT` policy and the decoder's public face (`abi`, `init`, `wire`),
/// which is all the fuzz target builds (no vecio, io_uring or seccomp).
macro_rules! server {
    ($($item:item)*) => { $( #[cfg(feature = "server")] $item )* };
}

pub mod abi;
mod init;
pub mod wire;

pub use abi::errno::Errno;

server! {
    mod error;
    mod fs;
    mod mount;
    mod ops;
    mod sandbox;
    mod server;
    mod stats;
    mod transport;

    pub use error::{Error, Result};
    pub use fs::attr::Timeouts;
    pub use fs::held::{Held, HeldCounter};
    pub use fs::FsConfig;
    pub use mount::session::{max_pages_limit, Negotiated};
    pub use mount::MountOptions;
    pub use sandbox::seccomp::Seccomp;
    pub use sandbox::Sandbox;
    pub use server::{Config, Confinement, Server, Serving, Summary, Unmounter};
    pub use stats::WorkerStats;
    pub use transport::uring::{enabled as uring_enabled, KNOB as URING_KNOB};
}
