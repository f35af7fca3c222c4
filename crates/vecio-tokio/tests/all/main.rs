//! The integration tests of vecio-tokio, one module per capability, built as one test binary (one
//! compile and one link rather than one per file). Two files stay binaries of their own, as they
//! count what belongs to the whole process: `cancel` its memory and the driver's thread, and
//! `ring_thread` the threads of the process.

mod common;

mod adapter;
mod fs_stream;
mod serve;
mod space;
