//! Extended attributes, through the inode's `/proc/self/fd` path, which names the inode itself
//! (a symlink's own attributes, never its target's, as `l*xattr` natively).

use super::Answer;
use crate::abi::request::Body;
use crate::abi::{
    GetxattrIn, GetxattrOut, InitFlags, SetxattrIn, SetxattrInExt, SETXATTR_ACL_KILL_SGID,
};
use crate::error::{Errno, OpResult};
use crate::fs::Fs;

/// `SETXATTR`. Under `FUSE_SETXATTR_EXT` the arguments carry `setxattr_flags`: with
/// `FUSE_SETXATTR_ACL_KILL_SGID` (an access ACL set by a caller outside the file's group and
/// without `CAP_FSETID`) setgid is cleared, as the kernel's `posix_acl_update_mode` does.
pub fn setxattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let (size, flags, setxattr_flags) = if fs.granted(InitFlags::SETXATTR_EXT) {
        let a: SetxattrInExt = body.arg()?;
        (a.size, a.flags, a.setxattr_flags)
    } else {
        let a: SetxattrIn = body.arg()?;
        (a.size, a.flags, 0)
    };
    let name = body.string()?;
    let value = body.bytes(size as usize)?;
    let inode = fs.inodes.get(node)?;
    let (_held, path) = fs.proc_path(&inode)?;
    let flags = rustix::fs::XattrFlags::from_bits(flags).ok_or(Errno::INVAL)?;
    rustix::fs::setxattr(path.as_c_str(), name, value, flags)?;
    if setxattr_flags & SETXATTR_ACL_KILL_SGID != 0 && name == c"system.posix_acl_access" {
        kill_sgid(fs, node, path.as_c_str())?;
    }
    Ok(Answer::empty())
}

/// Clears setgid on the file at `path` (as the server), and tells the kernel.
fn kill_sgid(fs: &Fs, node: u64, path: &std::ffi::CStr) -> OpResult<()> {
    let _server = crate::fs::creds::AsServer::new();
    let st = rustix::fs::stat(path)?;
    if st.st_mode & libc::S_ISGID != 0 {
        let mode = rustix::fs::Mode::from_raw_mode(st.st_mode & 0o7777 & !libc::S_ISGID);
        rustix::fs::chmod(path, mode)?;
        fs.notify.inval_attr(node);
    }
    Ok(())
}

/// Answers a get or list of `size` bytes: the needed size when `size` is 0, else the data
/// (`ERANGE` when it does not fit).
fn sized(size: u32, data: Vec<u8>) -> OpResult<Answer> {
    if size == 0 {
        return Ok(Answer::of(&GetxattrOut {
            size: data.len() as u32,
            padding: 0,
        }));
    }
    if data.len() > size as usize {
        return Err(Errno::RANGE);
    }
    Ok(Answer::Bytes(data))
}

/// `GETXATTR`.
pub fn getxattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: GetxattrIn = body.arg()?;
    let name = body.string()?;
    let (_held, path) = fs.proc_path(&*fs.inodes.get(node)?)?;
    let mut buf = vec![0u8; (arg.size as usize).clamp(1, 64 << 10)];
    let data = if arg.size == 0 {
        let n = rustix::fs::getxattr_query(path.as_c_str(), name)?;
        vec![0u8; n]
    } else {
        let n = rustix::fs::getxattr(path.as_c_str(), name, &mut buf[..])?;
        buf.truncate(n);
        buf
    };
    sized(arg.size, data)
}

/// `LISTXATTR`.
pub fn listxattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: GetxattrIn = body.arg()?;
    let (_held, path) = fs.proc_path(&*fs.inodes.get(node)?)?;
    let data = if arg.size == 0 {
        let n = rustix::fs::listxattr_query(path.as_c_str())?;
        vec![0u8; n]
    } else {
        let mut buf = vec![0u8; (arg.size as usize).min(64 << 10)];
        let n = rustix::fs::listxattr(path.as_c_str(), &mut buf[..])?;
        buf.truncate(n);
        buf
    };
    sized(arg.size, data)
}

/// `REMOVEXATTR`.
pub fn removexattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let name = body.string()?;
    let (_held, path) = fs.proc_path(&*fs.inodes.get(node)?)?;
    rustix::fs::removexattr(path.as_c_str(), name)?;
    Ok(Answer::empty())
}
