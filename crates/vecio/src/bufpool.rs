//! [`BufPool`]: request buffers for a server, in power-of-two size classes, aligned for direct
//! I/O, reused between requests and counted, and optionally carved from one registrable
//! [`Region`].

use std::sync::Arc;

use crate::buf::Arena;
use crate::{AlignedBuf, Region};

/// Smallest size class (one page).
const MIN_CLASS: usize = 4096;

/// Request buffers in power-of-two size classes (4 KiB and up), aligned for direct I/O.
///
/// A server takes a buffer per request with [`get`](Self::get) and gives it back with
/// [`put`](Self::put) when the reply is sent (a region block given back is kept carved for
/// its class, up to a quarter of the region, so the next request of that size takes it
/// without going through the region's allocator). Reusing buffers matters: a fresh 1 MiB allocation
/// is zeroed and faulted in on first touch, a reused one is not. The pool keeps at most
/// [`keep`](BufPoolOptions::keep) free buffers and [`keep_bytes`](BufPoolOptions::keep_bytes)
/// bytes of them, and counts the bytes handed out ([`held`](Self::held)), so a connection can
/// stop taking requests while too much memory is held.
///
/// Buffers are [`AlignedBuf`]s, so they go into a [`Queue`](crate::Queue) as
/// [`OwnedBuf::Aligned`](crate::OwnedBuf::Aligned) and come back with the completion.
///
/// With [`with_region`](BufPoolOptions::with_region), buffers come first from one fixed
/// [`Region`], split into size classes as a buddy allocator splits pages. An io_uring engine
/// that registered the region ([`Engine::register_region`](crate::Engine::register_region))
/// runs requests over those buffers as `READ_FIXED`/`WRITE_FIXED`, with no per-call page
/// pinning. A request larger than the region, or one arriving when the region is taken, gets
/// a heap buffer as without a region.
///
/// ```
/// let mut pool = vecio::BufPool::new(vecio::BufPoolOptions::aligned(512));
/// let buf = pool.get(5000);
/// assert_eq!(buf.len(), 5000);
/// assert_eq!(buf.capacity(), 8192); // the 8 KiB class
/// assert_eq!(pool.held(), 8192);
/// pool.put(buf);
/// assert_eq!(pool.held(), 0);
/// ```
pub struct BufPool {
    options: BufPoolOptions,
    arena: Option<Arc<Arena>>,
    /// A second arena of the region's size, made when the region first runs out, so that a
    /// burst larger than the region still gets huge-page memory (see `spill_block`).
    spill: Option<Arc<Arena>>,
    /// Free buffers by size class (index: log2(capacity / MIN_CLASS)).
    free: Vec<Vec<AlignedBuf>>,
    free_count: usize,
    free_bytes: usize,
    /// Region blocks given back, kept carved by size class for the next `get` of their class:
    /// a reuse then costs a pop, not the arena's lock, its buddy search and an `Arc` count.
    region_free: Vec<Vec<AlignedBuf>>,
    region_free_bytes: usize,
    held: usize,
}

/// How a [`BufPool`] aligns and how much it keeps.
#[derive(Clone, Copy, Debug)]
pub struct BufPoolOptions {
    /// Alignment of every buffer's start (a power of two; a file's `DioAlign::mem`).
    pub align: usize,
    /// Free buffers kept for reuse, at most.
    pub keep: usize,
    /// Bytes of free buffers kept for reuse, at most.
    pub keep_bytes: usize,
    /// Bytes of the registrable region buffers are carved from first (rounded down to a
    /// power-of-two number of pages); 0 for none.
    pub region: usize,
}

impl BufPoolOptions {
    /// Buffers aligned to `align`, keeping up to 32 free buffers and 64 MiB of them.
    pub fn aligned(align: usize) -> Self {
        BufPoolOptions {
            align,
            keep: 32,
            keep_bytes: 64 << 20,
            region: 0,
        }
    }

    /// The same options with a registrable region of `bytes`.
    pub fn with_region(self, bytes: usize) -> Self {
        BufPoolOptions {
            region: bytes,
            ..self
        }
    }
}

