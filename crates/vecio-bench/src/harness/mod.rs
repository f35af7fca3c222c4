//! What every experiment shares: peers, servers as processes, scratch files, CPU accounting,
//! statistics, progress, the machine's facts and the clean-up (docs/report.md, "The harness").

pub mod certs;
pub mod cleanup;
pub mod diskstat;
pub mod fio;
pub mod libnbd;
pub mod meta;
pub mod overall;
pub mod progress;
pub mod rusage;
pub mod scratch;
pub mod server;
pub mod setup;
pub mod stats;
