//! A `Batch` request's read-modify-write, run to completion on the calling thread: the
//! `direct/` state machine driven through the engine one step at a time (edge reads together,
//! then the window write, resumed when short).

use crate::direct::{hold, Rmw, RmwOp, Route, WriteNext};
use crate::engine::{Cqe, Engine, Op};
use crate::{Dir, RwFlags};

use super::Slot;

/// Writes what is left of `slot` by read-modify-write of its aligned window. Returns the
/// caller's bytes written and the errno that stopped it, if any. `Err` means the engine failed.
pub(super) fn run(
    engine: &mut dyn Engine,
    slot: &mut Slot<'_>,
) -> std::io::Result<(usize, Option<i32>)> {
    let file = slot.file;
    let len = slot.iter.len();
    let append = slot.flags.contains(RwFlags::APPEND);
    let _guard = match hold(file, Route::Rmw { append }, slot.offset, len) {
        Ok(guard) => guard,
        Err(errno) => return Ok((0, Some(errno))),
    };
    let size = match file.size() {
        Ok(size) => size,
        Err(e) => return Ok((0, Some(e.raw_os_error().unwrap_or(libc::EIO)))),
    };
    if append {
        // RWF_APPEND: the offset is the end of the file, held since the lock was taken.
        slot.offset = size;
    }
    let mut rmw = match Rmw::new(file.dio_align(), slot.offset, len, size) {
        Ok(rmw) => rmw,
        Err(errno) => return Ok((0, Some(errno))),
    };
    if let Some(errno) = read_edges(engine, slot, &mut rmw)? {
        return Ok((0, Some(errno)));
    }
    let copied = slot.iter.dup().copy_to_slice(rmw.caller_bytes());
    debug_assert_eq!(copied, len);
    loop {
        let op = rmw.write_op();
        let iov = rmw.iovec(&op);
        let result = run_one(engine, slot_op(slot, &op, &iov))?;
        if let WriteNext::Done { user, stop } = rmw.on_write(file, result) {
            return Ok((user, stop));
        }
    }
}

/// Reads the window's edge blocks in one submission; the first errno, if any.
fn read_edges(
    engine: &mut dyn Engine,
    slot: &Slot<'_>,
    rmw: &mut Rmw,
) -> std::io::Result<Option<i32>> {
    let ops: Vec<RmwOp> = rmw.edge_ops().collect();
    if ops.is_empty() {
        return Ok(None);
    }
    let iovs: Vec<libc::iovec> = ops.iter().map(|op| rmw.iovec(op)).collect();
    for (op, iov) in ops.iter().zip(&iovs) {
        // SAFETY: iovs and the window they point into outlive the wait below, which reaps
        // every op pushed here.
        unsafe { engine.push(slot_op(slot, op, iov))? };
    }
    let mut got = 0;
    let mut cqes: Vec<Cqe> = Vec::with_capacity(ops.len());
    while got < ops.len() {
        engine.submit_and_wait(ops.len() - got)?;
        cqes.clear();
        engine.reap(&mut cqes);
        for c in &cqes {
            got += 1;
            if let Some(Err(errno)) = rmw.on_edge(c.result) {
                return Ok(Some(errno));
            }
        }
    }
    Ok(None)
}

fn slot_op(slot: &Slot<'_>, op: &RmwOp, iov: &libc::iovec) -> Op {
    Op {
        fd: std::os::fd::AsRawFd::as_raw_fd(slot.file),
        file_id: slot.file.id(),
        offset: op.offset,
        iov,
        nr_segs: 1,
        len: iov.iov_len,
        dir: op.dir,
        flags: slot.flags - RwFlags::APPEND,
        pool: None,
        tag: op.sub,
        fast: std::ptr::null(),
        cmd: crate::engine::Cmd::Rw,
    }
}

fn run_one(engine: &mut dyn Engine, op: Op) -> std::io::Result<i64> {
    debug_assert_eq!(op.dir, Dir::Source);
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