impl Default for BufPoolOptions {
    /// Page-aligned buffers (enough for every direct-I/O alignment vecio meets).
    fn default() -> Self {
        Self::aligned(crate::PAGE_SIZE)
    }
}

impl BufPool {
    /// An empty pool.
    pub fn new(options: BufPoolOptions) -> Self {
        BufPool {
            options,
            // Region blocks are page-aligned: a larger alignment takes heap buffers only.
            arena: (options.region > 0 && options.align <= crate::PAGE_SIZE)
                .then(|| Arena::new(options.region)),
            spill: None,
            free: Vec::new(),
            free_count: 0,
            free_bytes: 0,
            region_free: Vec::new(),
            region_free_bytes: 0,
            held: 0,
        }
    }

    /// The registrable region buffers are carved from, when the options asked for one.
    pub fn region(&self) -> Option<&Region> {
        self.arena.as_deref().map(Arena::region)
    }

    /// Bytes handed out by [`get`](Self::get) and not yet [`put`](Self::put) back.
    pub fn held(&self) -> usize {
        self.held
    }

    /// Bytes of free buffers kept for reuse.
    pub fn free_bytes(&self) -> usize {
        self.free_bytes
    }

    /// A buffer of exactly `len` bytes from the smallest class that holds it (contents
    /// unspecified: a reused buffer holds an earlier request's bytes).
    pub fn get(&mut self, len: usize) -> AlignedBuf {
        let cap = class_size(len);
        if let Some(buf) = self
            .region_block(cap, len)
            .or_else(|| self.spill_block(cap, len))
        {
            self.held += cap;
            return buf;
        }
        let reused = self.free.get_mut(class_index(cap)).and_then(Vec::pop);
        let mut buf = match reused {
            Some(b) => {
                self.free_count -= 1;
                self.free_bytes -= b.capacity();
                b
            }
            None => AlignedBuf::new(cap, self.options.align),
        };
        // The capacity is at least `len`, so this cannot fail.
        let _ = buf.set_len(len);
        self.held += buf.capacity();
        buf
    }

    /// Gives back a buffer from [`get`](Self::get); it is kept for reuse while the pool's
    /// limits allow, else freed. A buffer of another origin is taken too (kept only if its
    /// capacity is a size class and its alignment the pool's).
    pub fn put(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity();
        self.held = self.held.saturating_sub(cap);
        if buf.region_id().is_some() {
            self.keep_region_block(buf);
            return;
        }
        let fits = cap == class_size(cap) && buf.align() >= self.options.align;
        if !fits
            || self.free_count >= self.options.keep
            || self.free_bytes + cap > self.options.keep_bytes
        {
            return;
        }
        let i = class_index(cap);
        if self.free.len() <= i {
            self.free.resize_with(i + 1, Vec::new);
        }
        self.free_count += 1;
        self.free_bytes += cap;
        self.free[i].push(buf);
    }
}

impl BufPool {
    /// A region block of class `cap` showing `len` bytes: one kept from an earlier `put`, or
    /// a new one carved. When the region has no block that large, the kept ones go back to it
    /// (small kept blocks must not fragment it for a larger class) and the carve is tried
    /// once more.
    fn region_block(&mut self, cap: usize, len: usize) -> Option<AlignedBuf> {
        let arena = self.arena.as_ref()?;
        if let Some(mut buf) = self
            .region_free
            .get_mut(class_index(cap))
            .and_then(Vec::pop)
        {
            self.region_free_bytes -= cap;
            // The capacity is the class, at least `len`: this cannot fail.
            let _ = buf.set_len(len);
            return Some(buf);
        }
        if let Some(buf) = arena.carve(cap, len) {
            return Some(buf);
        }
        if self.region_free_bytes == 0 {
            return None;
        }
        self.region_free.clear(); // dropping the blocks frees them in the region
        self.region_free_bytes = 0;
        arena.carve(cap, len)
    }

