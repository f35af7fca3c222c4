//! The integration tests of vecio, one module per capability, built as one test binary (one
//! compile and one link rather than one per file). Two files stay binaries of their own, as they
//! change or count what belongs to the whole process: `short_io` lowers RLIMIT_FSIZE and
//! `released_files` counts the process's open descriptors.

#[path = "../common/mod.rs"]
mod common;

mod bad_input_files;
mod bad_input_requests;
mod bufpool_region;
mod differential;
mod direct_alignment;
mod engines;
mod fast_read_nowait;
mod fast_read_paths;
mod fast_read_policy;
mod fast_read_regressions;
mod flags;
mod open_options;
mod pages;
mod pool_backpressure;
mod pool_cached_reads;
mod pool_failures;
mod pool_shutdown;
mod queue;
mod queue_errors;
mod queue_model;
mod queue_stages;
mod queue_watch;
mod self_deadlock;
mod space_locks;
