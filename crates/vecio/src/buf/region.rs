//! [`Region`]: one block of page-aligned memory that an io_uring engine can register as a fixed
//! buffer (`io_uring_register(2)`, `IORING_REGISTER_BUFFERS2`), so requests over it skip the
//! per-call pinning of their pages.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use super::AlignedBuf;

static NEXT_REGION_ID: AtomicU64 = AtomicU64::new(1);

/// A registrable block of memory, shared by the pool that carves it and by every engine that
/// registered it (each keeps a clone, so the memory outlives its registration).
///
/// The one kind of registrable memory in vecio: a [`BufPool`](crate::BufPool) made
/// [`with_region`](crate::BufPoolOptions::with_region) carves its buffers from one; hand it to [`Engine::register_region`](crate::Engine::register_region) and name it in
/// [`IoIter::pages_into`](crate::IoIter::pages_into) / [`pages_from`](crate::IoIter::pages_from).
///
/// ```
/// let mut pool = vecio::BufPool::new(vecio::BufPoolOptions::aligned(512).with_region(1 << 20));
/// let region = pool.region().expect("a region was asked for").clone();
/// let mut engine = vecio::EngineKind::Uring.build()?;
/// engine.register_region(&region).ok(); // fixed buffers where the engine has them
/// let buf = pool.get(4096);
/// assert_eq!(buf.region_id(), Some(region.id()));
/// assert!(region.contains(buf.as_ptr() as usize, buf.len()));
/// # Ok::<(), vecio::Error>(())
/// ```
#[derive(Clone)]
pub struct Region {
    inner: Arc<RegionMem>,
}

struct RegionMem {
    id: u64,
    mem: AlignedBuf,
}

impl Region {
    /// A zeroed region of `len` bytes rounded up to whole pages.
    pub(crate) fn new(len: usize) -> Region {
        let len = len.max(1).div_ceil(crate::PAGE_SIZE) * crate::PAGE_SIZE;
        Region {
            inner: Arc::new(RegionMem {
                id: NEXT_REGION_ID.fetch_add(1, Ordering::Relaxed),
                mem: AlignedBuf::page_aligned(len),
            }),
        }
    }

    /// The region's identity, carried by the ops over its memory.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.inner.mem.capacity()
    }

    /// Never true: a region holds at least one page.
    pub fn is_empty(&self) -> bool {
        false
    }

    /// True when `[addr, addr + len)` lies inside the region.
    pub fn contains(&self, addr: usize, len: usize) -> bool {
        let base = self.base() as usize;
        addr >= base
            && addr
                .checked_add(len)
                .is_some_and(|e| e <= base + self.len())
    }

    /// The first byte of the region.
    pub(crate) fn base(&self) -> *mut u8 {
        self.inner.mem.raw_ptr()
    }

    /// The whole region as one iovec, for registration.
    pub(crate) fn iovec(&self) -> libc::iovec {
        libc::iovec {
            iov_base: self.base().cast(),
            iov_len: self.len(),
        }
    }
}

impl AsRef<Region> for Region {
    fn as_ref(&self) -> &Region {
        self
    }
}

impl std::fmt::Debug for Region {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Region")
            .field("id", &self.id())
            .field("len", &self.len())
            .finish()
    }
}
