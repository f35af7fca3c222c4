//! Sparse reads: with structured replies, a read whose range holds holes is answered with
//! `NBD_REPLY_TYPE_OFFSET_HOLE` chunks for them, so zeroes the file does not store do not
//! cross the wire (nor, for a read that is all hole, the disk).
//!
//! The map comes from the same `SEEK_DATA`/`SEEK_HOLE` walk as `NBD_CMD_BLOCK_STATUS`, taken
//! once per request (two `lseek(2)` calls for a range that is all data), before the read is
//! queued: a write that completed before the read was sent is already in it. A file without
//! holes skips the walk (`holes.rs`).

use std::os::fd::AsFd;

use vecio::AlignedBuf;

use crate::export::Export;
use crate::ops;
use crate::proto::{self, AllocFlags, Extent, Framing, ReplyTo};
use crate::send::Outbox;
use vecio::BufPool;

/// How a read's range lies on the file.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Layout {
    /// All data (or the file cannot tell): one `OFFSET_DATA` chunk.
    Data,
    /// All hole: one `OFFSET_HOLE` chunk, no I/O.
    Hole,
    /// Both: the extents, in order, covering the range exactly.
    Mixed(Vec<Extent>),
}

fn is_hole(e: &Extent) -> bool {
    e.flags & AllocFlags::HOLE.bits() != 0
}

/// The layout of `len` bytes at `offset` (`len` > 0).
pub(crate) fn layout(export: &Export, offset: u64, len: u32) -> Layout {
    if !export.holes().worth_walking(export.file().as_fd()) {
        return Layout::Data;
    }
    let len = u64::from(len);
    let Ok(mut extents) = ops::block_status(export, offset, len, false) else {
        return Layout::Data;
    };
    let covered: u64 = extents.iter().map(|e| e.len).sum();
    if covered > len {
        return Layout::Data;
    }
    if covered < len {
        // The walk stopped early (extent limit): the rest is sent as data.
        extents.push(Extent {
            len: len - covered,
            flags: 0,
        });
    }
    match extents.as_slice() {
        [e] if is_hole(e) => Layout::Hole,
        all if all.iter().any(is_hole) => Layout::Mixed(extents),
        _ => Layout::Data,
    }
}

/// Queues the reply to a mixed read whose bytes are in `buf` (the read answers `to`): a hole
/// chunk per hole, a data chunk (copied out of `buf`) per data extent, then the final
/// `NBD_REPLY_TYPE_NONE`.
pub(crate) fn reply(
    tx: &mut Outbox,
    bufs: &mut BufPool,
    framing: Framing,
    to: ReplyTo,
    buf: AlignedBuf,
    extents: &[Extent],
) {
    let mut at = 0usize;
    for e in extents {
        let len = e.len as usize;
        let Some(bytes) = buf.get(at..at + len) else {
            break;
        };
        let off = to.offset + at as u64;
        // A read is at most 32 MiB: its extents' lengths fit 32 bits.
        let n = len as u32;
        if is_hole(e) {
            tx.push(&proto::offset_hole_chunk(framing, to, off, n, false), None);
        } else {
            let mut piece = bufs.get(len);
            piece.copy_from_slice(bytes);
            let head = proto::offset_data_header(framing, to, off, n, false);
            tx.push(&head, Some(piece));
        }
        at += len;
    }
    bufs.put(buf);
    tx.push(&proto::none_chunk(framing, to), None);
}
