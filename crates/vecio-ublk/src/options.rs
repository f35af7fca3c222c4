//! [`Options`]: what `vecio ublk FILE` is asked to serve, and how.

use std::path::PathBuf;
use std::str::FromStr;

use crate::error::{Error, Result};

/// How the backing file is cached (qemu's and `vecio nbd`'s `--cache` names).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Cache {
    /// Direct I/O (`O_DIRECT`): no double caching, the seed's design; the open fails where the
    /// file system refuses it.
    #[default]
    None,
    /// Buffered I/O through the host's page cache.
    Writeback,
}

impl Cache {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Cache::None => "none",
            Cache::Writeback => "writeback",
        }
    }
}

impl FromStr for Cache {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Cache::None),
            "writeback" => Ok(Cache::Writeback),
            _ => Err(format!("unknown cache mode {s:?} (none, writeback)")),
        }
    }
}

/// Most queues the ublk driver takes (`UBLK_MAX_NR_QUEUES`).
pub const MAX_QUEUES: u16 = 4096;
/// Deepest queue the ublk driver takes (`UBLK_MAX_QUEUE_DEPTH`).
pub const MAX_DEPTH: u16 = 4096;

/// A ublk device backed by a file or block device.
#[derive(Clone, Debug)]
pub struct Options {
    /// The backing file or block device.
    pub file: PathBuf,
    /// Direct (default) or buffered I/O on it.
    pub cache: Cache,
    /// Hardware queues, each served by a thread with its own io_uring.
    pub queues: u16,
    /// Requests in flight per queue.
    pub depth: u16,
    /// Largest request in bytes (the device's `max_sectors`, and each tag's buffer).
    pub io_size: u32,
    /// Serve reads only: the device is read-only and the file opened without write access.
    pub read_only: bool,
    /// The device number to ask for (`/dev/ublkbN`); the kernel picks one when `None`.
    pub id: Option<u32>,
    /// Resume device N, whose server died, instead of adding a device (`UBLK_F_USER_RECOVERY`):
    /// the queue count and depth are the device's own.
    pub recover: Option<u32>,
}

impl Options {
    /// Defaults for serving `file`: direct I/O, one queue of depth 128, 512 KiB requests.
    pub fn new(file: impl Into<PathBuf>) -> Self {
        Options {
            file: file.into(),
            cache: Cache::None,
            queues: 1,
            depth: 128,
            io_size: 512 * 1024,
            read_only: false,
            id: None,
            recover: None,
        }
    }

    /// Refuses values the driver would refuse, with a message that names the option.
    pub fn check(&self) -> Result<()> {
        if self.queues == 0 || self.queues > MAX_QUEUES {
            return Err(Error::Config(format!(
                "--queues {} (1..={MAX_QUEUES})",
                self.queues
            )));
        }
        if self.depth == 0 || self.depth > MAX_DEPTH {
            return Err(Error::Config(format!(
                "--depth {} (1..={MAX_DEPTH})",
                self.depth
            )));
        }
        let page = vecio::PAGE_SIZE as u32;
        if self.io_size < page || self.io_size > 1 << 30 || self.io_size % page != 0 {
            return Err(Error::Config(format!(
                "--io-size {} (a multiple of {page} up to 1 GiB)",
                self.io_size
            )));
        }
        if self.id.is_some() && self.recover.is_some() {
            return Err(Error::Config(
                "--id and --recover exclude each other".into(),
            ));
        }
        Ok(())
    }
}
