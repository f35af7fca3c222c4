//! The transport layer: how requests come from the kernel and replies go back. `/dev/fuse`
//! (`dev`: open, clone per worker, receive, `writev` replies), its workers (`worker`: one
//! thread per CPU with its own clone, engine and page-aligned buffers), FUSE over io_uring
//! (`uring`: one queue per CPU, requests and replies in ring buffers) and the buffers both
//! register with their engine (`buffers`). A transport reads a request and hands it to the one
//! dispatcher (`crate::ops`); it knows the ABI, not the operations.

pub mod buffers;
pub mod dev;
pub mod uring;
pub mod worker;
