//! Direct I/O for requests that break the file's alignment, writes side: read-modify-write of
//! the edge blocks under an exclusive range lock, so overlapping in-flight writes cannot tear a
//! block. (Unaligned reads are widened into a bounce buffer by [`Batch`](crate::Batch) itself,
//! in the same submission as everything else.)
//!
//! The page cache never serves these bytes: edges are read with direct I/O too, so there is
//! nothing to flush or invalidate.

use crate::batch::Slot;
use crate::engine::{Cqe, Engine, Op};
use crate::request::{window_end, Progress, Step};
use crate::{AlignedBuf, Dir, RwFlags};

/// Writes what is left of `slot` by read-modify-write of its aligned window. Returns the
/// caller's bytes written and the errno that stopped it, if any. `Err` means the engine failed.
pub(crate) fn rmw_write(
    engine: &mut dyn Engine,
    slot: &mut Slot<'_>,
) -> std::io::Result<(usize, Option<i32>)> {
    let file = slot.file;
    let a = file.dio_align();
    let bs = a.offset as u64;
    let len = slot.iter.len();
    let size_now = || {
        file.size()
            .map_err(|e| e.raw_os_error().unwrap_or(libc::EIO))
    };

    let (_guard, size) = if slot.flags.contains(RwFlags::APPEND) {
        // RWF_APPEND: the offset is the end of file. Everything from the block holding the
        // end on is held exclusive (nothing before it: requests in flight inside the file do
        // not stop an append); if the file shrank below that block meanwhile, look again. The
        // write itself then goes at that offset, without the flag.
        loop {
            let before = match size_now() {
                Ok(s) => s / bs * bs,
                Err(errno) => return Ok((0, Some(errno))),
            };
            let Ok(guard) = file.locks.try_exclusive(before, u64::MAX) else {
                return Ok((0, Some(libc::EDEADLK)));
            };
            match size_now() {
                Ok(size) if size >= before => {
                    slot.offset = size;
                    break (guard, size);
                }
                Ok(_) => continue,
                Err(errno) => return Ok((0, Some(errno))),
            }
        }
    } else {
        let offset = slot.offset;
        let end = window_end(offset + len as u64, bs);
        let size = match size_now() {
            Ok(s) => s,
            Err(errno) => return Ok((0, Some(errno))),
        };
        // A window reaching past the end grows the file, then cuts it back: hold everything
        // from its start on, so no other write or read past the end lands in between.
        let lock_end = if end > size { u64::MAX } else { end };
        let Ok(guard) = file.locks.try_exclusive(offset / bs * bs, lock_end) else {
            // The range is held by this thread's own queued requests: waiting would never end.
            return Ok((0, Some(libc::EDEADLK)));
        };
        match size_now() {
            Ok(size) => (guard, size),
            Err(errno) => return Ok((0, Some(errno))),
        }
    };
    let offset = slot.offset;
    let end_req = offset + len as u64;
    let start = offset / bs * bs;
    let end = window_end(end_req, bs);
    if end < end_req {
        // The aligned window would pass the largest file offset.
        return Ok((0, Some(libc::EFBIG)));
    }

    let window = (end - start) as usize;
    let mut buf = AlignedBuf::new(window, a.mem as usize);
    let head = (offset - start) as usize;

    // Read the partial edge blocks that hold data (past the end they stay zero).
    let mut edges: Vec<(u64, usize)> = Vec::with_capacity(2);
    if offset != start && start < size {
        edges.push((start, 0));
    }
    let tail_block = end - bs;
    if end_req != end && tail_block < size && !(tail_block == start && offset != start) {
        edges.push((tail_block, (tail_block - start) as usize));
    }
    if let Some(errno) = run_ops(engine, slot, &mut buf, &edges, bs as usize, Dir::Dest)? {
        return Ok((0, Some(errno)));
    }

    let copied = slot.iter.dup().copy_to_slice(&mut buf[head..head + len]);
    debug_assert_eq!(copied, len);

    // Write the whole window, resuming short writes (the request core's rules).
    let mut at = Progress::new(start, Dir::Source);
    let stop = loop {
        let written = at.done;
        let iov = libc::iovec {
            // SAFETY: written < window, so the pointer stays inside buf.
            iov_base: unsafe { buf.as_mut_ptr().add(written) }.cast(),
            iov_len: window - written,
        };
        let op = slot_op(slot, at.offset, &iov, Dir::Source, 0);
        match at.account_result(run_one(engine, op)?, window - written) {
            Step::Resume => continue,
            Step::Done { error, .. } => break error,
            Step::Failed(errno) => break Some(errno),
        }
    };
    let (written, mut stop) = (at.done, stop);
    let user = written.saturating_sub(head).min(len);
    let new_end = start + written as u64;
    if new_end > size && new_end > offset + user as u64 {
        // The window grew the file past the request's end: cut it back.
        if let Err(e) = file.set_len_unlocked(size.max(offset + user as u64)) {
            stop = stop.or(e.raw_os_error());
        }
    }
    if user < len && stop.is_none() && written < window {
        stop = Some(libc::EIO);
    }
    Ok((user, stop))
}

fn slot_op(slot: &Slot<'_>, offset: u64, iov: &libc::iovec, dir: Dir, tag: u64) -> Op {
    Op {
        fd: std::os::fd::AsRawFd::as_raw_fd(slot.file),
        file_id: slot.file.id(),
        offset,
        iov,
        nr_segs: 1,
        len: iov.iov_len,
        dir,
        flags: slot.flags - RwFlags::APPEND,
        pool: None,
        tag,
        fast: std::ptr::null(),
        cmd: crate::engine::Cmd::Rw,
    }
}

/// Reads (or writes) each `(file offset, buffer offset)` block of `len` bytes in one submission.
/// Returns the first errno, if any.
fn run_ops(
    engine: &mut dyn Engine,
    slot: &Slot<'_>,
    buf: &mut AlignedBuf,
    blocks: &[(u64, usize)],
    len: usize,
    dir: Dir,
) -> std::io::Result<Option<i32>> {
    let iovs: Vec<libc::iovec> = blocks
        .iter()
        .map(|&(_, at)| libc::iovec {
            // SAFETY: every block lies inside buf (at + len <= window).
            iov_base: unsafe { buf.as_mut_ptr().add(at) }.cast(),
            iov_len: len,
        })
        .collect();
    for (i, (&(off, _), iov)) in blocks.iter().zip(&iovs).enumerate() {
        let op = slot_op(slot, off, iov, dir, i as u64);
        // SAFETY: iovs and buf outlive the wait below, which reaps every op pushed here.
        unsafe { engine.push(op)? };
    }
    let mut first_err = None;
    let mut got = 0;
    let mut cqes: Vec<Cqe> = Vec::with_capacity(blocks.len());
    while got < blocks.len() {
        engine.submit_and_wait(blocks.len() - got)?;
        cqes.clear();
        engine.reap(&mut cqes);
        for c in &cqes {
            got += 1;
            if c.result < 0 && first_err.is_none() {
                first_err = Some(-c.result as i32);
            }
        }
    }
    Ok(first_err)
}

fn run_one(engine: &mut dyn Engine, op: Op) -> std::io::Result<i64> {
    // SAFETY: the op's iovec and buffer belong to the caller's frame, which waits here until
    // the completion is reaped.
    unsafe { engine.push(op)? };
    let mut cqes = Vec::with_capacity(1);
    while cqes.is_empty() {
        engine.submit_and_wait(1)?;
        engine.reap(&mut cqes);
    }
    Ok(cqes[0].result)
}
