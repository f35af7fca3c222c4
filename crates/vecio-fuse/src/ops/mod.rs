//! The operations layer: every opcode's handler, `READ` and `WRITE` included (`io`), and the one
//! request dispatcher, shared by both transports (`/dev/fuse` workers and FUSE over io_uring
//! queues): every operation, counter and reply is written once here. A transport reads a
//! request, calls [`dispatch`] with its own engine and output buffer, and sends the [`Answer`]
//! the way it sends replies. One module per family of operations. Operations work on the file
//! system (`crate::fs`) in the ABI's terms (`crate::abi`); they know no transport.

mod attr;
mod dir;
mod entry;
mod file;
mod io;
mod killpriv;
mod label;
mod locks;
mod xattr;

use std::sync::Arc;

use vecio::Engine;
use zerocopy::{Immutable, IntoBytes};

use crate::abi::ext::Extensions;
use crate::abi::request::Body;
use crate::abi::{InHeader, Opcode, WriteOut};
use crate::error::{Errno, OpResult};
use crate::fs::creds::AsCaller;
use crate::fs::Fs;
use crate::stats::WorkerStats;

use killpriv::kill_suid_sgid;

/// What a request is answered with.
pub enum Answer {
    /// A reply with these bytes after the header (possibly none).
    Bytes(Vec<u8>),
    /// A reply with the first this many bytes of the transport's output buffer (`READ`).
    Buffer(usize),
    /// A `WRITE`'s reply.
    Written(WriteOut),
    /// No reply now: none at all (`FORGET`, `BATCH_FORGET`, `INTERRUPT`), or one sent later
    /// through [`Ctx::later`] (a lock that must wait).
    Nothing,
}

impl Answer {
    /// A reply holding one struct.
    pub fn of<T: IntoBytes + Immutable>(value: &T) -> Answer {
        Answer::Bytes(value.as_bytes().to_vec())
    }

    /// A reply with no payload.
    pub fn empty() -> Answer {
        Answer::Bytes(Vec::new())
    }

    /// The reply's payload, given the transport's output buffer; `None` for no reply.
    pub fn payload<'a>(&'a self, out: &'a [u8]) -> Option<&'a [u8]> {
        match self {
            Answer::Bytes(b) => Some(b),
            Answer::Buffer(n) => Some(&out[..*n]),
            Answer::Written(w) => Some(w.as_bytes()),
            Answer::Nothing => None,
        }
    }
}

/// A way to answer a request after `dispatch` returned (a transport that can: `/dev/fuse`).
pub trait LateReply: Send + Sync {
    /// Sends the answer to request `unique`.
    fn send(&self, unique: u64, result: OpResult<Vec<u8>>);
}

/// What the transport lends the dispatcher for one request.
pub struct Ctx<'a> {
    /// The served file system.
    pub fs: &'a Arc<Fs>,
    /// The transport thread's own engine (`READ` and `WRITE` go through it).
    pub engine: &'a mut dyn Engine,
    /// The region registered with `engine` that the transport's buffers lie in, if any:
    /// `READ` and `WRITE` over it run on registered buffers.
    pub region: Option<&'a vecio::Region>,
    /// Counters.
    pub stats: &'a WorkerStats,
    /// Where a reply that comes later is sent; `None` where the transport cannot.
    pub later: Option<&'a Arc<dyn LateReply>>,
}

impl Ctx<'_> {
    /// Adds the engine's registered-buffer ops since it counted `before` to the stats.
    fn note_fixed_since(&self, before: u64) {
        let now = self.engine.counters().fixed_buffer_ops;
        self.stats.fixed_buffer_ops.fetch_add(
            now.saturating_sub(before),
            std::sync::atomic::Ordering::Relaxed,
        );
    }
}

/// One request as a transport received it.
pub struct Incoming<'a> {
    /// `fuse_in_header`.
    pub header: InHeader,
    /// The opcode's arguments (for `/dev/fuse` a `WRITE` payload follows them here).
    pub body: Body<'a>,
    /// The request's extensions (security labels, supplementary groups; `crate::abi::ext`).
    pub ext: &'a [u8],
    /// A `WRITE` payload that the transport keeps apart from the arguments (io_uring).
    pub payload: Option<&'a [u8]>,
}

/// True for the operations that change the tree or its attributes.
/// Requests `-o allow_root` serves whoever sends them, as libfuse does: those on a handle the
/// owner or root opened (the kernel may send them as another user, writeback as root), and
/// those that are answered by no one or only set up the connection.
fn on_open_handle(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Init | Read
            | Write
            | Fsync
            | Release
            | Readdir
            | Readdirplus
            | Fsyncdir
            | Releasedir
            | NotifyReply
            | Forget
            | BatchForget
            | Interrupt
            | Destroy
    )
}

fn mutates(op: Opcode) -> bool {
    use Opcode::*;
    matches!(
        op,
        Setattr
            | Symlink
            | Mknod
            | Mkdir
            | Unlink
            | Rmdir
            | Rename
            | Rename2
            | Link
            | Create
            | Tmpfile
            | Setxattr
            | Removexattr
            | Fallocate
            | CopyFileRange
    )
}

/// True for operations done with the caller's credentials (fsuid, fsgid, groups).
fn as_caller(op: Opcode) -> bool {
    use Opcode::*;
    mutates(op)
        || matches!(
            op,
            Lookup | Open | Opendir | Access | Readlink | Getxattr | Listxattr
        )
}

