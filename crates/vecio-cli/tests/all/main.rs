//! The integration tests of the vecio command, one module per capability, built as one test
//! binary (one compile and one link rather than one per file). The tests that run a whole
//! benchmark, fill a disk or stop processes (`bench_all`, `cli`, `fuse_bench`, `loop_bench`,
//! `removed_space`, `stop`, `tokio_bench`, `tree_bench`) stay binaries of their own: they take
//! longest, and `scripts/cargo-tests` starts them first.

#[path = "../common/mod.rs"]
mod common;
#[path = "../fuse_server/mod.rs"]
mod fuse_server;
#[path = "../kernel/mod.rs"]
mod kernel;

mod command_line;
mod full_disk;
mod fuse;
mod fuse_auto_unmount;
mod fuse_defaults;
mod fuse_descriptors;
mod fuse_helper;
mod fuse_timeout;
mod fuse_user;
mod image_lock;
mod info;
mod nbd;
mod nbd_access;
mod nbd_activation;
mod nbd_dir;
mod nbd_fork;
mod nbd_peers;
mod other_filesystems;
mod ublk;
