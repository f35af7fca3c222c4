//! vecio's benchmark crate, in three rooms:
//!
//! - [`harness`]: what every experiment shares (fio as a peer, servers as processes, scratch
//!   files, CPU accounting, the page cache, statistics, tables, progress, system facts, and
//!   the clean-up that runs when a bench is stopped);
//! - [`experiments`]: one folder per source document, each holding its run and its report
//!   section side by side, and `vecio bench all`, which runs them in turn;
//! - [`report`]: the HTML and markdown report, its plots, its verdict, and `vecio bench
//!   compare`.

#![warn(missing_docs)]

pub mod experiments;
pub mod harness;
pub mod report;