/// Serves one request; `out` is where a `READ` puts its data. Counts it.
pub fn dispatch(ctx: &mut Ctx<'_>, req: Incoming<'_>, out: &mut [u8]) -> OpResult<Answer> {
    let h = req.header;
    ctx.stats.note_request(h.opcode);
    let op = Opcode::from_raw(h.opcode).ok_or(Errno::NOSYS)?;
    let fs = ctx.fs;
    if fs.cfg.read_only && mutates(op) {
        return Err(Errno::ROFS);
    }
    if let Some(owner) = fs.cfg.only_owner_and_root {
        if h.uid != owner && h.uid != 0 && !on_open_handle(op) {
            return Err(Errno::ACCES);
        }
    }
    let ext = if req.ext.is_empty() {
        Extensions::default()
    } else {
        Extensions::parse(req.ext)?
    };
    killpriv::note_caller(h.pid);
    let _ids = if as_caller(op) {
        AsCaller::new(h.uid, h.gid, h.pid, &ext.groups)
    } else {
        AsCaller::server()
    };
    let mut body = req.body;
    let answer = serve(ctx, op, h, &mut body, req.payload, out)?;
    if !ext.secctx.is_empty() {
        label::apply(fs, &answer, &ext.secctx)?;
    }
    Ok(answer)
}

/// Serves request `h` (opcode `op`) as the caller already set up.
fn serve(
    ctx: &mut Ctx<'_>,
    op: Opcode,
    h: InHeader,
    body: &mut Body<'_>,
    payload: Option<&[u8]>,
    out: &mut [u8],
) -> OpResult<Answer> {
    let fs = ctx.fs;
    let node = h.nodeid;
    use Opcode::*;
    match op {
        Read => {
            let fixed = ctx.engine.counters().fixed_buffer_ops;
            let n = io::read(fs, ctx.engine, ctx.region, body.arg()?, out)?;
            ctx.stats.note_read(n);
            ctx.note_fixed_since(fixed);
            Ok(Answer::Buffer(n))
        }
        Write => {
            let arg: crate::abi::WriteIn = body.arg()?;
            let data = match payload {
                Some(p) => p.get(..arg.size as usize).ok_or(Errno::INVAL)?,
                None => body.bytes(arg.size as usize)?,
            };
            let aligned = data.as_ptr() as usize % vecio::PAGE_SIZE == 0;
            let fixed = ctx.engine.counters().fixed_buffer_ops;
            let w = io::write(fs, node, ctx.engine, ctx.region, arg, data)?;
            ctx.stats.note_write(w.size as usize, aligned);
            ctx.note_fixed_since(fixed);
            Ok(Answer::Written(w))
        }
        Lookup => entry::lookup(fs, node, body),
        Forget => {
            let arg: crate::abi::ForgetIn = body.arg()?;
            fs.inodes.forget(node, arg.nlookup);
            Ok(Answer::Nothing)
        }
        BatchForget => entry::batch_forget(fs, body),
        Getattr => attr::getattr(fs, node, body),
        Setattr => attr::setattr(fs, node, body),
        Statx => attr::statx(fs, node, body),
        Readlink => attr::readlink(fs, node),
        Symlink => entry::symlink(fs, node, body),
        Mknod => entry::mknod(fs, node, body),
        Mkdir => entry::mkdir(fs, node, body),
        Unlink => entry::unlink(fs, node, body, false),
        Rmdir => entry::unlink(fs, node, body, true),
        Rename => entry::rename(fs, node, body, false),
        Rename2 => entry::rename(fs, node, body, true),
        Link => entry::link(fs, node, body),
        Open => file::open(fs, node, body),
        Create => file::create(fs, node, body),
        Tmpfile => file::tmpfile(fs, node, body),
        Statfs => attr::statfs(fs, node),
        Release => file::release(fs, node, body),
        Flush => file::flush(fs, node, body),
        Fsync => file::fsync(fs, body),
        Fallocate => file::fallocate(fs, node, body),
        Lseek => file::lseek(fs, body),
        CopyFileRange => file::copy_file_range(fs, body),
        Getlk => locks::getlk(fs, node, body),
        Setlk => locks::setlk(fs, node, body, false, h.unique, ctx.later),
        Setlkw => locks::setlk(fs, node, body, true, h.unique, ctx.later),
        Opendir => dir::opendir(fs, node),
        Readdir => dir::readdir(fs, node, body, false),
        Readdirplus => dir::readdir(fs, node, body, true),
        Releasedir => dir::releasedir(fs, body),
        Fsyncdir => dir::fsyncdir(fs, body),
        Access => attr::access(fs, node, body),
        Setxattr => xattr::setxattr(fs, node, body),
        Getxattr => xattr::getxattr(fs, node, body),
        Listxattr => xattr::listxattr(fs, node, body),
        Removexattr => xattr::removexattr(fs, node, body),
        Syncfs => attr::syncfs(fs),
        Interrupt => {
            let arg: crate::abi::InterruptIn = body.arg()?;
            fs.locks.interrupt(arg.unique);
            Ok(Answer::Nothing)
        }
        Destroy => Ok(Answer::empty()),
        // INIT was answered before the transports started; another one is a protocol error.
        Init => Err(Errno::INVAL),
        _ => Err(Errno::NOSYS),
    }
}
