//! vecio's benchmark crate: the pieces every experiment shares (CPU accounting, statistics,
//! fio as a peer, scratch files, progress bars, result tables, system facts) and the
//! experiments themselves, one per source document.

#![warn(missing_docs)]

pub mod cleanup;
pub mod diskstat;
pub mod fio;
pub mod pagecache;
pub mod progress;
pub mod rusage;
pub mod scratch;
pub mod server;
pub mod stats;
pub mod system;
pub mod table;

pub mod cache;
pub mod callcost;
pub mod fuse;
pub mod loopdev;
pub mod meta;
pub mod nowait;
pub mod tokio_reads;
pub mod writev;
pub mod zipf;

pub mod all;
pub mod cachecurve;
pub mod compare;
pub mod info;
pub mod overall;
pub mod report;
pub mod results;
pub mod setup;
