//! A registrable [`Region`] carved into power-of-two buffers by a buddy allocator: the memory
//! behind a registered [`BufPool`](crate::BufPool).

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

use super::buddy::Buddy;
use super::{AlignedBuf, Region, PAGE_SIZE};

/// A region and the blocks of it that are free.
pub(crate) struct Arena {
    region: Region,
    buddy: Mutex<Buddy>,
}

/// The block of an arena that an [`AlignedBuf`] holds; dropping it gives the block back.
pub(crate) struct Carved {
    arena: Arc<Arena>,
    first_page: u32,
    order: u8,
}

impl Carved {
    /// The id of the region the block lies in.
    pub(crate) fn region_id(&self) -> u64 {
        self.arena.region.id()
    }
}

impl Drop for Carved {
    fn drop(&mut self) {
        // A poisoned lock means a panic elsewhere while allocating; leaking the block is safe.
        if let Ok(mut buddy) = self.arena.buddy.lock() {
            buddy.free(self.first_page as usize, self.order as u32);
        }
    }
}

impl Arena {
    /// An arena of `bytes` rounded down to a power-of-two number of pages (at least one).
    pub(crate) fn new(bytes: usize) -> Arc<Arena> {
        let pages = (bytes / PAGE_SIZE).max(1);
        let top = usize::BITS - 1 - pages.leading_zeros(); // log2, rounded down
        Arc::new(Arena {
            region: Region::new(PAGE_SIZE << top),
            buddy: Mutex::new(Buddy::new(top)),
        })
    }

    pub(crate) fn region(&self) -> &Region {
        &self.region
    }

    /// A page-aligned buffer of `class` bytes (a power of two, at least a page) showing `len`,
    /// or `None` when no free block is that large.
    pub(crate) fn carve(self: &Arc<Self>, class: usize, len: usize) -> Option<AlignedBuf> {
        debug_assert!(class.is_power_of_two() && class >= PAGE_SIZE && len <= class);
        let order = (class / PAGE_SIZE).trailing_zeros();
        let first_page = self.buddy.lock().ok()?.alloc(order)?;
        let layout = Layout::from_size_align(class, PAGE_SIZE).ok()?;
        // SAFETY: the block lies inside the region (the buddy allocator only hands out blocks of
        // its 2^top pages), so the pointer is non-null and in bounds.
        let start = unsafe { self.region.base().add(first_page * PAGE_SIZE) };
        let carved = Carved {
            arena: self.clone(),
            first_page: first_page as u32,
            order: order as u8,
        };
        let ptr = NonNull::new(start)?;
        // SAFETY: the block is page-aligned, initialised (the region was zeroed) and owned by
        // this buffer alone until `carved` drops and frees it; `carved` keeps the region alive.
        Some(unsafe { AlignedBuf::carved(ptr, len, layout, carved) })
    }
}
