//! The inode table: node ids the kernel knows, each naming a backing inode (never a path), with
//! the kernel's lookup count.
//!
//! Confinement comes from here: a node is reached only by `openat2(parent, name,
//! RESOLVE_BENEATH | RESOLVE_NO_MAGICLINKS)` with `O_NOFOLLOW`, one component at a time, from
//! the root's descriptor; a symlink is opened as itself and never followed; a rename or a
//! symlink swap between two requests changes nothing, because a node holds the inode itself.
//!
//! Bounded descriptors: a node keeps the inode's file handle (`name_to_handle_at`, a few dozen
//! bytes) and an `O_PATH` descriptor only while it is in a bounded cache ([`FdCache`], a CLOCK
//! over the nodes holding one). A node whose descriptor was let go reopens it from its handle
//! (`open_by_handle_at` through a descriptor of the same mount, as the server, which holds
//! `CAP_DAC_READ_SEARCH`), so the tree the kernel knows may be far larger than `RLIMIT_NOFILE`.
//! Handles are made only from inodes reached by the confined lookups above and never come from
//! the kernel or a caller, so the reopen cannot reach anything the lookups could not. Where the
//! backing file system makes no handles, or the server is not root, the node keeps its
//! descriptor for its whole life, as before.

use std::collections::{HashMap, VecDeque};
use std::ffi::CStr;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, OwnedFd};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, Weak};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use crate::error::{Errno, OpResult};
use crate::fs::fhandle::FileHandle;
use crate::fs::forgotten::{Forgotten, Gone};

/// A held descriptor of an inode: it stays open while held, even if the cache lets it go.
#[derive(Clone)]
pub struct InodeFd(Arc<OwnedFd>);

impl InodeFd {
    /// Name of this descriptor beneath `/proc` (`self/fd/N`), to reopen the inode for I/O. Valid
    /// while `self` is held.
    pub fn proc_name(&self) -> String {
        crate::fs::procfs::fd_name(self.0.as_raw_fd())
    }
}

impl AsFd for InodeFd {
    fn as_fd(&self) -> BorrowedFd<'_> {
        self.0.as_fd()
    }
}

/// One backing inode the kernel holds a reference to.
pub struct Inode {
    /// The `O_PATH` descriptor, while cached (always, for a node without a handle).
    slot: Mutex<Option<Arc<OwnedFd>>>,
    /// The file handle that reopens it; `None`: the descriptor is kept for the node's life.
    pub(crate) handle: Option<FileHandle>,
    /// Used since the cache last looked (CLOCK's second chance).
    referenced: AtomicBool,
    /// Open files and directories of this node: while any is open the node keeps its
    /// descriptor (an unlinked file cannot be reopened from its handle).
    opens: AtomicUsize,
    cache: Arc<FdCache>,
    me: Weak<Inode>,
    /// `(st_dev, st_ino)` of the backing inode.
    pub key: (u64, u64),
    /// File type, fixed for the inode's life.
    pub kind: FileType,
    /// The inode's passthrough registration, shared by its opens.
    pub backing: crate::fs::backing::Slot,
}

impl Inode {
    /// The `O_PATH` descriptor, reopened from the file handle if the cache let it go
    /// (`ENOENT` when the inode no longer exists).
    pub fn fd(&self) -> OpResult<InodeFd> {
        if let Some(fd) = self.lock_slot().as_ref() {
            self.referenced.store(true, Ordering::Relaxed);
            return Ok(InodeFd(fd.clone()));
        }
        let handle = self.handle.as_ref().ok_or(Errno::NOENT)?;
        let mount_fd = self.cache.mount_fd(handle.mount_id).ok_or(Errno::NOENT)?;
        let fd = {
            let _root = crate::fs::creds::AsServer::new();
            handle.open(mount_fd.as_fd(), libc::O_PATH | libc::O_NOFOLLOW)
        };
        let fd = Arc::new(fd.map_err(|e| if e.0 == libc::ESTALE { Errno::NOENT } else { e })?);
        {
            let mut slot = self.lock_slot();
            if let Some(raced) = slot.as_ref() {
                return Ok(InodeFd(raced.clone()));
            }
            *slot = Some(fd.clone());
        }
        self.cache.installed(self.me.clone());
        Ok(InodeFd(fd))
    }

    fn lock_slot(&self) -> std::sync::MutexGuard<'_, Option<Arc<OwnedFd>>> {
        self.slot.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Gives the node `fd` (a new `O_PATH` descriptor of the same inode) if it holds none.
    fn offer(&self, fd: OwnedFd) {
        {
            let mut slot = self.lock_slot();
            if slot.is_some() {
                return;
            }
            *slot = Some(Arc::new(fd));
        }
        self.cache.installed(self.me.clone());
    }

