//! The aligned window around a request: the whole blocks of the file's direct-I/O offset
//! alignment that it touches.

use super::{DioAlign, MAX_OFFSET};

/// The aligned blocks around a request: `[start, end)`, both multiples of the file's offset
/// alignment ([`DioAlign::offset`]).
///
/// ```
/// use vecio::{file::AlignSource, DioAlign};
/// let a = DioAlign { mem: 512, offset: 4096, source: AlignSource::Statx };
/// let w = a.window(5000, 100);
/// assert_eq!((w.start, w.end), (4096, 8192));
/// assert!(w.covers(5000, 100));
/// assert_eq!(a.window(8192, 4096).len(), 4096); // aligned: the request itself
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Window {
    /// First byte of the first block.
    pub start: u64,
    /// End of the last block. Never past the largest block-aligned offset a file can have, so
    /// a request reaching beyond it is not covered ([`covers`](Self::covers)).
    pub end: u64,
}

impl Window {
    /// Bytes in the window.
    pub fn len(&self) -> u64 {
        self.end.saturating_sub(self.start)
    }

    /// True when the window holds no block (a request wholly past the largest offset).
    pub fn is_empty(&self) -> bool {
        self.end <= self.start
    }

    /// True when the window holds all of `len` bytes at `offset`.
    pub fn covers(&self, offset: u64, len: u64) -> bool {
        self.start <= offset && offset.saturating_add(len) <= self.end
    }
}

impl DioAlign {
    /// The aligned window around `len` bytes at `offset` (see [`Window`]).
    pub fn window(&self, offset: u64, len: u64) -> Window {
        Window {
            start: self.block_floor(offset),
            end: self
                .block_ceil(offset.saturating_add(len))
                .min(self.block_floor(MAX_OFFSET)),
        }
    }

    /// The offset alignment in bytes (at least 1).
    pub(crate) fn block(&self) -> u64 {
        (self.offset as u64).max(1)
    }

    /// `at` rounded down to a block.
    pub(crate) fn block_floor(&self, at: u64) -> u64 {
        at / self.block() * self.block()
    }

    /// `at` rounded up to a block (`u64::MAX` stays: "to the end").
    pub(crate) fn block_ceil(&self, at: u64) -> u64 {
        if at == u64::MAX {
            return u64::MAX;
        }
        at.div_ceil(self.block()).saturating_mul(self.block())
    }
}

#[cfg(test)]
mod tests {
    use crate::file::AlignSource;
    use crate::DioAlign;

    fn align(offset: u32) -> DioAlign {
        DioAlign {
            mem: 512,
            offset,
            source: AlignSource::Statx,
        }
    }

    #[test]
    fn a_window_is_the_blocks_a_request_touches() {
        let a = align(512);
        assert_eq!(a.window(0, 512), super::Window { start: 0, end: 512 });
        assert_eq!(a.window(1, 1), super::Window { start: 0, end: 512 });
        assert_eq!(
            a.window(511, 2),
            super::Window {
                start: 0,
                end: 1024
            }
        );
        assert!(a.window(511, 2).covers(511, 2));
    }

    #[test]
    fn a_window_stops_at_the_largest_offset() {
        let a = align(4096);
        let w = a.window(i64::MAX as u64 - 10, 100);
        assert!(w.end <= i64::MAX as u64);
        assert!(!w.covers(i64::MAX as u64 - 10, 100));
        assert!(a.window(i64::MAX as u64 + 1, 10).is_empty());
    }

    #[test]
    fn rounding_keeps_the_open_end() {
        let a = align(4096);
        assert_eq!(a.block_ceil(u64::MAX), u64::MAX);
        assert_eq!(a.block_ceil(4097), 8192);
        assert_eq!(a.block_floor(8191), 4096);
    }
}
