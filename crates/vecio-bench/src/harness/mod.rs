//! What every experiment shares: fio as a peer, servers as processes, scratch files, CPU
//! accounting, the page cache, statistics, text tables, progress bars, facts about the machine,
//! and the clean-up of what a stopped bench leaves behind.

pub mod cleanup;
pub mod diskstat;
pub mod fio;
pub mod meta;
pub mod overall;
pub mod pagecache;
pub mod progress;
pub mod rusage;
pub mod scratch;
pub mod server;
pub mod setup;
pub mod stats;
pub mod system;
pub mod table;
pub mod target;
