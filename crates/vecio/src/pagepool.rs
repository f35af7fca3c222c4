//! [`PagePool`]: a fixed [`Region`] cut into equal page-aligned chunks.

use std::ops::{Deref, DerefMut};
use std::sync::{Arc, Mutex};

use crate::{Region, PAGE_SIZE};

struct Chunks {
    region: Region,
    chunk: usize,
    free: Mutex<Vec<u32>>,
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
    chunks: Arc<Chunks>,
}

impl PagePool {
    /// A pool of `count` chunks of `chunk` bytes each (`chunk` is rounded up to whole pages).
    pub fn new(chunk: usize, count: usize) -> Self {
        let chunk = chunk.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let count = count.max(1);
        let free = (0..count as u32).rev().collect();
        PagePool {
            chunks: Arc::new(Chunks {
                region: Region::new(chunk.saturating_mul(count)),
                chunk,
                free: Mutex::new(free),
            }),
        }
    }

    /// The pool's identity (its region's), carried by `Pages` iterators over its memory.
    pub fn id(&self) -> u64 {
        self.chunks.region.id()
    }

    /// Bytes per chunk.
    pub fn chunk_size(&self) -> usize {
        self.chunks.chunk
    }

    /// True when `[addr, addr + len)` lies inside the pool's memory.
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        self.chunks.region.contains(addr, len)
    }

    /// Takes a free chunk, or `None` when all are in use.
    pub fn get(&self) -> Option<PoolBuf> {
        let index = self.chunks.free.lock().ok()?.pop()?;
        Some(PoolBuf {
            chunks: self.chunks.clone(),
            index,
        })
    }

    /// The memory behind the pool, for [`Engine::register_region`](crate::Engine::register_region).
    pub fn region(&self) -> &Region {
        &self.chunks.region
    }
}

impl AsRef<Region> for PagePool {
    fn as_ref(&self) -> &Region {
        self.region()
    }
}

/// One chunk of a [`PagePool`]; goes back to the pool when dropped.
pub struct PoolBuf {
    chunks: Arc<Chunks>,
    index: u32,
}

impl PoolBuf {
    /// The id of the pool this chunk belongs to.
    pub fn pool_id(&self) -> u64 {
        self.chunks.region.id()
    }

    fn start(&self) -> *mut u8 {
        // SAFETY: index < count, so the chunk lies inside the region's allocation.
        unsafe {
            self.chunks
                .region
                .base()
                .add(self.index as usize * self.chunks.chunk)
        }
    }
}

impl Deref for PoolBuf {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        // SAFETY: the chunk is owned by this PoolBuf until it drops; memory is initialised.
        unsafe { std::slice::from_raw_parts(self.start(), self.chunks.chunk) }
    }
}

impl DerefMut for PoolBuf {
    fn deref_mut(&mut self) -> &mut [u8] {
        // SAFETY: as in deref; no other PoolBuf has the same index at the same time.
        unsafe { std::slice::from_raw_parts_mut(self.start(), self.chunks.chunk) }
    }
}

impl Drop for PoolBuf {
    fn drop(&mut self) {
        if let Ok(mut free) = self.chunks.free.lock() {
            free.push(self.index);
        }
    }
}

// SAFETY: a PoolBuf owns its chunk exclusively; the region is shared through Arc and its free
// list is behind a Mutex.
unsafe impl Send for PoolBuf {}
// SAFETY: shared access only hands out &[u8].
unsafe impl Sync for PoolBuf {}

#[cfg(test)]
mod tests {
    use super::*;

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
