//! The experiments, one folder per source document (`/work/shared/seeds/README.md`), each named
//! as its `vecio bench` subcommand and its field of `results.json`: the run (`mod.rs` and its
//! helpers), its text tables and targets, and its section of the report (`section.rs`).
//!
//! | folder | subcommand, JSON field | source document |
//! |---|---|---|
//! | [`writev`] | `writev` | 000, readv/writev rework |
//! | [`loopdev`] | `loop` (`loop` is a Rust keyword) | 001, loop direct I/O + AIO |
//! | [`nowait`] | `nowait` | 002, preadv2 and RWF_NOWAIT |
//! | [`callcost`] | `callcost` | 003, the cost of read_iter |
//! | [`fuse`] | `fuse` | 004, FUSE scatter-gather direct I/O |
//! | [`tokio_reads`] | `tokio` | 002's experiment in today's Rust: tokio::fs against vecio-tokio |
//!
//! Adding an experiment: a folder here, a line below, a step in [`all`], a field in
//! [`results::AllResults`] and its section in [`crate::report::sections`].

pub mod all;
pub mod results;

pub mod callcost;
pub mod fuse;
pub mod loopdev;
pub mod nowait;
pub mod tokio_reads;
pub mod writev;