    /// A block of the spill arena, for a request the region had no room for. Only a pool whose
    /// region is huge-page memory (2 MiB or more) has one: it is made on the first miss, of
    /// the region's size, and is not registered, so its buffers skip no pinning, but a 128 KiB
    /// buffer in it is still one physical segment where a heap buffer is 32 (docs/engine.md).
    /// Its blocks are not kept by `put`: dropping one gives it back to the spill arena.
    fn spill_block(&mut self, cap: usize, len: usize) -> Option<AlignedBuf> {
        let region_len = self.region()?.len();
        if region_len < crate::buf::HUGE_PAGE || cap > region_len {
            return None;
        }
        self.spill
            .get_or_insert_with(|| Arena::new(region_len))
            .carve(cap, len)
    }

    /// Keeps a block of this pool's region for reuse while the kept ones stay under a quarter
    /// of the region and `keep` per class; else drops it, which gives it back to its region
    /// (a block of another pool's region is never kept).
    fn keep_region_block(&mut self, buf: AlignedBuf) {
        let cap = buf.capacity();
        let Some(region) = self.region() else {
            return;
        };
        if buf.region_id() != Some(region.id()) {
            return;
        }
        let i = class_index(cap);
        if self.region_free_bytes + cap > region.len() / 4
            || self
                .region_free
                .get(i)
                .is_some_and(|v| v.len() >= self.options.keep)
        {
            return;
        }
        if self.region_free.len() <= i {
            self.region_free.resize_with(i + 1, Vec::new);
        }
        self.region_free_bytes += cap;
        self.region_free[i].push(buf);
    }
}

/// The size class holding `len` bytes.
fn class_size(len: usize) -> usize {
    len.max(MIN_CLASS).next_power_of_two()
}

