//! [`Region`]: one block of page-aligned memory that an io_uring engine can register as a fixed
//! buffer (`io_uring_register(2)`, `IORING_REGISTER_BUFFERS2`), so requests over it skip the
//! per-call pinning of their pages.
//!
//! A region of 2 MiB or more is its own anonymous mapping, aligned to 2 MiB and advised
//! `MADV_HUGEPAGE`, so that where the kernel has transparent huge pages a buffer of up to 2 MiB
//! is physically contiguous: the block layer then sees one segment for it instead of one a page.
//! A disk's queue takes a bounded number of segments a request (`max_segments`, 254 on a virtio
//! disk), so page-sized segments also cap how far the scheduler can merge sequential reads.

use std::ffi::c_void;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rustix::mm::{self, Advice, MapFlags, ProtFlags};

use super::{AlignedBuf, PAGE_SIZE};

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
    mem: Memory,
}

/// Where a region's bytes live.
enum Memory {
    /// Heap memory, for regions smaller than a huge page.
    Heap(AlignedBuf),
    /// An anonymous mapping of its own, huge-page aligned and advised.
    Mapped(HugeMapping),
}

impl Memory {
    fn base(&self) -> *mut u8 {
        match self {
            Memory::Heap(buf) => buf.raw_ptr(),
            Memory::Mapped(map) => map.base.as_ptr(),
        }
    }

    fn len(&self) -> usize {
        match self {
            Memory::Heap(buf) => buf.capacity(),
            Memory::Mapped(map) => map.len,
        }
    }
}

/// The size of a transparent huge page on x86-64 and of a PMD on most 64-bit kernels.
pub(crate) const HUGE_PAGE: usize = 2 << 20;

/// A private anonymous mapping of `len` bytes (a whole number of pages) starting on a
/// [`HUGE_PAGE`] boundary, advised `MADV_HUGEPAGE`. Its pages are zero until written.
struct HugeMapping {
    base: NonNull<u8>,
    len: usize,
}

// SAFETY: the mapping is plain memory owned by the region; the region hands out its bytes only
// through buffers the buddy allocator keeps disjoint.
unsafe impl Send for HugeMapping {}
// SAFETY: as above; `&HugeMapping` gives only its address.
unsafe impl Sync for HugeMapping {}

impl HugeMapping {
    /// The mapping, or `None` when the kernel refuses the address space.
    fn new(len: usize) -> Option<HugeMapping> {
        let reserve = len.checked_add(HUGE_PAGE)?;
        // SAFETY: a fresh anonymous mapping at an address of the kernel's choosing touches no
        // existing memory.
        let raw = unsafe {
            mm::mmap_anonymous(
                std::ptr::null_mut(),
                reserve,
                ProtFlags::READ | ProtFlags::WRITE,
                MapFlags::PRIVATE,
            )
        }
        .ok()?;
        let start = raw as usize;
        let aligned = start.next_multiple_of(HUGE_PAGE);
        let head = aligned - start;
        let tail = reserve - head - len;
        // SAFETY: the head and the tail lie inside the reservation just made and outside
        // `[aligned, aligned + len)`, which nothing else refers to yet.
        unsafe {
            if head > 0 {
                let _ = mm::munmap(raw, head);
            }
            if tail > 0 {
                let _ = mm::munmap((aligned + len) as *mut c_void, tail);
            }
        }
        // SAFETY: advice over the mapping just made; it changes how pages are backed, not what
        // they hold. A kernel without transparent huge pages refuses it, and the region then
        // takes small pages.
        let _ = unsafe { mm::madvise(aligned as *mut c_void, len, Advice::LinuxHugepage) };
        Some(HugeMapping {
            base: NonNull::new(aligned as *mut u8)?,
            len,
        })
    }
}

impl Drop for HugeMapping {
    fn drop(&mut self) {
        // SAFETY: the mapping is this value's alone, and every buffer carved from it holds the
        // region (and so this mapping) alive until it drops.
        let _ = unsafe { mm::munmap(self.base.as_ptr().cast(), self.len) };
    }
}

impl Region {
    /// A zeroed region of `len` bytes rounded up to whole pages.
    pub(crate) fn new(len: usize) -> Region {
        let len = len.max(1).div_ceil(PAGE_SIZE) * PAGE_SIZE;
        let mapped = (len >= HUGE_PAGE).then(|| HugeMapping::new(len)).flatten();
        let mem = match mapped {
            Some(map) => Memory::Mapped(map),
            None => Memory::Heap(AlignedBuf::page_aligned(len)),
        };
        Region {
            inner: Arc::new(RegionMem {
                id: NEXT_REGION_ID.fetch_add(1, Ordering::Relaxed),
                mem,
            }),
        }
    }

    /// The region's identity, carried by the ops over its memory.
    pub fn id(&self) -> u64 {
        self.inner.id
    }

    /// Bytes in the region.
    pub fn len(&self) -> usize {
        self.inner.mem.len()
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
        self.inner.mem.base()
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

#[cfg(test)]
mod tests {
    use super::*;

    /// The `VmFlags` of the mapping in /proc/self/smaps that holds `addr`, or `None` when
    /// none does.
    fn vm_flags_of_mapping_holding(addr: usize) -> Option<String> {
        let smaps = std::fs::read_to_string("/proc/self/smaps").expect("read /proc/self/smaps");
        let mut in_it = false;
        for line in smaps.lines() {
            let range = line.split_once(' ').and_then(|(r, _)| r.split_once('-'));
            let bounds = range.and_then(|(start, end)| {
                Some((
                    usize::from_str_radix(start, 16).ok()?,
                    usize::from_str_radix(end, 16).ok()?,
                ))
            });
            if let Some((start, end)) = bounds {
                in_it = (start..end).contains(&addr);
            } else if let Some(flags) = line.strip_prefix("VmFlags:").filter(|_| in_it) {
                return Some(flags.trim().to_string());
            }
        }
        None
    }

    fn advised_huge(addr: usize) -> bool {
        vm_flags_of_mapping_holding(addr).is_some_and(|f| f.split(' ').any(|f| f == "hg"))
    }

    #[test]
    fn a_large_region_is_its_own_huge_page_mapping_and_goes_with_the_last_clone() {
        let region = Region::new(HUGE_PAGE * 2 + PAGE_SIZE);
        let base = region.base() as usize;
        assert_eq!(base % HUGE_PAGE, 0, "region at {base:#x}");
        assert_eq!(region.len(), HUGE_PAGE * 2 + PAGE_SIZE);
        assert!(
            advised_huge(base),
            "no MADV_HUGEPAGE on the region: VmFlags {:?}",
            vm_flags_of_mapping_holding(base)
        );
        // SAFETY: the region's bytes are plain memory, zero until written, and no buffer was
        // carved from this one.
        let bytes = unsafe { std::slice::from_raw_parts_mut(region.base(), region.len()) };
        assert!(bytes.iter().all(|&b| b == 0));
        bytes[region.len() - 1] = 7;
        let clone = region.clone();
        drop(region);
        assert!(advised_huge(base), "unmapped while a clone lives");
        drop(clone);
        // Only this test makes a region this large, so no other huge-page mapping takes its place.
        assert!(!advised_huge(base), "still mapped after the last clone");
    }

    #[test]
    fn a_region_under_a_huge_page_is_page_aligned_heap_memory() {
        let region = Region::new(HUGE_PAGE / 2 + 1);
        assert!(!advised_huge(region.base() as usize));
        assert_eq!(region.base() as usize % PAGE_SIZE, 0);
        assert_eq!(region.len(), HUGE_PAGE / 2 + PAGE_SIZE);
    }
}
