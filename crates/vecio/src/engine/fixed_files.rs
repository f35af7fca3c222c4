//! Fixed-file slots of io_uring rings, and their release when a [`File`](crate::File) closes.
//!
//! A ring's fixed-file table holds a reference to each file registered in it
//! (`IORING_REGISTER_FILES_UPDATE`), so a file the application has closed stays open inside
//! every ring that served it until its slot is cleared: an unlinked file keeps its blocks.
//! This module makes the release structural:
//!
//! - each ring's slots are a [`SlotTable`], the one record of which file id sits in which slot;
//! - a process-wide index maps a file id to the tables and slots holding it, filled when a ring
//!   registers the file;
//! - `File`'s `Drop` calls [`release_file`], which clears every slot of that file at once, from
//!   the dropping thread, whatever is in flight on the rings. The kernel keeps requests already
//!   submitted on a cleared slot valid (the old table node lives until they complete), and no
//!   request of a dropped file can still be queued (`Engine::push`'s contract).
//!
//! A ring set up with `IORING_SETUP_SINGLE_ISSUER` refuses registration from other threads
//! (`EEXIST`); there the slot is handed to the ring's own thread, which clears it at its next
//! push or wait ([`SlotTable::take_deferred`]).

use std::collections::HashMap;
use std::os::fd::RawFd;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, OnceLock, Weak};

/// `IORING_REGISTER_FILES_UPDATE`.
const REGISTER_FILES_UPDATE: libc::c_uint = 6;

/// `struct io_uring_files_update`.
#[repr(C)]
struct FilesUpdate {
    offset: u32,
    resv: u32,
    fds: u64,
}

/// Slots holding a file now, over every ring of the process.
static OCCUPIED_TOTAL: AtomicUsize = AtomicUsize::new(0);

/// Fixed-file slots holding a file now, over every io_uring engine of the process.
pub fn registered_files() -> usize {
    OCCUPIED_TOTAL.load(Ordering::Relaxed)
}

/// The fixed-file slots of one ring: which file id each slot holds.
pub(crate) struct SlotTable {
    /// The ring's descriptor; valid while `State::alive` (the ring's `Drop` clears it under
    /// the lock before the ring closes).
    ring_fd: RawFd,
    state: Mutex<State>,
    /// Set when `State::deferred` has slots for the ring's own thread to clear.
    has_deferred: AtomicBool,
    /// Slots holding a file now.
    occupied: AtomicUsize,
}

struct State {
    alive: bool,
    slots: Vec<Option<u64>>,
    /// Slots of dropped files another thread could not clear (single-issuer rings).
    deferred: Vec<u32>,
}

/// File id -> the tables and slots holding it.
type Index = HashMap<u64, Vec<(Weak<SlotTable>, u32)>>;

fn index() -> MutexGuard<'static, Index> {
    static INDEX: OnceLock<Mutex<Index>> = OnceLock::new();
    INDEX
        .get_or_init(Default::default)
        .lock()
        .unwrap_or_else(|p| p.into_inner())
}