fn class_index(class: usize) -> usize {
    (class / MIN_CLASS).trailing_zeros() as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_by_class_and_counted() {
        let mut b = BufPool::new(BufPoolOptions::aligned(4096));
        let x = b.get(5000);
        assert_eq!(x.len(), 5000);
        assert_eq!(x.as_ptr() as usize % 4096, 0);
        assert_eq!(b.held(), 8192);
        let p = x.as_ptr();
        b.put(x);
        assert_eq!(b.held(), 0);
        assert_eq!(b.free_bytes(), 8192);
        // Another class does not take it.
        let small = b.get(100);
        assert_ne!(small.as_ptr(), p);
        assert_eq!(small.capacity(), 4096);
        let y = b.get(8000);
        assert_eq!(y.as_ptr(), p);
        assert_eq!(y.len(), 8000);
    }

    #[test]
    fn the_limits_hold() {
        let mut b = BufPool::new(BufPoolOptions {
            align: 512,
            keep: 2,
            keep_bytes: 1 << 20,
            region: 0,
        });
        let bufs: Vec<_> = (0..4).map(|_| b.get(4096)).collect();
        bufs.into_iter().for_each(|x| b.put(x));
        assert_eq!(b.free_bytes(), 8192, "two kept");
        let big = b.get(2 << 20);
        b.put(big);
        assert_eq!(b.free_bytes(), 8192, "over keep_bytes: freed");
        // A buffer that is not a size class is freed, not kept.
        let mut c = BufPool::new(BufPoolOptions::aligned(512));
        c.put(AlignedBuf::new(5000, 1024));
        assert_eq!(c.free_bytes(), 0);
        c.put(AlignedBuf::new(8192, 1024));
        assert_eq!(c.free_bytes(), 8192);
    }

    #[test]
    fn a_region_serves_first_and_the_heap_takes_the_overflow() {
        let mut b = BufPool::new(BufPoolOptions::aligned(512).with_region(64 << 10));
        let region = b.region().unwrap().clone();
        assert_eq!(region.len(), 64 << 10);
        let big = b.get(32 << 10);
        let big_at = big.as_ptr();
        let small = b.get(5000);
        assert_eq!(big.region_id(), Some(region.id()));
        assert_eq!(small.region_id(), Some(region.id()));
        assert_eq!(small.capacity(), 8192);
        assert!(region.contains(big.as_ptr() as usize, big.capacity()));
        assert!(region.contains(small.as_ptr() as usize, small.capacity()));
        // 24 KiB of the region is left: a 32 KiB request goes to the heap.
        let heap = b.get(32 << 10);
        assert_eq!(heap.region_id(), None);
        assert_eq!(b.held(), (64 << 10) + 8192);
        b.put(big);
        b.put(heap);
        assert_eq!(
            b.free_bytes(),
            32 << 10,
            "the heap buffer is kept, the region block is not"
        );
        // Half the region is more than the quarter a pool keeps: the block went back to the
        // region, and the next 32 KiB request is carved from it again.
        let again = b.get(32 << 10);
        assert_eq!(again.region_id(), Some(region.id()));
        assert_eq!(again.as_ptr(), big_at);
        // A buffer dropped without `put` goes back to the region.
        drop(small);
        assert_eq!(b.get(16 << 10).region_id(), Some(region.id()));
        assert_eq!(b.get(1 << 20).region_id(), None, "larger than the region");
    }

    #[test]
    fn a_huge_page_region_spills_into_a_second_arena_before_the_heap() {
        const REQ: usize = 256 << 10;
        let mut b = BufPool::new(BufPoolOptions::aligned(4096).with_region(4 << 20));
        let region = b.region().unwrap().clone();
        let first: Vec<_> = (0..16).map(|_| b.get(REQ)).collect();
        assert!(first.iter().all(|x| x.region_id() == Some(region.id())));
        // The region is full: the next 16 come from one spill arena of the region's size.
        let spilled: Vec<_> = (0..16).map(|_| b.get(REQ)).collect();
        let spill_id = spilled[0]
            .region_id()
            .expect("a spill block, not heap memory");
        assert_ne!(
            spill_id,
            region.id(),
            "the spill arena is not the registered region"
        );
        assert!(spilled.iter().all(|x| x.region_id() == Some(spill_id)));
        let spill_base = spilled.iter().map(|x| x.as_ptr() as usize).min().unwrap();
        assert_eq!(
            spill_base % crate::buf::HUGE_PAGE,
            0,
            "spill arena at {spill_base:#x}"
        );
        // Both full: the heap.
        let heap = b.get(REQ);
        assert_eq!(heap.region_id(), None);
        assert_eq!(b.held(), 33 * REQ);
        // A spill block given back is not kept; its room serves the next miss again.
        let at = spilled[3].as_ptr();
        let mut spilled = spilled;
        b.put(spilled.swap_remove(3));
        assert_eq!(b.free_bytes(), 0);
        let again = b.get(REQ);
        assert_eq!((again.region_id(), again.as_ptr()), (Some(spill_id), at));
    }

    #[test]
    fn kept_region_blocks_go_back_when_a_larger_class_needs_the_room() {
        let mut b = BufPool::new(BufPoolOptions::aligned(4096).with_region(64 << 10));
        let id = b.region().unwrap().id();
        // Four 4 KiB blocks kept (16 KiB: a quarter of the region), the rest carved away.
        let small: Vec<_> = (0..4).map(|_| b.get(4096)).collect();
        let rest = [b.get(16 << 10), b.get(32 << 10)];
        small.into_iter().for_each(|x| b.put(x));
        rest.into_iter().for_each(|x| b.put(x));
        // Only 16 KiB kept (the limit); a 64 KiB block needs every page: the kept blocks are
        // given back and the carve succeeds.
        let whole = b.get(64 << 10);
        assert_eq!(
            whole.region_id(),
            Some(id),
            "the kept blocks were given back"
        );
    }

    #[test]
    fn a_region_block_is_reused_by_its_own_pool_only() {
        let mut a = BufPool::new(BufPoolOptions::aligned(4096).with_region(64 << 10));
        let mut b = BufPool::new(BufPoolOptions::aligned(4096).with_region(64 << 10));
        let x = a.get(4096);
        let at = x.as_ptr();
        a.put(x);
        assert_eq!(a.get(4096).as_ptr(), at, "kept and taken again");
        let foreign = a.get(4096);
        b.put(foreign);
        let y = b.get(4096);
        assert_eq!(y.region_id(), b.region().map(Region::id), "b's own region");
    }
}
