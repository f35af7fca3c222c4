//! What every experiment shares: fio and libnbd's clients as peers, servers as processes, TLS
//! certificates, scratch files, CPU accounting, the page cache, statistics, text tables, progress bars, facts about the machine,
//! and the clean-up of what a stopped bench leaves behind.

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
