//! [`BufPool`]: request buffers for a server, in power-of-two size classes, aligned for direct
//! I/O, reused between requests and counted.

use crate::AlignedBuf;

/// Smallest size class (one page).
const MIN_CLASS: usize = 4096;

/// Request buffers in power-of-two size classes (4 KiB and up), aligned for direct I/O.
///
/// A server takes a buffer per request with [`get`](Self::get) and gives it back with
/// [`put`](Self::put) when the reply is sent. Reusing buffers matters: a fresh 1 MiB allocation
/// is zeroed and faulted in on first touch, a reused one is not. The pool keeps at most
/// [`keep`](BufPoolOptions::keep) free buffers and [`keep_bytes`](BufPoolOptions::keep_bytes)
/// bytes of them, and counts the bytes handed out ([`held`](Self::held)), so a connection can
/// stop taking requests while too much memory is held.
///
/// Buffers are [`AlignedBuf`]s, so they go into a [`Queue`](crate::Queue) as
/// [`OwnedBuf::Aligned`](crate::OwnedBuf::Aligned) and come back with the completion.
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
    /// Free buffers by size class (index: log2(capacity / MIN_CLASS)).
    free: Vec<Vec<AlignedBuf>>,
    free_count: usize,
    free_bytes: usize,
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
}

impl BufPoolOptions {
    /// Buffers aligned to `align`, keeping up to 32 free buffers and 64 MiB of them.
    pub fn aligned(align: usize) -> Self {
        BufPoolOptions {
            align,
            keep: 32,
            keep_bytes: 64 << 20,
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
            free: Vec::new(),
            free_count: 0,
            free_bytes: 0,
            held: 0,
        }
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
}
