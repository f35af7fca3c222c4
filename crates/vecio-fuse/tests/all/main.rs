//! The integration tests of vecio-fuse, one module per capability, built as one test binary (one
//! compile and one link rather than one per file). Two files stay binaries of their own, as they
//! change or look at what belongs to the whole process: `tools` lowers RLIMIT_NOFILE and
//! `sandbox` reads the seccomp and namespaces of every thread of the process.

#[path = "../common/mod.rs"]
mod common;

mod atime;
mod attributes;
mod concurrent;
mod confinement;
mod credentials;
mod direct_io;
mod exec;
mod export;
mod locks;
mod ops;
mod ops_space;
mod passthrough;
mod permissions;
mod protocol;
mod round_trips;
mod space_locks;
mod uring;