    /// Lets the descriptor go if the node has a handle to reopen it and nothing of it is
    /// open; true if it did.
    fn release_fd(&self) -> bool {
        self.handle.is_some()
            && self.opens.load(Ordering::Relaxed) == 0
            && self.lock_slot().take().is_some()
    }

    /// Counts an open of this node until the returned guard is dropped.
    pub fn opened(&self) -> OpenGuard {
        self.opens.fetch_add(1, Ordering::Relaxed);
        OpenGuard(self.me.upgrade())
    }

    /// `stat` of the inode.
    pub fn stat(&self) -> OpResult<rustix::fs::Stat> {
        Ok(rustix::fs::statat(
            self.fd()?,
            c"",
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        )?)
    }
}

/// One open file or directory of a node (see [`Inode::opened`]).
pub struct OpenGuard(Option<Arc<Inode>>);

impl Drop for OpenGuard {
    fn drop(&mut self) {
        if let Some(inode) = &self.0 {
            inode.opens.fetch_sub(1, Ordering::Relaxed);
        }
    }
}

impl Drop for Inode {
    fn drop(&mut self) {
        let held = self.slot.get_mut().map(|s| s.is_some()).unwrap_or(false);
        if self.handle.is_some() && held {
            let _ = self
                .cache
                .count
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |c| c.checked_sub(1));
        }
    }
}

/// The bounded set of nodes that hold an `O_PATH` descriptor (nodes without a handle are not
/// counted: they cannot let theirs go), and one descriptor per backing mount for reopening.
pub struct FdCache {
    capacity: usize,
    count: AtomicUsize,
    clock: Mutex<VecDeque<Weak<Inode>>>,
    mounts: Mutex<HashMap<i32, Arc<OwnedFd>>>,
    /// Reopen from handles at all (root only: `open_by_handle_at` needs
    /// `CAP_DAC_READ_SEARCH`).
    use_handles: bool,
}

impl FdCache {
    /// A cache of at most `capacity` descriptors.
    pub fn new(capacity: usize, use_handles: bool) -> FdCache {
        FdCache {
            capacity: capacity.max(1),
            count: AtomicUsize::new(0),
            clock: Mutex::new(VecDeque::new()),
            mounts: Mutex::new(HashMap::new()),
            use_handles,
        }
    }

    pub(crate) fn mount_fd(&self, mount_id: i32) -> Option<Arc<OwnedFd>> {
        self.mounts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(&mount_id)
            .cloned()
    }

    /// Keeps a descriptor of mount `mount_id` if none is kept yet: the directory `dir`
    /// opened for reading (`open_by_handle_at` refuses `O_PATH` descriptors). The first node
    /// seen on a mount is its root directory, since lookups go one component at a time; a
    /// mount whose first node is not a directory (a file bind-mounted into the tree) gets no
    /// handles, and its nodes keep their descriptors.
    fn remember_mount(&self, mount_id: i32, dir: Option<BorrowedFd<'_>>) -> bool {
        let mut mounts = self.mounts.lock().unwrap_or_else(|p| p.into_inner());
        if mounts.contains_key(&mount_id) {
            return true;
        }
        let Some(dir) = dir else { return false };
        let _root = crate::fs::creds::AsServer::new();
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        match rustix::fs::openat(dir, c".", flags, Mode::empty()) {
            Ok(fd) => {
                mounts.insert(mount_id, Arc::new(fd));
                true
            }
            Err(_) => false,
        }
    }

    /// Counts a node that now holds a descriptor, and lets others go past the capacity.
    pub(crate) fn installed(&self, node: Weak<Inode>) {
        let mut clock = self.clock.lock().unwrap_or_else(|p| p.into_inner());
        clock.push_back(node);
        let held = self.count.fetch_add(1, Ordering::Relaxed) + 1;
        if held > self.capacity {
            self.evict(&mut clock, held - self.capacity);
        }
        if clock.len() > 2 * self.capacity + 64 {
            clock.retain(|w| w.upgrade().is_some_and(|i| i.lock_slot().is_some()));
        }
    }

    /// CLOCK: nodes used since the last pass get a second chance; the others let their
    /// descriptor go. Stops after `want` or two full turns.
    fn evict(&self, clock: &mut VecDeque<Weak<Inode>>, want: usize) {
        let mut freed = 0;
        let mut budget = 2 * clock.len();
        let mut keep_alive = Vec::new();
        while freed < want && budget > 0 {
            budget -= 1;
            let Some(w) = clock.pop_front() else { break };
            let Some(node) = w.upgrade() else { continue };
            if node.referenced.swap(false, Ordering::Relaxed) {
                clock.push_back(w);
            } else if node.release_fd() {
                self.count.fetch_sub(1, Ordering::Relaxed);
                freed += 1;
            }
            // A node dropped here would count itself down under this lock: drop it after.
            keep_alive.push(node);
        }
        drop(keep_alive);
    }
}

