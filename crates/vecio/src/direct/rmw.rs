//! The read-modify-write of a direct write its file's alignment refuses, as a state machine:
//! its aligned window is held (see `span.rs`), the partial edge blocks that hold data are read
//! (with direct I/O), the caller's bytes are copied in, the whole window is written (a short
//! write resumed), and a window that grew the file past the request's end is cut back.
//! `Batch` drives it to completion on one thread; `Queue` one completion at a time.

use crate::{AlignedBuf, DioAlign, Dir, File};

/// One op of a read-modify-write, for its driver to hand to the engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct RmwOp {
    /// Which op: 1 the head edge, 2 the tail edge, 3 the window write (tag bits for a queue).
    pub(crate) sub: u64,
    /// File offset.
    pub(crate) offset: u64,
    /// Offset in the window buffer.
    pub(crate) at: usize,
    /// Bytes.
    pub(crate) len: usize,
    /// Edge reads read, the window write writes.
    pub(crate) dir: Dir,
}

/// What follows a window write's completion.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WriteNext {
    /// Short: write the rest ([`Rmw::write_op`] again).
    Again,
    /// Finished: `user` of the caller's bytes are in the file; `stop` is the errno that ended it
    /// short, if one did.
    Done { user: usize, stop: Option<i32> },
}

/// A read-modify-write in progress.
pub(crate) struct Rmw {
    start: u64,
    window: AlignedBuf,
    /// Offset of the caller's bytes in the window, and their length.
    head: usize,
    len: usize,
    /// The file's size when the window was held.
    size: u64,
    block: usize,
    head_edge: bool,
    tail_edge: bool,
    edges_left: u8,
    edge_error: Option<i32>,
    written: usize,
}

impl Rmw {
    /// The read-modify-write of `len` bytes at `offset` in a file of `size` bytes (learned with
    /// its window held). `Err(EFBIG)` when the window would pass the largest file offset.
    pub(crate) fn new(align: DioAlign, offset: u64, len: usize, size: u64) -> Result<Rmw, i32> {
        let end_req = offset + len as u64;
        let w = align.window(offset, len as u64);
        if !w.covers(offset, len as u64) {
            return Err(libc::EFBIG);
        }
        let block = align.block();
        let head_edge = offset != w.start && w.start < size;
        let tail_block = w.end - block;
        let tail_edge =
            end_req != w.end && tail_block < size && !(tail_block == w.start && head_edge);
        Ok(Rmw {
            start: w.start,
            window: AlignedBuf::new(w.len() as usize, align.mem as usize),
            head: (offset - w.start) as usize,
            len,
            size,
            block: block as usize,
            head_edge,
            tail_edge,
            edges_left: head_edge as u8 + tail_edge as u8,
            edge_error: None,
            written: 0,
        })
    }

