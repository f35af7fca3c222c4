//! `READ` and `WRITE`: each request, whatever its size, is one vecio request submitted as one
//! batch on the worker's engine (its own io_uring by default). Cached reads of buffered files
//! are tried inline first with `RWF_NOWAIT` under the fast-read policy; only what would block
//! goes to the engine. Write payloads arrive page-aligned (see `crate::worker`), so a direct
//! backing file takes them without a copy.

use vecio::{Attempt, Batch, Engine, IoIter, RwFlags};

use crate::abi::{ReadIn, WriteIn, WriteOut};
use crate::error::{Errno, OpResult};
use crate::fs::Fs;
use crate::request::Body;

/// Serves a `READ` into `buf`; returns the bytes read (fewer than asked only at end of file).
pub fn read(
    fs: &Fs,
    engine: &mut dyn Engine,
    body: &mut Body<'_>,
    buf: &mut [u8],
) -> OpResult<usize> {
    read_arg(fs, engine, body.arg()?, buf)
}

/// Serves a `READ` whose `fuse_read_in` is `arg` into `buf`.
pub fn read_arg(fs: &Fs, engine: &mut dyn Engine, arg: ReadIn, buf: &mut [u8]) -> OpResult<usize> {
    let handle = fs.handles.file(arg.fh)?;
    let file = &handle.as_file()?.file;
    let size = (arg.size as usize).min(buf.len());
    if size == 0 {
        return Ok(0);
    }
    let buf = &mut buf[..size];
    let mut done = 0;
    if !file.is_direct() {
        match file.try_read_inline(IoIter::read_into(buf), arg.offset, &fs.policy)? {
            Attempt::Done(n) => return Ok(n),
            Attempt::Partial(n) => done = n,
            Attempt::WouldBlock | Attempt::Skipped => {}
        }
    }
    let mut batch = Batch::new();
    batch.push(
        file,
        arg.offset + done as u64,
        IoIter::read_into(&mut buf[done..]),
        RwFlags::empty(),
    );
    let n = batch.run(engine).pop().ok_or(Errno::IO)??;
    Ok(done + n)
}

/// Serves a `WRITE` whose payload follows the `fuse_write_in` in `body`; returns the reply.
pub fn write(fs: &Fs, engine: &mut dyn Engine, body: &mut Body<'_>) -> OpResult<WriteOut> {
    let arg: WriteIn = body.arg()?;
    let payload = body.bytes(arg.size as usize)?;
    write_arg(fs, engine, arg, payload)
}

/// Serves a `WRITE` of `payload` described by `arg`.
pub fn write_arg(
    fs: &Fs,
    engine: &mut dyn Engine,
    arg: WriteIn,
    payload: &[u8],
) -> OpResult<WriteOut> {
    let handle = fs.handles.file(arg.fh)?;
    let file = &handle.as_file()?.file;
    if payload.is_empty() {
        return Ok(WriteOut::default());
    }
    let mut batch = Batch::new();
    batch.push(
        file,
        arg.offset,
        IoIter::write_from(payload),
        RwFlags::empty(),
    );
    let n = batch
        .run(engine)
        .pop()
        .ok_or(Errno::IO)?
        .map_err(Errno::from)?;
    Ok(WriteOut {
        size: n as u32,
        padding: 0,
    })
}