pub(crate) struct Entry {
    pub(crate) inode: Arc<Inode>,
    pub(crate) lookups: u64,
}

pub(crate) struct Table {
    pub(crate) by_id: HashMap<u64, Entry>,
    pub(crate) by_key: HashMap<(u64, u64), u64>,
    next_id: u64,
    /// Nodes the kernel forgot, while file handles of the mount may still name them (see
    /// `crate::fs::export`).
    pub(crate) forgotten: Forgotten,
}

/// Node id to inode, shared by every worker.
pub struct Inodes {
    pub(crate) table: Mutex<Table>,
    pub(crate) cache: Arc<FdCache>,
    /// Serve the kernel's file handles (`FUSE_EXPORT_SUPPORT`): forgotten nodes are kept by
    /// handle, and `.` and `..` are looked up by node id.
    pub(crate) export: bool,
    /// The mount point, where it lies inside the source and the source is not a private clone
    /// (a server without root): see [`Covered`].
    pub(crate) covered: std::sync::OnceLock<Covered>,
}

/// The directory the server's own mount covers, inside the source. Without a private clone of
/// the source (no root), a lookup of the mount point's name in its parent would cross into the
/// mount and wait on this very server; it is answered with this descriptor of the directory
/// beneath, opened before mounting, as a private clone would show it.
#[derive(Debug)]
pub struct Covered {
    /// The parent directory's (device, inode).
    pub parent: (u64, u64),
    /// The mount point's name in it.
    pub name: std::ffi::CString,
    /// `O_PATH` descriptor of the covered directory.
    pub dir: OwnedFd,
}

/// Opens `name` in directory `dir` as an `O_PATH` descriptor, beneath `dir` only.
pub fn open_beneath(dir: BorrowedFd<'_>, name: &CStr) -> OpResult<OwnedFd> {
    let flags = OFlags::PATH | OFlags::NOFOLLOW | OFlags::CLOEXEC;
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    Ok(rustix::fs::openat2(
        dir,
        name,
        flags,
        Mode::empty(),
        resolve,
    )?)
}

