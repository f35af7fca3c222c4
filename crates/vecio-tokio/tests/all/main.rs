//! The integration tests of vecio-tokio, one module per capability, built as one test binary (one
//! compile and one link rather than one per file). Three files stay binaries of their own, as they
//! count what belongs to the whole process: `cancel` its memory and the driver's thread,
//! `ring_thread` the threads of the process, and `space` the files the shared driver holds
//! (other tests' files in the same process would show in its count).

mod common;

mod adapter;
mod fs_stream;
mod serve;
