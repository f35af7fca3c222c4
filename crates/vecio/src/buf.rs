//! Aligned memory: [`AlignedBuf`] for bounce buffers and callers that need direct-I/O-ready
//! memory, and [`PagePool`], a fixed region of page-aligned chunks that io_uring can register.

use std::alloc::{self, Layout};
use std::ops::{Deref, DerefMut};
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Page size assumed for alignment (4 KiB on every architecture vecio targets).
pub const PAGE_SIZE: usize = 4096;

/// A zero-filled heap buffer whose start is aligned to a power of two.
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
        AlignedBuf { ptr, len, layout }
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
        // SAFETY: allocated in `new` with this very layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl std::fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .field("align", &self.align())
            .finish()
    }
}

static NEXT_POOL_ID: AtomicU64 = AtomicU64::new(1);

pub(crate) struct PoolRegion {
    id: u64,
    mem: AlignedBuf,
    chunk: usize,
    free: Mutex<Vec<u32>>,
}

impl PoolRegion {
    pub(crate) fn id(&self) -> u64 {
        self.id
    }

    pub(crate) fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.mem.ptr.as_ptr().cast(),
            iov_len: self.mem.capacity(),
        }
    }
}

/// A fixed region of page-aligned chunks, allocated once. io_uring engines can register the
/// region as one fixed buffer, so requests over it skip per-call page pinning.
///
/// ```
/// let pool = vecio::PagePool::new(64 * 1024, 8); // eight 64 KiB chunks
/// let mut engine = vecio::EngineKind::Uring.build()?;
/// engine.register_pool(&pool).ok(); // fixed buffers where the engine has them
/// let chunk = pool.get().expect("a free chunk");
/// assert!(pool.contains(chunk.as_ptr() as usize, chunk.len()));
/// # Ok::<(), vecio::Error>(())
/// ```
#[derive(Clone)]
pub struct PagePool {
    region: Arc<PoolRegion>,
}

impl PagePool {
    /// A pool of `count` chunks of `chunk` bytes each (`chunk` is rounded up to whole pages).
    pub fn new(chunk: usize, count: usize) -> Self {
        let chunk = chunk.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let count = count.max(1);
        let mem = AlignedBuf::page_aligned(chunk.saturating_mul(count));
        let free = (0..count as u32).rev().collect();
        PagePool {
            region: Arc::new(PoolRegion {
                id: NEXT_POOL_ID.fetch_add(1, Ordering::Relaxed),
                mem,
                chunk,
                free: Mutex::new(free),
            }),
        }
    }

    /// The pool's identity, carried by `Pages` iterators over its memory.
    pub fn id(&self) -> u64 {
        self.region.id
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.region.chunk
    }

    /// True when `[addr, addr + len)` lies inside the pool's memory.
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        let base = self.region.mem.ptr.as_ptr() as usize;
        let end = base + self.region.mem.capacity();
        addr >= base && addr.checked_add(len).is_some_and(|e| e <= end)
    }

    /// Takes a free chunk, or `None` when all are in use.
    pub fn get(&self) -> Option<PoolBuf> {
        let index = self.region.free.lock().ok()?.pop()?;
        Some(PoolBuf {
            region: self.region.clone(),
            index,
        })
    }

    pub(crate) fn region(&self) -> &Arc<PoolRegion> {
        &self.region
    }
}

/// One chunk of a [`PagePool`]; goes back to the pool when dropped.
pub struct PoolBuf {
    region: Arc<PoolRegion>,
    index: u32,
}

impl PoolBuf {
    /// The id of the pool this chunk belongs to.
    pub fn pool_id(&self) -> u64 {
        self.region.id
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: index < count, so the chunk lies inside the region's allocation.
        unsafe {
            self.region
                .mem
                .ptr
                .as_ptr()
                .add(self.index as usize * self.region.chunk)
        }
    }
}

impl Deref for PoolBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the chunk is owned by this PoolBuf until it drops; memory is initialised.
        unsafe { std::slice::from_raw_parts(self.start(), self.region.chunk) }
    }
}

impl DerefMut for PoolBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref; no other PoolBuf has the same index at the same time.
        unsafe { std::slice::from_raw_parts_mut(self.start(), self.region.chunk) }
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        if let Ok(mut free) = self.region.free.lock() {
            free.push(self.index);
        }
    }
}

// SAFETY: a PoolBuf owns its chunk exclusively; the region is shared through Arc and its free
// list is behind a Mutex.
unsafe impl Send for PoolBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for PoolBuf {}
// SAFETY: the region's memory is only reached through PoolBufs, each owning a distinct chunk.
unsafe impl Send for PoolRegion {}
// SAFETY: as above.
unsafe impl Sync for PoolRegion {}

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

    #[test]
    fn pool_hands_out_distinct_chunks_and_takes_them_back() {
        let pool = PagePool::new(4096, 2);
        let a = pool.get().unwrap();
        let b = pool.get().unwrap();
        assert!(pool.get().is_none());
        assert_ne!(a.as_ptr(), b.as_ptr());
        assert!(pool.contains(a.as_ptr() as usize, 4096));
        assert!(!pool.contains(a.as_ptr() as usize + 1, 8192));
        drop(a);
        assert!(pool.get().is_some());
    }
}
