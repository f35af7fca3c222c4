//! Attributes: getattr, setattr, readlink, statfs, access, syncfs.

use std::os::fd::AsFd;

use rustix::fs::{AtFlags, FileType, Mode, OFlags, StatxFlags, Timespec, Timestamps};

use super::Answer;
use crate::abi::request::Body;
use crate::abi::{
    AccessIn, FattrFlags, GetattrIn, Kstatfs, SetattrIn, Statx, StatxIn, StatxOut, SxTime,
    GETATTR_FH,
};
use crate::error::{Errno, OpResult};
use crate::fs::attr::from_stat;
use crate::fs::handle::Handle;
use crate::fs::Fs;

/// `GETATTR`: from the open handle when the kernel names one, else from the inode.
pub fn getattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: GetattrIn = body.arg().unwrap_or_default();
    let st = match (arg.getattr_flags & GETATTR_FH != 0).then(|| fs.handles.get(arg.fh)) {
        Some(Ok(h)) => match &*h {
            Handle::File(f) => rustix::fs::fstat(f.file.as_fd())?,
            Handle::Dir(_) => fs.inodes.get(node)?.stat()?,
        },
        _ => fs.inodes.get(node)?.stat()?,
    };
    Ok(Answer::of(&fs.cfg.timeouts.attr_out(from_stat(&st))))
}

fn timestamp(set: bool, now: bool, sec: u64, nsec: u32) -> Timespec {
    let omit = Timespec {
        tv_sec: 0,
        tv_nsec: libc::UTIME_OMIT,
    };
    match (set, now) {
        (_, true) => Timespec {
            tv_sec: 0,
            tv_nsec: libc::UTIME_NOW,
        },
        (true, false) => Timespec {
            tv_sec: sec as i64,
            tv_nsec: nsec as _,
        },
        _ => omit,
    }
}

/// `SETATTR`: mode, owner, size and times, each through the inode's descriptor or the open
/// handle; the reply carries the attributes after the change.
pub fn setattr(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let a: SetattrIn = body.arg()?;
    let valid = FattrFlags::from_bits_retain(a.valid);
    let inode = fs.inodes.get(node)?;
    let handle = if valid.contains(FattrFlags::FH) {
        fs.handles.get(a.fh).ok()
    } else {
        None
    };
    let file = handle.as_ref().and_then(|h| h.as_file().ok());
    if valid.contains(FattrFlags::MODE) {
        let mode = Mode::from_raw_mode(a.mode);
        match file {
            Some(f) => rustix::fs::fchmod(f.file.as_fd(), mode)?,
            None if inode.kind == FileType::Symlink => return Err(Errno::NOTSUP),
            None => rustix::fs::chmodat(
                fs.proc_dir(),
                inode.fd()?.proc_name(),
                mode,
                AtFlags::empty(),
            )?,
        }
    }
    if valid.intersects(FattrFlags::UID | FattrFlags::GID) {
        let uid = (valid.contains(FattrFlags::UID)).then(|| rustix::fs::Uid::from_raw(a.uid));
        let gid = (valid.contains(FattrFlags::GID)).then(|| rustix::fs::Gid::from_raw(a.gid));
        rustix::fs::chownat(
            inode.fd()?,
            c"",
            uid,
            gid,
            AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
        )?;
    }
    if valid.contains(FattrFlags::SIZE) {
        // Through vecio, under the inode's range lock: a cut cannot interleave with a
        // read-modify-write of an unaligned direct write through another handle.
        match file {
            Some(f) => f.file.set_len(a.size)?,
            None => {
                let fd = fs.reopen(&inode, OFlags::WRONLY)?;
                let f = vecio::File::from_fd(fd, fs.label(inode.key.1), vecio::RwFlags::empty())?;
                f.set_len(a.size)?;
            }
        }
    }
    if valid.contains(FattrFlags::KILL_SUIDGID) && !valid.contains(FattrFlags::MODE) {
        match file {
            Some(f) => super::kill_suid_sgid(fs, node, f.file.as_fd())?,
            None => super::killpriv::kill_suid_sgid_inode(fs, &inode)?,
        }
    }
    let times =
        FattrFlags::ATIME | FattrFlags::MTIME | FattrFlags::ATIME_NOW | FattrFlags::MTIME_NOW;
    if valid.intersects(times) {
        let ts = Timestamps {
            last_access: timestamp(
                valid.contains(FattrFlags::ATIME),
                valid.contains(FattrFlags::ATIME_NOW),
                a.atime,
                a.atimensec,
            ),
            last_modification: timestamp(
                valid.contains(FattrFlags::MTIME),
                valid.contains(FattrFlags::MTIME_NOW),
                a.mtime,
                a.mtimensec,
            ),
        };
        match file {
            Some(f) => rustix::fs::futimens(f.file.as_fd(), &ts)?,
            None if inode.kind == FileType::Symlink => rustix::fs::utimensat(
                inode.fd()?,
                c"",
                &ts,
                AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW,
            )?,
            None => rustix::fs::utimensat(
                fs.proc_dir(),
                inode.fd()?.proc_name(),
                &ts,
                AtFlags::empty(),
            )?,
        }
    }
    let st = inode.stat()?;
    Ok(Answer::of(&fs.cfg.timeouts.attr_out(from_stat(&st))))
}

