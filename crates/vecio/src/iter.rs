//! [`IoIter`]: an iterator over the buffers of one request (documented on the type).

use std::io::{IoSlice, IoSliceMut};
use std::marker::PhantomData;

use libc::iovec;

use crate::error::Invalid;

/// Which way data flows through an iterator's buffers.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub enum Dir {
    /// The buffers are the source of the data: a write (the kernel's `ITER_SOURCE`).
    Source,
    /// The buffers receive the data: a read (the kernel's `ITER_DEST`).
    Dest,
}

/// The kind of buffer list behind an [`IoIter`].
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) enum IterKind {
    /// One buffer.
    Ubuf,
    /// The caller's array of slices.
    Iovec,
    /// Slices of a registrable region.
    Pages,
}

#[derive(Copy, Clone)]
enum Repr<'a> {
    Ubuf(iovec),
    Iovec(&'a [iovec]),
    Pages { segs: &'a [iovec], pool: u64 },
}

/// An iterator over the buffers of one request.
///
/// `IoIter`: one type over the buffers of a request, after the kernel's `struct iov_iter`.
///
/// Three kinds share one interface:
/// - one buffer ([`read_into`](Self::read_into), [`write_from`](Self::write_from)): every
///   operation is a few integer updates; no array is walked (the kernel's `ITER_UBUF`);
/// - the caller's `IoSlice`/`IoSliceMut` array, used in place ([`readv_into`](Self::readv_into),
///   [`writev_from`](Self::writev_from));
/// - slices of a registrable [`Region`](crate::Region) (a [`BufPool`](crate::BufPool)'s buffers),
///   which io_uring uses as registered (fixed) buffers ([`pages_into`](Self::pages_into),
///   [`pages_from`](Self::pages_from)).
///
/// The iterator keeps a window over the buffers: `advance` moves its start, `truncate` its end
/// (the `iov_shorten` semantics: whole trailing segments drop out, the last one is cut), and
/// `revert` moves the start back. The caller's array is never modified.
///
/// ```
/// use std::io::IoSliceMut;
/// use vecio::{Dir, IoIter};
/// let (mut a, mut b) = ([0u8; 10], [0u8; 20]);
/// let mut segs = [IoSliceMut::new(&mut a), IoSliceMut::new(&mut b)];
/// let mut it = IoIter::readv_into(&mut segs);
/// assert_eq!((it.len(), it.nr_segs(), it.dir()), (30, 2, Dir::Dest));
/// it.advance(12); // a short transfer: 12 bytes done
/// assert_eq!((it.len(), it.consumed()), (18, 12));
/// ```
pub struct IoIter<'a> {
    repr: Repr<'a>,
    dir: Dir,
    /// First segment with bytes left in the window (always 0 for `Ubuf`).
    idx: usize,
    /// Bytes of `segs[idx]` (or of the single buffer) before the window.
    off: usize,
    /// Bytes before the window, in all segments.
    consumed: usize,
    /// Bytes in the window.
    count: usize,
    /// Bytes of all segments together.
    total: usize,
    _buffers: PhantomData<&'a mut [u8]>,
}

// SAFETY: an IoIter stands for a `&'a mut [u8]` (Dest) or `&'a [u8]` (Source) list; both are
// Send, and the raw pointers inside are only a representation of those borrows.
unsafe impl Send for IoIter<'_> {}

fn slice_to_iovecs<T>(bufs: &[T]) -> &[iovec] {
    const {
        assert!(std::mem::size_of::<T>() == std::mem::size_of::<iovec>());
        assert!(std::mem::align_of::<T>() == std::mem::align_of::<iovec>());
    }
    // SAFETY: std documents IoSlice and IoSliceMut as ABI-compatible with `struct iovec` on
    // Unix (checked in size and alignment above); the lifetime is carried over unchanged.
    unsafe { std::slice::from_raw_parts(bufs.as_ptr().cast::<iovec>(), bufs.len()) }
}