impl Inodes {
    /// A table whose root (node 1) is `root`, an `O_PATH` descriptor of the source directory,
    /// keeping at most `cache_fds` descriptors of other nodes open. With `export`, nodes are
    /// kept by file handle after the kernel forgets them (only where handles are in use).
    pub fn new(root: OwnedFd, cache_fds: usize, export: bool) -> OpResult<Inodes> {
        let st = rustix::fs::statat(&root, c"", AtFlags::EMPTY_PATH)?;
        let key = (st.st_dev, st.st_ino);
        let cache = Arc::new(FdCache::new(cache_fds, crate::fs::creds::server_is_root()));
        if cache.use_handles {
            if let Ok(h) = FileHandle::of(root.as_fd()) {
                cache.remember_mount(h.mount_id, Some(root.as_fd()));
            }
        }
        // The root keeps its descriptor: it is never looked up again.
        let inode = Arc::new_cyclic(|me| Inode {
            slot: Mutex::new(Some(Arc::new(root))),
            handle: None,
            referenced: AtomicBool::new(false),
            opens: AtomicUsize::new(0),
            cache: cache.clone(),
            me: me.clone(),
            key,
            kind: FileType::Directory,
            backing: Default::default(),
        });
        let mut table = Table {
            by_id: HashMap::new(),
            by_key: HashMap::new(),
            next_id: crate::abi::ROOT_ID + 1,
            forgotten: Forgotten::new(crate::fs::forgotten::CAPACITY),
        };
        table
            .by_id
            .insert(crate::abi::ROOT_ID, Entry { inode, lookups: 1 });
        table.by_key.insert(key, crate::abi::ROOT_ID);
        let export = export && cache.use_handles;
        Ok(Inodes {
            table: Mutex::new(table),
            cache,
            export,
            covered: std::sync::OnceLock::new(),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Table> {
        // A worker that panicked while holding the lock left the table consistent (every
        // change is one insert or remove), so the poison flag carries no meaning here.
        self.table.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The inode of node `id` (`ENOENT` for an id the kernel should not know).
    pub fn get(&self, id: u64) -> OpResult<Arc<Inode>> {
        self.lock()
            .by_id
            .get(&id)
            .map(|e| e.inode.clone())
            .ok_or(Errno::NOENT)
    }

    /// Looks `name` up in directory node `parent`: the node id (counted as one more kernel
    /// reference) and the inode's `stat`.
    pub fn lookup(&self, parent: u64, name: &CStr) -> OpResult<(u64, rustix::fs::Stat)> {
        let dir = self.get(parent)?;
        if let Some(c) = self.covered.get() {
            if dir.key == c.parent && name == c.name.as_c_str() {
                return self.adopt(rustix::io::fcntl_dupfd_cloexec(&c.dir, 0)?);
            }
        }
        let fd = open_beneath(dir.fd()?.as_fd(), name)?;
        self.adopt(fd)
    }

    /// Enters an `O_PATH` descriptor into the table (or counts one more reference to the
    /// node that already has its inode).
    pub fn adopt(&self, fd: OwnedFd) -> OpResult<(u64, rustix::fs::Stat)> {
        let st = rustix::fs::statat(&fd, c"", AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW)?;
        let key = (st.st_dev, st.st_ino);
        {
            let mut t = self.lock();
            if let Some(&id) = t.by_key.get(&key) {
                if let Some(e) = t.by_id.get_mut(&id) {
                    e.lookups += 1;
                    let inode = e.inode.clone();
                    drop(t);
                    inode.offer(fd);
                    return Ok((id, st));
                }
            }
        }
        let is_dir = FileType::from_raw_mode(st.st_mode) == FileType::Directory;
        let handle = self.handle_for(fd.as_fd(), is_dir);
        let counted = handle.is_some();
        let inode = self.node(fd, handle, key, FileType::from_raw_mode(st.st_mode));
        let id = {
            let mut t = self.lock();
            if let Some(&id) = t.by_key.get(&key) {
                // Another worker entered the same inode meanwhile: count on its node.
                if let Some(e) = t.by_id.get_mut(&id) {
                    e.lookups += 1;
                    // Never counted: let its descriptor go uncounted.
                    inode.lock_slot().take();
                    return Ok((id, st));
                }
            }
            // An inode the kernel forgot gets its old id back: a file handle may name it.
            let old = match &inode.handle {
                Some(h) if self.export => t.forgotten.id_for(key, h),
                _ => None,
            };
            let id = old.unwrap_or_else(|| {
                t.next_id += 1;
                t.next_id - 1
            });
            t.by_id.insert(
                id,
                Entry {
                    inode: inode.clone(),
                    lookups: 1,
                },
            );
            t.by_key.insert(key, id);
            id
        };
        if counted {
            self.cache.installed(Arc::downgrade(&inode));
        }
        Ok((id, st))
    }

    /// A node holding `fd` (counted in the descriptor cache by the caller when it has a
    /// handle).
    pub(crate) fn node(
        &self,
        fd: OwnedFd,
        handle: Option<FileHandle>,
        key: (u64, u64),
        kind: FileType,
    ) -> Arc<Inode> {
        Arc::new_cyclic(|me| Inode {
            slot: Mutex::new(Some(Arc::new(fd))),
            handle,
            referenced: AtomicBool::new(true),
            opens: AtomicUsize::new(0),
            cache: self.cache.clone(),
            me: me.clone(),
            key,
            kind,
            backing: Default::default(),
        })
    }

    /// The file handle of the inode `fd` names, when handles are in use and the file system
    /// makes them (and a descriptor of its mount is kept).
    fn handle_for(&self, fd: BorrowedFd<'_>, is_dir: bool) -> Option<FileHandle> {
        if !self.cache.use_handles {
            return None;
        }
        let h = FileHandle::of(fd).ok()?;
        self.cache
            .remember_mount(h.mount_id, is_dir.then_some(fd))
            .then_some(h)
    }

    /// Nodes the kernel holds now, and the `O_PATH` descriptors they keep.
    pub fn counts(&self) -> (usize, usize) {
        let t = self.lock();
        let fds = t
            .by_id
            .values()
            .filter(|e| e.inode.lock_slot().is_some())
            .count();
        (t.by_id.len(), fds)
    }

    /// Drops `n` kernel references to node `id`; the inode is closed at zero. The root stays.
    pub fn forget(&self, id: u64, n: u64) {
        if id == crate::abi::ROOT_ID {
            return;
        }
        let mut t = self.lock();
        let gone = match t.by_id.get_mut(&id) {
            Some(e) => {
                e.lookups = e.lookups.saturating_sub(n);
                (e.lookups == 0).then_some(e.inode.key)
            }
            None => None,
        };
        if let Some(key) = gone {
            let entry = t.by_id.remove(&id);
            if t.by_key.get(&key) == Some(&id) {
                t.by_key.remove(&key);
            }
            if let Some(handle) = entry.as_ref().and_then(|e| e.inode.handle.clone()) {
                if self.export {
                    let kind = entry.as_ref().map_or(FileType::Unknown, |e| e.inode.kind);
                    t.forgotten.remember(id, Gone { handle, key, kind });
                }
            }
        }
    }
}
