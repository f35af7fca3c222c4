//! An unaligned direct read: the aligned window around what is left of it is read into an
//! aligned buffer, and the caller's bytes are copied out of it.

use crate::{AlignedBuf, DioAlign};

/// The bounce buffer of an unaligned direct read.
pub(crate) struct Bounce {
    /// File offset of `buf`'s first byte.
    pub(crate) start: u64,
    /// The window's bytes, read with direct I/O.
    pub(crate) buf: AlignedBuf,
    /// Offset of the caller's first byte in `buf`.
    head: usize,
    /// The caller's bytes wanted.
    len: usize,
}

impl Bounce {
    /// The bounce of `len` bytes at `offset`; `None` when nothing a file can hold lies in
    /// reach (the read is at its end).
    pub(crate) fn plan(align: DioAlign, offset: u64, len: usize) -> Option<Bounce> {
        let w = align.window(offset, len as u64);
        if w.end <= offset {
            return None;
        }
        Some(Bounce {
            start: w.start,
            buf: AlignedBuf::new(w.len() as usize, align.mem as usize),
            head: (offset - w.start) as usize,
            len,
        })
    }

    /// The caller's bytes among the first `read` bytes of the window (fewer than asked at the
    /// end of the file).
    pub(crate) fn user_bytes(&self, read: usize) -> &[u8] {
        let got = read.saturating_sub(self.head).min(self.len);
        &self.buf[self.head..self.head + got]
    }
}

#[cfg(test)]
mod tests {
    use super::Bounce;
    use crate::file::AlignSource;
    use crate::DioAlign;

    #[test]
    fn the_caller_gets_only_its_bytes() {
        let a = DioAlign {
            mem: 512,
            offset: 512,
            source: AlignSource::Statx,
        };
        let mut b = Bounce::plan(a, 700, 100).unwrap();
        assert_eq!((b.start, b.buf.len()), (512, 512));
        for (i, x) in b.buf.iter_mut().enumerate() {
            *x = i as u8;
        }
        assert_eq!(b.user_bytes(512).len(), 100);
        assert_eq!(b.user_bytes(512)[0], 188);
        assert_eq!(b.user_bytes(200).len(), 12); // end of file inside the request
        assert!(b.user_bytes(100).is_empty()); // end of file before it
        assert!(Bounce::plan(a, i64::MAX as u64 - 1, 10).is_none());
    }
}
