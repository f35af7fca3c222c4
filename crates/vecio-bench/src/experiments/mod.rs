//! The experiments, one folder per source document (the five posts under `seeds/`, described
//! in that folder's README), each an [`crate::experiment::Experiment`] named as its
//! `vecio bench` subcommand and its field of `results.json`. A folder holds the run (`mod.rs`
//! and its helpers) and what its report shows (`view.rs`: the seed's entry, the section, the
//! targets, the summary rows, the figures `compare` reads).
//!
//! | folder | subcommand, JSON field | source document |
//! |---|---|---|
//! | [`writev`] | `writev` | 000, readv/writev rework |
//! | [`loopdev`] | `loop` (`loop` is a Rust keyword) | 001, loop direct I/O + AIO |
//! | [`nowait`] | `nowait` | 002, preadv2 and RWF_NOWAIT |
//! | [`tokio_reads`] | `tokio` | 002's experiment in today's Rust: tokio::fs against vecio-tokio |
//! | [`callcost`] | `callcost` | 003, the cost of read_iter |
//! | [`fuse`] | `fuse` | 004, FUSE scatter-gather direct I/O |
//! | [`tree`] | `tree` (not in `bench all`) | 004's FUSE server under issue 27's workload: a source tree's life |
//!
//! Adding an experiment: a folder here, a line below, and its line in [`crate::registry`].

pub mod callcost;
pub mod fuse;
pub mod loopdev;
pub mod nowait;
pub mod tokio_reads;
pub mod tree;
pub mod writev;
