//! The straight path: a read or a write the backing file takes as it is (aligned to its
//! direct-I/O alignment, which every request of a device whose logical block is that alignment
//! is; or any request on a buffered file) goes to the queue's ring as one `READ` or `WRITE`
//! entry on the tag's own buffer, the way the kernel's loop device hands a request's pages to
//! the file. It skips what a general vecio [`Queue`](vecio::Queue) request carries and a block
//! device does not need: its slot, the file's range lock (the block layer orders nothing
//! between requests in flight, so the loop device takes no lock either), the engine's op and
//! the completion list. Under emulation, where a request costs its instruction count, that is
//! what stood between vecio ublk and rublk's loop target at 4 KiB (docs/results.md).
//!
//! Anything else (a request the file cannot take as it is, FLUSH, DISCARD, WRITE_ZEROES) still
//! goes through the vecio queue, which bounces, widens and orders as it must.

use std::os::fd::AsRawFd;

use io_uring::{opcode, types};
use vecio::{AlignedBuf, DioAlign, File, RwFlags};

use crate::backend::engine::TARGET;

/// A `READ` or `WRITE` entry of `$len` bytes at `$ptr` and file offset `$offset` on `$fd` (a
/// `types::Fd` or a `types::Fixed`: io-uring's builders take either through a trait other
/// crates cannot name, hence a macro).
macro_rules! entry {
    ($fd:expr, $write:expr, $ptr:expr, $len:expr, $offset:expr, $flags:expr) => {
        if $write {
            opcode::Write::new($fd, $ptr, $len)
                .offset($offset)
                .rw_flags($flags)
                .build()
        } else {
            opcode::Read::new($fd, $ptr, $len)
                .offset($offset)
                .rw_flags($flags)
                .build()
        }
    };
}

/// Marks a straight op's user data (beside libublk's target bit and the tag in the low 16 bits).
pub(crate) const STRAIGHT: u64 = 1 << 60;

/// A straight request in flight: what it asked and how far it got.
#[derive(Clone, Copy, Debug)]
struct Pending {
    write: bool,
    fua: bool,
    offset: u64,
    len: u32,
    /// Bytes moved so far (a short transfer is continued from here).
    done: u32,
}

/// One queue thread's straight path to the backing file.
pub(crate) struct Straight {
    fd: i32,
    fixed_slot: Option<u32>,
    /// `None` for a buffered file, which takes any request as it is.
    align: Option<DioAlign>,
    /// Each tag's request in flight.
    pending: Vec<Option<Pending>>,
}

impl Straight {
    /// The straight path to `file` for a queue of `depth` tags; `fixed_slot` is the file's
    /// fixed-file slot in the ring, when it has one.
    pub(crate) fn new(file: &File, fixed_slot: Option<u32>, depth: usize) -> Self {
        Straight {
            fd: file.as_raw_fd(),
            fixed_slot,
            align: file.is_direct().then(|| file.dio_align()),
            pending: vec![None; depth],
        }
    }

    /// True when a transfer of `len` bytes at `offset` goes straight.
    pub(crate) fn takes(&self, offset: u64, len: u32) -> bool {
        self.align
            .is_none_or(|a| a.allows(offset, len as u64) && a.mem as usize <= 4096)
    }

    /// Starts `tag`'s read or write of `len` bytes at `offset` on `buf` (its length is set to
    /// `len`); `buf` must stay untouched until [`Straight::finish`] returns a result for `tag`.
    /// Returns `-errno` when the request cannot be queued.
    pub(crate) fn start(
        &mut self,
        tag: u16,
        write: bool,
        fua: bool,
        offset: u64,
        len: u32,
        buf: &mut AlignedBuf,
    ) -> Result<(), i32> {
        if !buf.set_len(len as usize) {
            return Err(-libc::EINVAL);
        }
        let p = Pending {
            write,
            fua,
            offset,
            len,
            done: 0,
        };
        self.pending[tag as usize] = Some(p);
        self.push(tag, p, buf)
    }

    /// The completion of `tag`'s straight op with `result`: `Some(result for the commit)` when
    /// the request is over, `None` when its rest was queued again (a short transfer). A read
    /// that met the end of the file is zero-filled to its full length, as the kernel's loop
    /// device does; a write that moved nothing fails with EIO.
    pub(crate) fn finish(&mut self, tag: u16, result: i32, buf: &mut AlignedBuf) -> Option<i32> {
        let slot = &mut self.pending[tag as usize];
        let mut p = slot.take()?;
        if result == -libc::EAGAIN || result == -libc::EINTR {
            *slot = Some(p);
            return self.again(tag, p, buf);
        }
        if result < 0 {
            return Some(result);
        }
        p.done += result as u32;
        if p.done >= p.len {
            return Some(p.len as i32);
        }
        if result > 0 && self.takes(p.offset + p.done as u64, p.len - p.done) {
            self.pending[tag as usize] = Some(p);
            return self.again(tag, p, buf);
        }
        // Nothing more to ask for: the end of the file (nothing moved, or the rest no longer
        // aligned for direct I/O because the file ended mid-block).
        if p.write {
            Some(-libc::EIO)
        } else {
            buf[p.done as usize..].fill(0);
            Some(p.len as i32)
        }
    }

