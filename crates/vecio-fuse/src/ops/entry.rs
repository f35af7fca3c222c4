//! Names: lookup, forget, and the operations that create, link, remove or rename entries.

use rustix::fs::{AtFlags, Mode, RenameFlags};

use super::Answer;
use crate::abi::request::Body;
use crate::abi::{BatchForgetIn, ForgetOne, LinkIn, MkdirIn, MknodIn, Rename2In, RenameIn};
use crate::error::{Errno, OpResult};
use crate::fs::attr::from_stat;
use crate::fs::creds::CallerUmask;
use crate::fs::{component, Fs};

/// Replies with the entry of `name` in `parent` (one more kernel reference).
pub fn entry_of(fs: &Fs, parent: u64, name: &std::ffi::CStr) -> OpResult<Answer> {
    let (id, st) = fs.inodes.lookup(parent, name)?;
    Ok(Answer::of(&fs.cfg.timeouts.entry(id, from_stat(&st))))
}

/// `LOOKUP`. Under `FUSE_EXPORT_SUPPORT` the kernel also looks up `.` (a node it knows only
/// by id, from a file handle) and `..` (a directory's parent, to reconnect it); see
/// `crate::fs::export`.
pub fn lookup(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let name = body.name()?;
    let found = match name.to_bytes() {
        b"." if fs.inodes.exports() => fs.inodes.lookup_self(parent)?,
        b".." if fs.inodes.exports() => fs.inodes.lookup_parent(parent)?,
        _ => return negative_if_missing(fs, entry_of(fs, parent, component(name)?)),
    };
    let (id, st) = found;
    Ok(Answer::of(&fs.cfg.timeouts.entry(id, from_stat(&st))))
}

/// A lookup that found nothing is answered with node id 0 and the entry timeout rather than
/// `ENOENT`, so the kernel caches the name's absence for that long, as it caches names that
/// exist: a second `stat` of a missing name (a search path, an include directory) costs no
/// round trip. With no entry timeout (`--timeout 0`) it stays `ENOENT`.
fn negative_if_missing(fs: &Fs, found: OpResult<Answer>) -> OpResult<Answer> {
    match found {
        Err(e) if e == Errno::NOENT && !fs.cfg.timeouts.entry.is_zero() => {
            let mut out = fs.cfg.timeouts.entry(0, Default::default());
            out.attr_valid = 0;
            out.attr_valid_nsec = 0;
            Ok(Answer::of(&out))
        }
        other => other,
    }
}

/// `BATCH_FORGET`.
pub fn batch_forget(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: BatchForgetIn = body.arg()?;
    for _ in 0..arg.count {
        let one: ForgetOne = body.arg()?;
        fs.inodes.forget(one.nodeid, one.nlookup);
    }
    Ok(Answer::Nothing)
}

/// `MKNOD` (regular files, FIFOs, sockets and, for root, devices).
pub fn mknod(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: MknodIn = body.arg()?;
    let name = component(body.name()?)?;
    let dir = fs.inodes.get(parent)?;
    let kind = rustix::fs::FileType::from_raw_mode(arg.mode);
    let mode = Mode::from_raw_mode(arg.mode);
    let _umask = CallerUmask::new(arg.umask);
    rustix::fs::mknodat(dir.fd()?, name, kind, mode, arg.rdev as u64)?;
    entry_of(fs, parent, name)
}

/// `MKDIR`.
pub fn mkdir(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: MkdirIn = body.arg()?;
    let name = component(body.name()?)?;
    let dir = fs.inodes.get(parent)?;
    let _umask = CallerUmask::new(arg.umask);
    rustix::fs::mkdirat(dir.fd()?, name, Mode::from_raw_mode(arg.mode))?;
    entry_of(fs, parent, name)
}

/// `SYMLINK`: the link is created as given; the server never follows it.
pub fn symlink(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let name = component(body.name()?)?;
    let target = body.string()?;
    let dir = fs.inodes.get(parent)?;
    rustix::fs::symlinkat(target, dir.fd()?, name)?;
    entry_of(fs, parent, name)
}

/// `UNLINK` and `RMDIR`.
pub fn unlink(fs: &Fs, parent: u64, body: &mut Body<'_>, dir_too: bool) -> OpResult<Answer> {
    let name = component(body.name()?)?;
    let dir = fs.inodes.get(parent)?;
    let flags = if dir_too {
        AtFlags::REMOVEDIR
    } else {
        AtFlags::empty()
    };
    rustix::fs::unlinkat(dir.fd()?, name, flags)?;
    Ok(Answer::empty())
}

/// `RENAME` and `RENAME2` (`RENAME_NOREPLACE`, `RENAME_EXCHANGE`, `RENAME_WHITEOUT`).
pub fn rename(fs: &Fs, parent: u64, body: &mut Body<'_>, with_flags: bool) -> OpResult<Answer> {
    let (newdir, flags) = if with_flags {
        let a: Rename2In = body.arg()?;
        (a.newdir, a.flags)
    } else {
        let a: RenameIn = body.arg()?;
        (a.newdir, 0)
    };
    let old = component(body.name()?)?;
    let new = component(body.name()?)?;
    let flags = RenameFlags::from_bits(flags).ok_or(Errno::INVAL)?;
    let from = fs.inodes.get(parent)?;
    let to = fs.inodes.get(newdir)?;
    rustix::fs::renameat_with(from.fd()?, old, to.fd()?, new, flags)?;
    Ok(Answer::empty())
}

/// `LINK`: a new name for an existing node, made from its descriptor (`AT_EMPTY_PATH`), not
/// from a path that could have changed.
pub fn link(fs: &Fs, newparent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: LinkIn = body.arg()?;
    let name = component(body.name()?)?;
    let old = fs.inodes.get(arg.oldnodeid)?;
    let dir = fs.inodes.get(newparent)?;
    if old.kind == rustix::fs::FileType::Directory {
        return Err(Errno(libc::EPERM));
    }
    match rustix::fs::linkat(old.fd()?, c"", dir.fd()?, name, AtFlags::EMPTY_PATH) {
        Ok(()) => {}
        // Without CAP_DAC_READ_SEARCH (the caller's ids are in force), link through the
        // inode's /proc/self/fd entry instead, which names the same inode.
        // A symlink never takes this way: following its magic link could follow the link.
        Err(e)
            if (e == rustix::io::Errno::NOENT || e == rustix::io::Errno::PERM)
                && old.kind != rustix::fs::FileType::Symlink =>
        {
            rustix::fs::linkat(
                fs.proc_dir(),
                old.fd()?.proc_name(),
                dir.fd()?,
                name,
                AtFlags::SYMLINK_FOLLOW,
            )?;
        }
        Err(e) => return Err(e.into()),
    }
    entry_of(fs, newparent, name)
}
