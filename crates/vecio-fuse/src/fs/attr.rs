//! File attributes: `stat` of a backing file turned into `fuse_attr`, and cache lifetimes.

use std::time::Duration;

use crate::abi::{Attr, AttrOut, EntryOut};

/// `fuse_attr` from a backing file's `stat`.
pub fn from_stat(st: &rustix::fs::Stat) -> Attr {
    Attr {
        ino: st.st_ino,
        size: st.st_size as u64,
        blocks: st.st_blocks as u64,
        atime: st.st_atime as u64,
        mtime: st.st_mtime as u64,
        ctime: st.st_ctime as u64,
        atimensec: st.st_atime_nsec as u32,
        mtimensec: st.st_mtime_nsec as u32,
        ctimensec: st.st_ctime_nsec as u32,
        mode: st.st_mode,
        nlink: st.st_nlink as u32,
        uid: st.st_uid,
        gid: st.st_gid,
        rdev: st.st_rdev as u32,
        blksize: st.st_blksize as u32,
        flags: 0,
    }
}

/// How long the kernel may cache names and attributes.
#[derive(Copy, Clone, Debug)]
pub struct Timeouts {
    /// Name lookups (`entry_valid`).
    pub entry: Duration,
    /// Attributes (`attr_valid`).
    pub attr: Duration,
}

impl Default for Timeouts {
    fn default() -> Self {
        Timeouts {
            entry: Duration::from_secs(1),
            attr: Duration::from_secs(1),
        }
    }
}

impl Timeouts {
    /// A `fuse_entry_out` for node `nodeid` with `attr`.
    pub fn entry(&self, nodeid: u64, attr: Attr) -> EntryOut {
        EntryOut {
            nodeid,
            generation: 0,
            entry_valid: self.entry.as_secs(),
            attr_valid: self.attr.as_secs(),
            entry_valid_nsec: self.entry.subsec_nanos(),
            attr_valid_nsec: self.attr.subsec_nanos(),
            attr,
        }
    }

    /// A `fuse_attr_out` with `attr`.
    pub fn attr_out(&self, attr: Attr) -> AttrOut {
        AttrOut {
            attr_valid: self.attr.as_secs(),
            attr_valid_nsec: self.attr.subsec_nanos(),
            dummy: 0,
            attr,
        }
    }
}