    /// Queues `p`'s rest again; `Some(-errno)` when it cannot be.
    fn again(&mut self, tag: u16, p: Pending, buf: &mut AlignedBuf) -> Option<i32> {
        match self.push(tag, p, buf) {
            Ok(()) => None,
            Err(e) => {
                self.pending[tag as usize] = None;
                Some(e)
            }
        }
    }

    /// Puts `p`'s rest into the ring's submission queue (the queue loop submits it).
    fn push(&self, tag: u16, p: Pending, buf: &mut AlignedBuf) -> Result<(), i32> {
        let at = p.done as usize;
        // SAFETY: `at` <= `p.len` == `buf.len()`, so the pointer stays inside the buffer.
        let ptr = unsafe { buf.as_mut_ptr().add(at) };
        let len = p.len - p.done;
        let offset = p.offset + p.done as u64;
        let flags = if p.fua && p.write {
            RwFlags::DSYNC.to_kernel()
        } else {
            0
        };
        let sqe = match self.fixed_slot {
            Some(slot) => entry!(types::Fixed(slot), p.write, ptr, len, offset, flags),
            None => entry!(types::Fd(self.fd), p.write, ptr, len, offset, flags),
        }
        .user_data(tag as u64 | STRAIGHT | TARGET);
        libublk::io::with_task_io_ring_mut(|ring| loop {
            // SAFETY: the entry points into the tag's buffer, which the queue thread keeps in
            // place and untouched until this op's completion has been through `finish`.
            if unsafe { ring.submission().push(&sqe) }.is_ok() {
                return Ok(());
            }
            // Full: hand the kernel what is queued (no wait) and try again.
            ring.submit()
                .map_err(|e| -e.raw_os_error().unwrap_or(libc::EIO))?;
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use vecio::Direct;

    fn straight(direct: Direct) -> (Straight, tempfile::NamedTempFile) {
        let tmp = tempfile::NamedTempFile::new_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        tmp.as_file().set_len(1 << 20).unwrap();
        let file = File::options()
            .read(true)
            .write(true)
            .direct(direct)
            .open(tmp.path())
            .unwrap();
        (Straight::new(&file, None, 4), tmp)
    }

    /// A request in flight on tag 1, as `start` records it (without a ring to push into).
    fn pending(s: &mut Straight, write: bool, len: u32) -> AlignedBuf {
        let mut buf = AlignedBuf::page_aligned(8192);
        assert!(buf.set_len(len as usize));
        buf.fill(0xaa);
        s.pending[1] = Some(Pending {
            write,
            fua: false,
            offset: 0,
            len,
            done: 0,
        });
        buf
    }

    #[test]
    fn a_buffered_file_takes_anything_a_direct_one_only_what_is_aligned() {
        let (buffered, _t) = straight(Direct::Off);
        assert!(buffered.takes(1, 3));
        let (direct, _t) = straight(Direct::On);
        let a = direct.align.expect("a direct file has an alignment");
        assert!(direct.takes(a.offset as u64, a.offset));
        assert!(!direct.takes(1, a.offset));
        assert!(!direct.takes(0, a.offset + 1));
    }

    #[test]
    fn whole_transfers_and_errors_end_the_request() {
        let (mut s, _t) = straight(Direct::Off);
        let mut buf = pending(&mut s, false, 4096);
        assert_eq!(s.finish(1, 4096, &mut buf), Some(4096));
        assert!(s.pending[1].is_none());
        let mut buf = pending(&mut s, true, 4096);
        assert_eq!(s.finish(1, -libc::EIO, &mut buf), Some(-libc::EIO));
        assert!(s.pending[1].is_none());
        // A completion for a tag with nothing in flight is ignored.
        assert_eq!(s.finish(2, 4096, &mut buf), None);
    }

    #[test]
    fn a_read_at_the_end_of_the_file_is_zero_filled_a_write_that_moved_nothing_fails() {
        let (mut s, _t) = straight(Direct::Off);
        let mut buf = pending(&mut s, false, 4096);
        assert_eq!(s.finish(1, 0, &mut buf), Some(4096));
        assert!(
            buf.iter().all(|&b| b == 0),
            "the read's bytes past the end are zeros"
        );
        let mut buf = pending(&mut s, true, 4096);
        assert_eq!(s.finish(1, 0, &mut buf), Some(-libc::EIO));
    }

    #[test]
    fn a_direct_read_cut_short_mid_block_is_zero_filled_from_there() {
        let (mut s, _t) = straight(Direct::On);
        let mut buf = pending(&mut s, false, 8192);
        // 100 bytes: the rest starts off the alignment, so it cannot be asked for as it is.
        assert_eq!(s.finish(1, 100, &mut buf), Some(8192));
        assert!(buf[..100].iter().all(|&b| b == 0xaa));
        assert!(buf[100..].iter().all(|&b| b == 0));
    }
}
