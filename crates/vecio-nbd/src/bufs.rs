//! Request buffers of one connection: aligned for direct I/O, reused between requests (a
//! fresh 1 MiB allocation is zeroed and faulted in; a reused one is not), and counted, so the
//! connection can stop taking requests while too much memory is held.

use vecio::AlignedBuf;

/// Free buffers kept for reuse, at most.
const KEEP: usize = 32;
/// Bytes of free buffers kept for reuse, at most.
const KEEP_BYTES: usize = 64 << 20;

/// A connection's buffer pool.
pub(crate) struct Buffers {
    align: usize,
    free: Vec<AlignedBuf>,
    free_bytes: usize,
    /// Bytes of buffers handed out and not yet returned.
    held: usize,
}

impl Buffers {
    /// A pool of buffers aligned to `align`.
    pub(crate) fn new(align: usize) -> Self {
        Buffers {
            align,
            free: Vec::new(),
            free_bytes: 0,
            held: 0,
        }
    }

    /// Bytes handed out and not returned.
    pub(crate) fn held(&self) -> usize {
        self.held
    }

    /// A buffer of exactly `len` bytes (contents unspecified).
    pub(crate) fn get(&mut self, len: usize) -> AlignedBuf {
        let cap = len.max(4096).next_power_of_two();
        let mut buf = match self.free.iter().position(|b| b.capacity() == cap) {
            Some(i) => {
                let b = self.free.swap_remove(i);
                self.free_bytes -= b.capacity();
                b
            }
            None => AlignedBuf::new(cap, self.align),
        };
        // The capacity is at least `len`, so this cannot fail.
        let _ = buf.set_len(len);
        self.held += buf.capacity();
        buf
    }

    /// Returns a buffer from [`get`](Self::get).
    pub(crate) fn put(&mut self, buf: AlignedBuf) {
        self.held = self.held.saturating_sub(buf.capacity());
        if self.free.len() < KEEP && self.free_bytes + buf.capacity() <= KEEP_BYTES {
            self.free_bytes += buf.capacity();
            self.free.push(buf);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_reused_and_counted() {
        let mut b = Buffers::new(4096);
        let x = b.get(5000);
        assert_eq!(x.len(), 5000);
        assert_eq!(x.as_ptr() as usize % 4096, 0);
        assert_eq!(b.held(), 8192);
        let p = x.as_ptr();
        b.put(x);
        assert_eq!(b.held(), 0);
        let y = b.get(8000);
        assert_eq!(y.as_ptr(), p);
        assert_eq!(y.len(), 8000);
    }
}