impl<'a> IoIter<'a> {
    fn from_repr(repr: Repr<'a>, dir: Dir) -> Self {
        let total = match repr {
            Repr::Ubuf(v) => v.iov_len,
            Repr::Iovec(segs) | Repr::Pages { segs, .. } => segs.iter().map(|s| s.iov_len).sum(),
        };
        IoIter {
            repr,
            dir,
            idx: 0,
            off: 0,
            consumed: 0,
            count: total,
            total,
            _buffers: PhantomData,
        }
    }

    /// One buffer to read into (`ITER_UBUF`, destination).
    #[inline]
    pub fn read_into(buf: &'a mut [u8]) -> Self {
        let v = iovec {
            iov_base: buf.as_mut_ptr().cast(),
            iov_len: buf.len(),
        };
        Self::from_repr(Repr::Ubuf(v), Dir::Dest)
    }

    /// One buffer to write from (`ITER_UBUF`, source).
    #[inline]
    pub fn write_from(buf: &'a [u8]) -> Self {
        let v = iovec {
            iov_base: buf.as_ptr() as *mut _,
            iov_len: buf.len(),
        };
        Self::from_repr(Repr::Ubuf(v), Dir::Source)
    }

    /// The caller's slices to read into (`ITER_IOVEC`, destination).
    pub fn readv_into(bufs: &'a mut [IoSliceMut<'_>]) -> Self {
        Self::from_repr(Repr::Iovec(slice_to_iovecs(bufs)), Dir::Dest)
    }

    /// The caller's slices to write from (`ITER_IOVEC`, source).
    pub fn writev_from(bufs: &'a [IoSlice<'_>]) -> Self {
        Self::from_repr(Repr::Iovec(slice_to_iovecs(bufs)), Dir::Source)
    }

    /// Slices of a registrable [`Region`](crate::Region) (a [`BufPool`](crate::BufPool)'s) to
    /// read into. Fails with [`Invalid::Direction`] if a slice lies outside the region.
    pub fn pages_into(
        pool: &impl AsRef<crate::Region>,
        bufs: &'a mut [IoSliceMut<'_>],
    ) -> Result<Self, Invalid> {
        let segs = slice_to_iovecs(bufs);
        Self::pages(pool.as_ref(), segs, Dir::Dest)
    }

    /// Slices of a registrable region to write from. Fails with [`Invalid::Direction`] if a
    /// slice lies outside the region.
    pub fn pages_from(
        pool: &impl AsRef<crate::Region>,
        bufs: &'a [IoSlice<'_>],
    ) -> Result<Self, Invalid> {
        Self::pages(pool.as_ref(), slice_to_iovecs(bufs), Dir::Source)
    }

    fn pages(region: &crate::Region, segs: &'a [iovec], dir: Dir) -> Result<Self, Invalid> {
        if segs
            .iter()
            .all(|s| region.contains(s.iov_base as usize, s.iov_len))
        {
            Ok(Self::from_repr(
                Repr::Pages {
                    segs,
                    pool: region.id(),
                },
                dir,
            ))
        } else {
            Err(Invalid::Direction)
        }
    }

    /// Which way data flows.
    #[inline]
    pub fn dir(&self) -> Dir {
        self.dir
    }

    /// The kind of buffer list.
    #[inline]
    pub(crate) fn kind(&self) -> IterKind {
        match self.repr {
            Repr::Ubuf(_) => IterKind::Ubuf,
            Repr::Iovec(_) => IterKind::Iovec,
            Repr::Pages { .. } => IterKind::Pages,
        }
    }

    /// The id of the page pool behind a `Pages` iterator.
    #[inline]
    pub fn pool_id(&self) -> Option<u64> {
        match self.repr {
            Repr::Pages { pool, .. } => Some(pool),
            _ => None,
        }
    }

    /// Bytes left in the window (`iov_iter_count`).
    #[inline]
    pub fn len(&self) -> usize {
        self.count
    }

    /// True when no bytes are left.
    #[inline]
    pub fn is_empty(&self) -> bool {
        self.count == 0
    }

    /// Bytes already consumed by `advance` (what `revert` can give back).
    #[inline]
    pub fn consumed(&self) -> usize {
        self.consumed
    }

    /// Number of segments of the underlying list (1 for `Ubuf`).
    #[inline]
    pub fn nr_segs(&self) -> usize {
        match self.repr {
            Repr::Ubuf(_) => 1,
            Repr::Iovec(s) | Repr::Pages { segs: s, .. } => s.len(),
        }
    }

    /// Moves the start of the window forward by `n` bytes (`iov_iter_advance`); `n` past the
    /// end stops at the end.
    pub fn advance(&mut self, n: usize) {
        let mut n = n.min(self.count);
        self.count -= n;
        self.consumed += n;
        match self.repr {
            Repr::Ubuf(_) => self.off += n,
            Repr::Iovec(segs) | Repr::Pages { segs, .. } => {
                while n > 0 {
                    let rest = segs[self.idx].iov_len - self.off;
                    if n < rest {
                        self.off += n;
                        n = 0;
                    } else {
                        n -= rest;
                        self.idx += 1;
                        self.off = 0;
                    }
                }
            }
        }
    }

    /// Moves the start of the window back by `n` bytes (`iov_iter_revert`); at most what was
    /// consumed.
    pub fn revert(&mut self, n: usize) {
        let mut n = n.min(self.consumed);
        self.count += n;
        self.consumed -= n;
        match self.repr {
            Repr::Ubuf(_) => self.off -= n,
            Repr::Iovec(segs) | Repr::Pages { segs, .. } => {
                while n > 0 {
                    if self.off >= n {
                        self.off -= n;
                        n = 0;
                    } else {
                        n -= self.off;
                        self.idx -= 1;
                        self.off = segs[self.idx].iov_len;
                    }
                }
            }
        }
    }

    /// Shortens the window to at most `n` bytes (`iov_shorten`/`iov_iter_truncate`): trailing
    /// segments drop out whole and the last one kept is cut.
    #[inline]
    pub fn truncate(&mut self, n: usize) {
        if n < self.count {
            self.count = n;
        }
    }

    /// Re-extends a truncated window as far as the buffers reach (`iov_iter_reexpand`).
    #[inline]
    pub fn reexpand(&mut self) {
        self.count = self.total - self.consumed;
    }

    pub(crate) fn dup(&self) -> IoIter<'a> {
        IoIter {
            repr: self.repr,
            dir: self.dir,
            idx: self.idx,
            off: self.off,
            consumed: self.consumed,
            count: self.count,
            total: self.total,
            _buffers: PhantomData,
        }
    }

    /// Splits the window at `n` bytes into a front and a back iterator over disjoint bytes
    /// (used to pack a request under a size limit). `n` past the end gives an empty back.
    pub fn split_at(self, n: usize) -> (IoIter<'a>, IoIter<'a>) {
        let mut front = self.dup();
        front.truncate(n);
        let mut back = self;
        back.advance(n);
        (front, back)
    }

    /// Calls `f(base, len)` for each non-empty segment of the window, in order.
    #[inline]
    pub(crate) fn for_each_segment(&self, mut f: impl FnMut(*mut u8, usize)) {
        match self.repr {
            Repr::Ubuf(v) => {
                if self.count > 0 {
                    // SAFETY: off + count never exceeds the buffer's length.
                    f(unsafe { v.iov_base.cast::<u8>().add(self.off) }, self.count)
                }
            }
            Repr::Iovec(segs) | Repr::Pages { segs, .. } => {
                let mut left = self.count;
                let mut off = self.off;
                for s in &segs[self.idx.min(segs.len())..] {
                    if left == 0 {
                        break;
                    }
                    let len = (s.iov_len - off).min(left);
                    if len > 0 {
                        // SAFETY: off is within the segment, len fits in what follows it.
                        f(unsafe { s.iov_base.cast::<u8>().add(off) }, len);
                    }
                    left -= len;
                    off = 0;
                }
            }
        }
    }

    /// OR of the address and length of every non-empty segment in the window
    /// (`iov_iter_alignment`): `alignment() & (a - 1) == 0` means everything is `a`-aligned.
    pub fn alignment(&self) -> usize {
        let mut res = 0usize;
        self.for_each_segment(|p, len| res |= p as usize | len);
        res
    }

    /// True when every non-empty segment's address is a multiple of `mem_align` and its length
    /// a multiple of `len_align` (both powers of two): what direct I/O asks of the buffers.
    pub fn is_aligned(&self, mem_align: usize, len_align: usize) -> bool {
        let mut ok = true;
        self.for_each_segment(|p, len| {
            ok &= (p as usize) & (mem_align - 1) == 0 && len & (len_align - 1) == 0
        });
        ok
    }

    /// The single buffer of the window when it is one contiguous buffer (`Ubuf`, or a list
    /// whose window lies in one segment).
    #[inline]
    pub(crate) fn single(&self) -> Option<(*mut u8, usize)> {
        match self.repr {
            Repr::Ubuf(v) => {
                // SAFETY: off + count never exceeds the buffer's length.
                Some((unsafe { v.iov_base.cast::<u8>().add(self.off) }, self.count))
            }
            Repr::Iovec(segs) | Repr::Pages { segs, .. } => {
                let s = segs.get(self.idx)?;
                if s.iov_len - self.off >= self.count {
                    // SAFETY: off is within the segment.
                    Some((unsafe { s.iov_base.cast::<u8>().add(self.off) }, self.count))
                } else {
                    None
                }
            }
        }
    }

    /// The window as an iovec array: the caller's array itself when the window covers it
    /// whole, else a trimmed copy in `scratch`.
    pub(crate) fn iovecs<'s>(&'s self, scratch: &'s mut Vec<iovec>) -> &'s [iovec] {
        if let Repr::Iovec(segs) | Repr::Pages { segs, .. } = self.repr {
            if self.off == 0 && self.count == self.total - self.consumed {
                return &segs[self.idx..];
            }
        }
        scratch.clear();
        self.for_each_segment(|p, len| {
            scratch.push(iovec {
                iov_base: p.cast(),
                iov_len: len,
            })
        });
        scratch
    }

    /// Copies bytes out of the window into `dst` and advances past them (`copy_from_iter`
    /// from the caller's view). Returns the number of bytes copied.
    pub fn copy_to_slice(&mut self, dst: &mut [u8]) -> usize {
        let mut done = 0;
        let want = dst.len().min(self.count);
        let mut probe = self.dup();
        probe.truncate(want);
        probe.for_each_segment(|p, len| {
            // SAFETY: p..p+len lies in a buffer this iterator borrows; dst is a distinct
            // &mut borrow, so the ranges cannot overlap.
            unsafe { std::ptr::copy_nonoverlapping(p, dst.as_mut_ptr().add(done), len) };
            done += len;
        });
        self.advance(done);
        done
    }

    /// Copies `src` into the window's buffers and advances past them (`copy_to_iter`).
    /// Only a destination iterator can be written to.
    pub fn copy_from_slice(&mut self, src: &[u8]) -> Result<usize, Invalid> {
        if self.dir != Dir::Dest {
            return Err(Invalid::Direction);
        }
        let mut done = 0;
        let want = src.len().min(self.count);
        let mut probe = self.dup();
        probe.truncate(want);
        probe.for_each_segment(|p, len| {
            // SAFETY: a Dest iterator borrows its buffers mutably; src is a shared borrow of
            // other memory, so the ranges cannot overlap.
            unsafe { std::ptr::copy_nonoverlapping(src.as_ptr().add(done), p, len) };
            done += len;
        });
        self.advance(done);
        Ok(done)
    }
}

impl std::fmt::Debug for IoIter<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IoIter")
            .field("kind", &self.kind())
            .field("dir", &self.dir)
            .field("nr_segs", &self.nr_segs())
            .field("consumed", &self.consumed)
            .field("len", &self.count)
            .finish()
    }
}

#[cfg(test)]
mod tests;
