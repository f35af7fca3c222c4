//! The memory layer, under everything that moves bytes: [`AlignedBuf`], for bounce buffers,
//! pool buffers and callers that need direct-I/O-ready memory; [`Region`], the one kind of
//! registrable memory; and the carving of a region into buffers (`arena.rs`, `buddy.rs`), which
//! [`BufPool`](crate::BufPool) builds on. A carved buffer is still an `AlignedBuf` and gives its
//! block back to its region when dropped, so the buffer and the region live in one layer.

mod arena;
mod buddy;
mod region;

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;

pub(crate) use arena::Arena;
use arena::Carved;
pub use region::Region;
pub(crate) use region::HUGE_PAGE;

/// Page size assumed for alignment (4 KiB on every architecture vecio targets).
pub const PAGE_SIZE: usize = 4096;

/// A buffer whose start is aligned to a power of two: zero-filled when made by [`new`](Self::new),
/// holding what its last user left when it comes from a [`BufPool`](crate::BufPool).
///
/// ```
/// let mut buf = vecio::AlignedBuf::new(5000, 512);
/// assert_eq!(buf.as_ptr() as usize % 512, 0);
/// assert_eq!((buf.len(), buf.capacity()), (5000, 5120));
/// buf[..5].copy_from_slice(b"hello");
/// ```
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
    /// Where the memory goes back to: `None` for the heap, else the registrable region of a
    /// [`BufPool`](crate::BufPool) it was carved from.
    carved: Option<Carved>,
}

// SAFETY: AlignedBuf owns its memory exclusively, like a Vec<u8>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// A zeroed buffer of `len` bytes aligned to `align` (a power of two). The allocation is
    /// rounded up to a whole number of `align` units; `len` is what the buffer shows.
    pub fn new(len: usize, align: usize) -> Self {
        let align = align.max(1).next_power_of_two();
        let cap = len.div_ceil(align).max(1) * align;
        let layout = match Layout::from_size_align(cap, align) {
            Ok(l) => l,
            Err(_) => alloc::handle_alloc_error(Layout::new::<u8>()),
        };
        // SAFETY: layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf {
            ptr,
            len,
            layout,
            carved: None,
        }
    }

    /// A zeroed buffer of `len` bytes aligned to a page.
    pub fn page_aligned(len: usize) -> Self {
        Self::new(len, PAGE_SIZE)
    }

    /// The alignment of the start of the buffer.
    pub fn align(&self) -> usize {
        self.layout.align()
    }

    /// Bytes the allocation can hold (`len` rounded up to the alignment).
    pub fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// The id of the [`Region`](crate::Region) this buffer was carved from (a registered
    /// [`BufPool`](crate::BufPool)'s), or `None` for heap memory.
    pub fn region_id(&self) -> Option<u64> {
        self.carved.as_ref().map(Carved::region_id)
    }

    /// A buffer over `layout.size()` bytes at `ptr`, carved from a region (see `arena.rs`).
    ///
    /// # Safety
    /// `ptr` is valid, aligned to `layout.align()` and initialised for `layout.size()` bytes,
    /// owned by nobody else until `carved` drops (which gives the memory back).
    pub(crate) unsafe fn carved(
        ptr: NonNull<u8>,
        len: usize,
        layout: Layout,
        carved: Carved,
    ) -> Self {
        AlignedBuf {
            ptr,
            len,
            layout,
            carved: Some(carved),
        }
    }

    /// The first byte, as a pointer that may write.
    pub(crate) fn raw_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Changes the visible length, up to the capacity. Returns false (and changes nothing)
    /// when `len` is larger than the capacity.
    pub fn set_len(&mut self, len: usize) -> bool {
        if len > self.layout.size() {
            return false;
        }
        self.len = len;
        true
    }
}

impl Deref for AlignedBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: ptr is valid for layout.size() >= len initialised (zeroed) bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }
}

impl DerefMut for AlignedBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref, and &mut self gives exclusive access.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        if self.carved.is_some() {
            return; // `carved` drops next and gives the memory back to its region
        }
        // SAFETY: allocated in `new` with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("align", &self.align())
            .field("region", &self.region_id())
            .finish()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligned_buf_is_aligned_and_zeroed() {
        let b = AlignedBuf::new(1000, 512);
        assert_eq!(b.as_ptr() as usize % 512, 0);
        assert_eq!(b.len(), 1000);
        assert_eq!(b.capacity(), 1024);
        assert!(b.iter().all(|&x| x == 0));
    }
}
