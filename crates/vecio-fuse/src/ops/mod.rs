//! The passthrough operations, one module per family. Each takes the shared [`Fs`], the
//! request header and the argument cursor, and answers bytes or an errno. `READ` and `WRITE`
//! are served by the worker itself (`crate::io`), which owns the aligned buffers.

mod attr;
mod dir;
mod entry;
mod file;
mod xattr;

use zerocopy::{Immutable, IntoBytes};

use crate::abi::{opcode, InHeader};
use crate::creds::AsCaller;
use crate::error::{Errno, OpResult};
use crate::fs::Fs;
use crate::request::Body;

/// What a request is answered with.
pub enum Answer {
    /// A reply with these bytes after the header (possibly none).
    Bytes(Vec<u8>),
    /// No reply at all (`FORGET`, `BATCH_FORGET`, `INTERRUPT`).
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
}

/// True for the operations that change the tree or its attributes.
fn mutates(op: u32) -> bool {
    matches!(
        op,
        opcode::SETATTR
            | opcode::SYMLINK
            | opcode::MKNOD
            | opcode::MKDIR
            | opcode::UNLINK
            | opcode::RMDIR
            | opcode::RENAME
            | opcode::RENAME2
            | opcode::LINK
            | opcode::CREATE
            | opcode::TMPFILE
            | opcode::SETXATTR
            | opcode::REMOVEXATTR
            | opcode::FALLOCATE
            | opcode::COPY_FILE_RANGE
    )
}

/// True for operations done with the caller's filesystem uid and gid.
fn as_caller(op: u32) -> bool {
    mutates(op)
        || matches!(
            op,
            opcode::LOOKUP | opcode::OPEN | opcode::OPENDIR | opcode::ACCESS | opcode::READLINK
        )
}

/// Serves every request but `INIT`, `READ` and `WRITE`.
pub fn dispatch(fs: &Fs, h: &InHeader, body: &mut Body<'_>) -> OpResult<Answer> {
    if fs.cfg.read_only && mutates(h.opcode) {
        return Err(Errno::ROFS);
    }
    let _caller = as_caller(h.opcode).then(|| AsCaller::new(h.uid, h.gid));
    let node = h.nodeid;
    match h.opcode {
        opcode::LOOKUP => entry::lookup(fs, node, body),
        opcode::FORGET => {
            let arg: crate::abi::ForgetIn = body.arg()?;
            fs.inodes.forget(node, arg.nlookup);
            Ok(Answer::Nothing)
        }
        opcode::BATCH_FORGET => entry::batch_forget(fs, body),
        opcode::GETATTR => attr::getattr(fs, node, body),
        opcode::SETATTR => attr::setattr(fs, node, body),
        opcode::READLINK => attr::readlink(fs, node),
        opcode::SYMLINK => entry::symlink(fs, node, body),
        opcode::MKNOD => entry::mknod(fs, node, body),
        opcode::MKDIR => entry::mkdir(fs, node, body),
        opcode::UNLINK => entry::unlink(fs, node, body, false),
        opcode::RMDIR => entry::unlink(fs, node, body, true),
        opcode::RENAME => entry::rename(fs, node, body, false),
        opcode::RENAME2 => entry::rename(fs, node, body, true),
        opcode::LINK => entry::link(fs, node, body),
        opcode::OPEN => file::open(fs, node, body),
        opcode::CREATE => file::create(fs, node, body),
        opcode::TMPFILE => file::tmpfile(fs, node, body),
        opcode::STATFS => attr::statfs(fs, node),
        opcode::RELEASE => file::release(fs, body),
        opcode::FLUSH => Ok(Answer::empty()),
        opcode::FSYNC => file::fsync(fs, body),
        opcode::FALLOCATE => file::fallocate(fs, body),
        opcode::LSEEK => file::lseek(fs, body),
        opcode::COPY_FILE_RANGE => file::copy_file_range(fs, body),
        opcode::OPENDIR => dir::opendir(fs, node),
        opcode::READDIR => dir::readdir(fs, node, body, false),
        opcode::READDIRPLUS => dir::readdir(fs, node, body, true),
        opcode::RELEASEDIR => dir::releasedir(fs, body),
        opcode::FSYNCDIR => dir::fsyncdir(fs, body),
        opcode::ACCESS => attr::access(fs, node, body),
        opcode::SETXATTR => xattr::setxattr(fs, node, body),
        opcode::GETXATTR => xattr::getxattr(fs, node, body),
        opcode::LISTXATTR => xattr::listxattr(fs, node, body),
        opcode::REMOVEXATTR => xattr::removexattr(fs, node, body),
        opcode::SYNCFS => attr::syncfs(fs),
        opcode::INTERRUPT => Ok(Answer::Nothing),
        opcode::DESTROY => Ok(Answer::empty()),
        _ => Err(Errno::NOSYS),
    }
}
