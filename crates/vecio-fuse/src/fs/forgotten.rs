//! Nodes the kernel forgot, remembered by their file handles, so that a file handle the kernel
//! gave out for the mount (`name_to_handle_at` under `FUSE_EXPORT_SUPPORT`: the node id and a
//! generation) still finds its node after the kernel dropped the inode: its `LOOKUP` of `.` by
//! that node id revives the node under the same id, and a later lookup by name of the same
//! inode gets the same id back (never a second one: the kernel would keep two inodes).
//!
//! Ids are never given to another inode, so the generation is always 0. The table is bounded
//! (oldest first out); a handle whose node fell out goes stale (`ESTALE`), as it does when its
//! file was removed.

use std::collections::{HashMap, VecDeque};

use rustix::fs::FileType;

use crate::fs::fhandle::FileHandle;

/// Forgotten nodes kept at most (each a few dozen bytes plus its handle).
pub const CAPACITY: usize = 1 << 17;

/// A forgotten node.
pub struct Gone {
    /// The backing inode's file handle.
    pub handle: FileHandle,
    /// `(st_dev, st_ino)` of the backing inode.
    pub key: (u64, u64),
    /// Its file type.
    pub kind: FileType,
}

/// Forgotten nodes by id and by backing inode.
pub struct Forgotten {
    by_id: HashMap<u64, Gone>,
    by_key: HashMap<(u64, u64), u64>,
    order: VecDeque<u64>,
    capacity: usize,
}

impl Forgotten {
    /// An empty table of at most `capacity` nodes.
    pub fn new(capacity: usize) -> Forgotten {
        Forgotten {
            by_id: HashMap::new(),
            by_key: HashMap::new(),
            order: VecDeque::new(),
            capacity: capacity.max(1),
        }
    }

    /// Remembers node `id`, letting the oldest go past the capacity.
    pub fn remember(&mut self, id: u64, gone: Gone) {
        if let Some(old) = self.by_key.insert(gone.key, id) {
            if old != id {
                self.by_id.remove(&old);
            }
        }
        self.by_id.insert(id, gone);
        self.order.push_back(id);
        while self.by_id.len() > self.capacity {
            let Some(oldest) = self.order.pop_front() else {
                break;
            };
            self.drop_id(oldest);
        }
        if self.order.len() > 2 * self.capacity {
            let live = &self.by_id;
            self.order.retain(|id| live.contains_key(id));
        }
    }

    fn drop_id(&mut self, id: u64) -> Option<Gone> {
        let gone = self.by_id.remove(&id)?;
        if self.by_key.get(&gone.key) == Some(&id) {
            self.by_key.remove(&gone.key);
        }
        Some(gone)
    }

    /// Takes node `id` out, to revive it.
    pub fn take(&mut self, id: u64) -> Option<Gone> {
        self.drop_id(id)
    }

    /// The id the inode `key` had, when it is the same inode (`handle` equal: an inode number
    /// reused by a new file is another inode); takes it out. A stale entry is dropped.
    pub fn id_for(&mut self, key: (u64, u64), handle: &FileHandle) -> Option<u64> {
        let id = *self.by_key.get(&key)?;
        let gone = self.drop_id(id)?;
        gone.handle.same_inode(handle).then_some(id)
    }

    /// Nodes remembered now.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.by_id.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::fd::AsFd;

    fn handle_of(path: &std::path::Path) -> FileHandle {
        let f = std::fs::File::open(path).unwrap();
        FileHandle::of(f.as_fd()).expect("this file system makes handles")
    }

    #[test]
    fn remembers_by_id_and_inode_within_its_capacity() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        std::fs::write(&a, "a").unwrap();
        std::fs::write(&b, "b").unwrap();
        let gone = |p: &std::path::Path, key| Gone {
            handle: handle_of(p),
            key,
            kind: FileType::RegularFile,
        };
        let mut t = Forgotten::new(2);
        t.remember(10, gone(&a, (1, 1)));
        t.remember(11, gone(&b, (1, 2)));
        // The same inode gets its id back once; another inode under that number does not.
        assert_eq!(t.id_for((1, 1), &handle_of(&a)), Some(10));
        assert_eq!(t.id_for((1, 1), &handle_of(&a)), None);
        assert_eq!(t.id_for((1, 2), &handle_of(&a)), None, "a different handle");
        assert_eq!(t.len(), 0);
        // Past the capacity the oldest goes.
        t.remember(12, gone(&a, (1, 1)));
        t.remember(13, gone(&b, (1, 2)));
        t.remember(14, gone(&a, (1, 3)));
        assert!(t.take(12).is_none());
        assert!(t.take(13).is_some() && t.take(14).is_some());
    }
}