impl SlotTable {
    /// The table of a ring with descriptor `ring_fd` and `slots` fixed-file slots.
    pub(crate) fn new(ring_fd: RawFd, slots: u32) -> Arc<SlotTable> {
        Arc::new(SlotTable {
            ring_fd,
            state: Mutex::new(State {
                alive: true,
                slots: vec![None; slots as usize],
                deferred: Vec::new(),
            }),
            has_deferred: AtomicBool::new(false),
            occupied: AtomicUsize::new(0),
        })
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Slots holding a file now.
    pub(crate) fn occupied(&self) -> usize {
        self.occupied.load(Ordering::Relaxed)
    }

    /// A free slot, if any.
    pub(crate) fn free_slot(&self) -> Option<u32> {
        self.lock()
            .slots
            .iter()
            .position(Option::is_none)
            .map(|i| i as u32)
    }

    /// Whether `slot` holds nothing now (a file of it may have been released by another
    /// thread).
    pub(crate) fn is_free(&self, slot: u32) -> bool {
        self.lock()
            .slots
            .get(slot as usize)
            .is_some_and(Option::is_none)
    }

    /// Records that the ring's own thread registered `file_id` in `slot` (after the
    /// registration succeeded), replacing whatever the slot held.
    pub(crate) fn assign(self: &Arc<Self>, slot: u32, file_id: u64) {
        let old = {
            let mut st = self.lock();
            let old = st.slots[slot as usize].replace(file_id);
            if old.is_none() {
                self.occupied.fetch_add(1, Ordering::Relaxed);
                OCCUPIED_TOTAL.fetch_add(1, Ordering::Relaxed);
            }
            old
        };
        let mut idx = index();
        if let Some(old) = old {
            forget_entry(&mut idx, old, self, slot);
        }
        idx.entry(file_id)
            .or_default()
            .push((Arc::downgrade(self), slot));
    }

    /// Slots whose files were dropped by threads the ring refused; the ring's own thread
    /// clears them in the kernel. Cheap when there are none (one atomic load).
    pub(crate) fn take_deferred(&self) -> Vec<u32> {
        if !self.has_deferred.load(Ordering::Acquire) {
            return Vec::new();
        }
        let mut st = self.lock();
        self.has_deferred.store(false, Ordering::Release);
        std::mem::take(&mut st.deferred)
    }

    /// Clears `slot` if it still holds `file_id`: in the kernel at once when the ring allows
    /// this thread to, otherwise by the ring's own thread at its next push or wait.
    fn release(&self, slot: u32, file_id: u64) {
        let mut st = self.lock();
        if !st.alive || st.slots.get(slot as usize).copied().flatten() != Some(file_id) {
            return;
        }
        st.slots[slot as usize] = None;
        self.occupied.fetch_sub(1, Ordering::Relaxed);
        OCCUPIED_TOTAL.fetch_sub(1, Ordering::Relaxed);
        // Under the lock: the ring cannot close meanwhile (`retire` takes it first).
        if let Err(e) = clear_in_kernel(self.ring_fd, slot) {
            if e.raw_os_error() != Some(libc::EEXIST) {
                tracing::warn!(
                    slot,
                    "cannot clear a fixed-file slot: {e}; deferring it to the ring's thread"
                );
            }
            st.deferred.push(slot);
            self.has_deferred.store(true, Ordering::Release);
        }
    }

    /// The ring is closing: no slot is released through it any more, and the index forgets
    /// its entries (the ring's close releases the files themselves).
    pub(crate) fn retire(self: &Arc<Self>) {
        let ids: Vec<(u32, u64)> = {
            let mut st = self.lock();
            st.alive = false;
            st.slots
                .iter_mut()
                .enumerate()
                .filter_map(|(i, s)| s.take().map(|id| (i as u32, id)))
                .collect()
        };
        OCCUPIED_TOTAL.fetch_sub(ids.len(), Ordering::Relaxed);
        self.occupied.store(0, Ordering::Relaxed);
        let mut idx = index();
        for (slot, id) in ids {
            forget_entry(&mut idx, id, self, slot);
        }
    }
}

/// Removes `table`'s `slot` from `file_id`'s entries.
fn forget_entry(idx: &mut Index, file_id: u64, table: &Arc<SlotTable>, slot: u32) {
    if let Some(list) = idx.get_mut(&file_id) {
        list.retain(|(t, s)| !(*s == slot && std::ptr::eq(t.as_ptr(), Arc::as_ptr(table))));
        if list.is_empty() {
            idx.remove(&file_id);
        }
    }
}

/// Clears every fixed-file slot holding `file_id`, in every ring: called by `File`'s `Drop`.
pub(crate) fn release_file(file_id: u64) {
    let holders = match index().remove(&file_id) {
        Some(list) => list,
        None => return,
    };
    for (table, slot) in holders {
        if let Some(table) = table.upgrade() {
            table.release(slot, file_id);
        }
    }
}

/// Clears `slot` of the ring `ring_fd` (`io_uring_register(2)`, `IORING_REGISTER_FILES_UPDATE`
/// with the descriptor -1).
pub(crate) fn clear_in_kernel(ring_fd: RawFd, slot: u32) -> std::io::Result<()> {
    let none: [RawFd; 1] = [-1];
    let update = FilesUpdate {
        offset: slot,
        resv: 0,
        fds: none.as_ptr() as u64,
    };
    // SAFETY: `update` and the one-descriptor array it points to live across the call; the
    // kernel only reads them. A wrong ring_fd fails with EBADF or EOPNOTSUPP, touching nothing.
    let r = unsafe {
        libc::syscall(
            libc::SYS_io_uring_register,
            ring_fd,
            REGISTER_FILES_UPDATE,
            &update as *const FilesUpdate,
            1u32,
        )
    };
    if r < 0 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_released_file_leaves_the_index_and_its_slot() {
        // A table with no ring behind it (fd -1): the kernel call fails with EBADF and the
        // slot is deferred, which is what this test looks at.
        let table = SlotTable::new(-1, 4);
        table.assign(2, 77);
        assert_eq!(table.occupied(), 1);
        assert_eq!(table.free_slot(), Some(0));
        release_file(77);
        assert!(table.is_free(2));
        assert_eq!(table.occupied(), 0);
        assert_eq!(table.take_deferred(), vec![2]);
        assert!(table.take_deferred().is_empty());
        assert!(!index().contains_key(&77));
    }

    #[test]
    fn a_slot_reused_for_another_file_is_not_cleared_by_the_old_one() {
        let table = SlotTable::new(-1, 2);
        table.assign(0, 101);
        table.assign(0, 102);
        release_file(101);
        assert!(!table.is_free(0));
        assert!(table.take_deferred().is_empty());
        release_file(102);
        assert!(table.is_free(0));
    }

    #[test]
    fn a_retired_table_is_forgotten() {
        let table = SlotTable::new(-1, 2);
        table.assign(1, 201);
        table.retire();
        assert!(!index().contains_key(&201));
        release_file(201);
        assert!(table.take_deferred().is_empty());
    }
}