/// `STATX`: `statx(2)` of the backing inode (or the open handle), with the fields the caller
/// asked for (birth time among them, which `GETATTR` cannot carry).
pub fn statx(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: StatxIn = body.arg()?;
    let sync = AtFlags::from_bits_truncate(arg.sx_flags)
        & (AtFlags::STATX_FORCE_SYNC | AtFlags::STATX_DONT_SYNC);
    let mask = StatxFlags::from_bits_retain(arg.sx_mask) | StatxFlags::BASIC_STATS;
    let flags = AtFlags::EMPTY_PATH | AtFlags::SYMLINK_NOFOLLOW | sync;
    let handle = (arg.getattr_flags & GETATTR_FH != 0)
        .then(|| fs.handles.get(arg.fh).ok())
        .flatten();
    let sx = match handle.as_deref() {
        Some(Handle::File(f)) => rustix::fs::statx(f.file.as_fd(), c"", flags, mask)?,
        _ => rustix::fs::statx(fs.inodes.get(node)?.fd()?, c"", flags, mask)?,
    };
    let t = |t: rustix::fs::StatxTimestamp| SxTime {
        tv_sec: t.tv_sec,
        tv_nsec: t.tv_nsec,
        reserved: 0,
    };
    let stat = Statx {
        mask: sx.stx_mask,
        blksize: sx.stx_blksize,
        attributes: sx.stx_attributes.bits(),
        nlink: sx.stx_nlink,
        uid: sx.stx_uid,
        gid: sx.stx_gid,
        mode: sx.stx_mode,
        ino: sx.stx_ino,
        size: sx.stx_size,
        blocks: sx.stx_blocks,
        attributes_mask: sx.stx_attributes_mask.bits(),
        atime: t(sx.stx_atime),
        btime: t(sx.stx_btime),
        ctime: t(sx.stx_ctime),
        mtime: t(sx.stx_mtime),
        rdev_major: sx.stx_rdev_major,
        rdev_minor: sx.stx_rdev_minor,
        dev_major: sx.stx_dev_major,
        dev_minor: sx.stx_dev_minor,
        ..Default::default()
    };
    let timeouts = fs.cfg.timeouts;
    Ok(Answer::of(&StatxOut {
        attr_valid: timeouts.attr.as_secs(),
        attr_valid_nsec: timeouts.attr.subsec_nanos(),
        stat,
        ..Default::default()
    }))
}

/// `READLINK`: the link's own text, read from its descriptor.
pub fn readlink(fs: &Fs, node: u64) -> OpResult<Answer> {
    let inode = fs.inodes.get(node)?;
    let target = rustix::fs::readlinkat(inode.fd()?, c"", Vec::new())?;
    Ok(Answer::Bytes(target.into_bytes()))
}

/// `STATFS` of the backing file system.
pub fn statfs(fs: &Fs, node: u64) -> OpResult<Answer> {
    let inode = fs.inodes.get(node)?;
    let st = rustix::fs::fstatvfs(inode.fd()?)?;
    Ok(Answer::of(&Kstatfs {
        blocks: st.f_blocks,
        bfree: st.f_bfree,
        bavail: st.f_bavail,
        files: st.f_files,
        ffree: st.f_ffree,
        bsize: st.f_bsize as u32,
        namelen: st.f_namemax as u32,
        frsize: st.f_frsize as u32,
        ..Default::default()
    }))
}

/// `ACCESS`, checked with the caller's ids (`AT_EACCESS` uses the filesystem ids in force).
pub fn access(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: AccessIn = body.arg()?;
    let inode = fs.inodes.get(node)?;
    if inode.kind == FileType::Symlink {
        return Ok(Answer::empty());
    }
    let mode = rustix::fs::Access::from_bits_truncate(arg.mask);
    rustix::fs::accessat(
        fs.proc_dir(),
        inode.fd()?.proc_name(),
        mode,
        AtFlags::EACCESS,
    )?;
    Ok(Answer::empty())
}

/// `SYNCFS`: `syncfs(2)` on the backing file system.
pub fn syncfs(fs: &Fs) -> OpResult<Answer> {
    let root = fs.inodes.get(crate::abi::ROOT_ID)?;
    let fd = fs.reopen(&root, OFlags::RDONLY | OFlags::DIRECTORY)?;
    rustix::fs::syncfs(&fd)?;
    Ok(Answer::empty())
}