    /// The edge reads to issue first (none, one or two); when there are none, fill the window
    /// and write at once.
    pub(crate) fn edge_ops(&self) -> impl Iterator<Item = RmwOp> + '_ {
        let head = self.head_edge.then_some(RmwOp {
            sub: 1,
            offset: self.start,
            at: 0,
            len: self.block,
            dir: Dir::Dest,
        });
        let tail_at = self.window.len() - self.block;
        let tail = self.tail_edge.then_some(RmwOp {
            sub: 2,
            offset: self.start + tail_at as u64,
            at: tail_at,
            len: self.block,
            dir: Dir::Dest,
        });
        head.into_iter().chain(tail)
    }

    /// An edge read completed with `result` (bytes or `-errno`). `None` while another is
    /// outstanding; then `Ok` (fill and write) or the first edge's error.
    pub(crate) fn on_edge(&mut self, result: i64) -> Option<Result<(), i32>> {
        self.edges_left = self.edges_left.saturating_sub(1);
        if result < 0 && self.edge_error.is_none() {
            self.edge_error = Some(-result as i32);
        }
        if self.edges_left > 0 {
            return None;
        }
        Some(self.edge_error.map_or(Ok(()), Err))
    }

    /// The caller's place in the window, to copy its bytes into.
    pub(crate) fn caller_bytes(&mut self) -> &mut [u8] {
        &mut self.window[self.head..self.head + self.len]
    }

    /// The window write (of what is not written yet).
    pub(crate) fn write_op(&self) -> RmwOp {
        RmwOp {
            sub: 3,
            offset: self.start + self.written as u64,
            at: self.written,
            len: self.window.len() - self.written,
            dir: Dir::Source,
        }
    }

    /// An iovec over `op`'s part of the window.
    pub(crate) fn iovec(&mut self, op: &RmwOp) -> libc::iovec {
        let part = &mut self.window[op.at..op.at + op.len];
        libc::iovec {
            iov_base: part.as_mut_ptr().cast(),
            iov_len: part.len(),
        }
    }

    /// The window write completed with `result` (bytes or `-errno`). When it is finished, a
    /// window that grew `file` past the request's end is cut back (the caller still holds the
    /// blocks from there on).
    pub(crate) fn on_write(&mut self, file: &File, result: i64) -> WriteNext {
        let mut stop = match result {
            r if r < 0 => Some(-r as i32),
            0 => Some(libc::EIO),
            r => {
                self.written += r as usize;
                if self.written < self.window.len() {
                    return WriteNext::Again;
                }
                None
            }
        };
        let user = self.written.saturating_sub(self.head).min(self.len);
        let new_end = self.start + self.written as u64;
        let req_end = self.start + (self.head + user) as u64;
        if new_end > self.size && new_end > req_end {
            if let Err(e) = file.set_len_unlocked(self.size.max(req_end)) {
                stop = stop.or(e.raw_os_error());
            }
        }
        WriteNext::Done { user, stop }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::file::AlignSource;

    fn a512() -> DioAlign {
        DioAlign {
            mem: 512,
            offset: 512,
            source: AlignSource::Statx,
        }
    }

    #[test]
    fn edges_are_read_only_where_the_file_has_data() {
        // Inside the file, both edges.
        let r = Rmw::new(a512(), 100, 1000, 4096).unwrap();
        let ops: Vec<_> = r.edge_ops().collect();
        assert_eq!(ops.len(), 2);
        assert_eq!((ops[0].offset, ops[1].offset), (0, 1024));
        // One block: one edge read serves both ends.
        assert_eq!(
            Rmw::new(a512(), 100, 10, 4096).unwrap().edge_ops().count(),
            1
        );
        // Past the end of the file: nothing to read.
        assert_eq!(
            Rmw::new(a512(), 5000, 10, 4096).unwrap().edge_ops().count(),
            0
        );
        // Aligned offset and length (unaligned memory): no edge.
        assert_eq!(
            Rmw::new(a512(), 512, 1024, 4096)
                .unwrap()
                .edge_ops()
                .count(),
            0
        );
        assert_eq!(
            Rmw::new(a512(), i64::MAX as u64 - 1, 10, 0).err(),
            Some(libc::EFBIG)
        );
    }

    #[test]
    fn the_first_edge_error_wins_once_both_are_in() {
        let mut r = Rmw::new(a512(), 100, 1000, 4096).unwrap();
        assert_eq!(r.on_edge(-(libc::EIO as i64)), None);
        assert_eq!(r.on_edge(512), Some(Err(libc::EIO)));
    }

    #[test]
    fn a_short_window_write_resumes_and_reports_the_callers_bytes() {
        let dir = tempfile::tempdir_in(env!("CARGO_MANIFEST_DIR")).unwrap();
        let file = File::options()
            .read(true)
            .write(true)
            .create(true)
            .direct(crate::Direct::Off)
            .open(dir.path().join("f"))
            .unwrap();
        let mut r = Rmw::new(a512(), 100, 1000, 4096).unwrap();
        assert_eq!(r.write_op().len, 1536);
        assert_eq!(r.on_write(&file, 600), WriteNext::Again);
        assert_eq!(r.write_op().offset, 600);
        assert_eq!(
            r.on_write(&file, -(libc::ENOSPC as i64)),
            WriteNext::Done {
                user: 500,
                stop: Some(libc::ENOSPC)
            }
        );
    }
}
