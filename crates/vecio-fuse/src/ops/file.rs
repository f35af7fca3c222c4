//! Open files: open, create, release, fsync, fallocate, lseek, copy_file_range. `READ` and
//! `WRITE` are in `crate::io`.

use std::os::fd::{AsFd, AsRawFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags, SeekFrom};
use vecio::RwFlags;
use zerocopy::IntoBytes;

use super::Answer;
use crate::abi::{
    fopen, BackingMap, CopyFileRangeIn, CreateIn, FallocateIn, FsyncIn, LseekIn, LseekOut, OpenIn,
    OpenOut, ReleaseIn, WriteOut, FSYNC_FDATASYNC,
};
use crate::attr::from_stat;
use crate::error::{Errno, OpResult};
use crate::fs::{component, Fs};
use crate::handle::{FileHandle, Handle};
use crate::inode::Inode;
use crate::request::Body;

/// The open flags the backing file gets: the caller's, without those the kernel already
/// applied (`O_APPEND`: the kernel sends the end-of-file offset) or that vecio decides itself.
fn backing_flags(flags: u32) -> OFlags {
    OFlags::from_bits_retain(flags as _)
        - (OFlags::APPEND | OFlags::DIRECT | OFlags::CREATE | OFlags::EXCL | OFlags::NOCTTY)
}

/// Whether a file opened with the caller's `flags` is served with direct I/O.
fn wants_direct(fs: &Fs, flags: u32) -> bool {
    fs.cfg.direct_io || OFlags::from_bits_retain(flags as _).contains(OFlags::DIRECT)
}

/// Opens with `open`, trying `O_DIRECT` when wanted. A write-only direct file is opened
/// read-write when allowed, so unaligned writes can read their edge blocks.
fn open_backing(
    fs: &Fs,
    flags: u32,
    open: impl Fn(OFlags) -> OpResult<OwnedFd>,
) -> OpResult<OwnedFd> {
    let base = backing_flags(flags);
    if !wants_direct(fs, flags) {
        return open(base);
    }
    let direct = base | OFlags::DIRECT;
    if base & OFlags::RWMODE == OFlags::WRONLY {
        let rw = (direct - OFlags::WRONLY) | OFlags::RDWR;
        if let Ok(fd) = open(rw) {
            return Ok(fd);
        }
    }
    match open(direct) {
        Ok(fd) => Ok(fd),
        // The backing file system refuses O_DIRECT: a caller who asked for it gets the
        // refusal, as natively; -o direct_io alone falls back to buffered backing I/O.
        Err(e)
            if e.0 == libc::EINVAL
                && !OFlags::from_bits_retain(flags as _).contains(OFlags::DIRECT) =>
        {
            open(base)
        }
        Err(e) => Err(e),
    }
}

/// The vecio file of a new handle on `inode`. (Every `vecio::File` of one inode shares the
/// inode's range lock, so unaligned direct writes through different handles cannot interleave
/// their read-modify-writes.)
fn backing_file(fs: &Fs, inode: &Inode, fd: OwnedFd) -> OpResult<Arc<vecio::File>> {
    Ok(Arc::new(vecio::File::from_fd(
        fd,
        fs.label(inode.key.1),
        RwFlags::empty(),
    )?))
}

/// Wraps a handle's backing file: the handle, the reply flags, the passthrough id.
fn file_handle(fs: &Fs, file: Arc<vecio::File>) -> (Handle, u32, i32) {
    let mut open_flags = 0;
    let mut backing_id = None;
    if file.is_direct() {
        open_flags |= fopen::DIRECT_IO | fopen::PARALLEL_DIRECT_WRITES;
    } else if fs.cfg.passthrough {
        backing_id = register_backing(fs, &file);
        if backing_id.is_some() {
            open_flags |= fopen::PASSTHROUGH;
        }
    }
    let handle = Handle::File(FileHandle { file, backing_id });
    (handle, open_flags, backing_id.unwrap_or(0))
}

/// `FUSE_DEV_IOC_BACKING_OPEN`: lets the kernel serve this file's reads and writes itself.
fn register_backing(fs: &Fs, file: &vecio::File) -> Option<i32> {
    let dev = fs.dev.get()?;
    let map = BackingMap {
        fd: file.as_raw_fd(),
        flags: 0,
        padding: 0,
    };
    // SAFETY: the ioctl reads one fuse_backing_map from the pointer, which points at `map`
    // for the call.
    let id = unsafe {
        libc::ioctl(
            dev.as_raw_fd(),
            crate::abi::DEV_IOC_BACKING_OPEN,
            map.as_bytes().as_ptr(),
        )
    };
    if id > 0 {
        Some(id)
    } else {
        tracing::debug!(
            "FUSE passthrough refused: {}",
            std::io::Error::last_os_error()
        );
        None
    }
}

/// `FUSE_DEV_IOC_BACKING_CLOSE`.
fn unregister_backing(fs: &Fs, id: i32) {
    if let Some(dev) = fs.dev.get() {
        let id = id as u32;
        // SAFETY: the ioctl reads one u32 from the pointer, which points at `id`.
        unsafe { libc::ioctl(dev.as_raw_fd(), crate::abi::DEV_IOC_BACKING_CLOSE, &id) };
    }
}

/// `OPEN`.
pub fn open(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: OpenIn = body.arg()?;
    let inode = fs.inodes.get(node)?;
    if fs.cfg.read_only
        && OFlags::from_bits_retain(arg.flags as _) & OFlags::RWMODE != OFlags::RDONLY
    {
        return Err(Errno::ROFS);
    }
    let fd = open_backing(fs, arg.flags, |f| fs.reopen(&inode, f))?;
    let file = backing_file(fs, &inode, fd)?;
    let (handle, open_flags, backing_id) = file_handle(fs, file);
    let fh = fs.handles.insert(handle);
    Ok(Answer::of(&OpenOut {
        fh,
        open_flags,
        backing_id,
    }))
}

/// `CREATE`: `openat2(O_CREAT | O_NOFOLLOW)` beneath the parent, then the new inode enters
/// the table through the opened descriptor (not the name, which could change meanwhile).
pub fn create(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: CreateIn = body.arg()?;
    let name = component(body.name()?)?;
    let excl = OFlags::from_bits_retain(arg.flags as _) & OFlags::EXCL;
    let extra = OFlags::CREATE | OFlags::NOFOLLOW | excl;
    create_in(fs, parent, &arg, name, extra)
}

/// `TMPFILE`: an unnamed file in the parent directory (`O_TMPFILE`), opened like `CREATE`.
pub fn tmpfile(fs: &Fs, parent: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: CreateIn = body.arg()?;
    create_in(fs, parent, &arg, c".", OFlags::TMPFILE)
}

/// Opens `name` beneath node `parent` with the caller's flags plus `extra`, enters the inode
/// through the opened descriptor, and answers entry + open.
fn create_in(
    fs: &Fs,
    parent: u64,
    arg: &CreateIn,
    name: &std::ffi::CStr,
    extra: OFlags,
) -> OpResult<Answer> {
    let dir = fs.inodes.get(parent)?;
    let mode = Mode::from_raw_mode(arg.mode & 0o7777);
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_MAGICLINKS;
    let fd = open_backing(fs, arg.flags, |f| {
        let f = f | extra | OFlags::CLOEXEC;
        Ok(rustix::fs::openat2(dir.fd(), name, f, mode, resolve)?)
    })?;
    let (id, st) = fs.inodes.adopt(fs.path_fd_of(&fd)?)?;
    let file = backing_file(fs, &*fs.inodes.get(id)?, fd)?;
    let (handle, open_flags, backing_id) = file_handle(fs, file);
    let fh = fs.handles.insert(handle);
    let mut out = fs
        .cfg
        .timeouts
        .entry(id, from_stat(&st))
        .as_bytes()
        .to_vec();
    out.extend_from_slice(
        OpenOut {
            fh,
            open_flags,
            backing_id,
        }
        .as_bytes(),
    );
    Ok(Answer::Bytes(out))
}

/// `RELEASE`.
pub fn release(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: ReleaseIn = body.arg()?;
    if let Some(h) = fs.handles.remove(arg.fh) {
        if let Handle::File(FileHandle {
            backing_id: Some(id),
            ..
        }) = &*h
        {
            unregister_backing(fs, *id);
        }
    }
    Ok(Answer::empty())
}

/// `FSYNC`.
pub fn fsync(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: FsyncIn = body.arg()?;
    let h = fs.handles.file(arg.fh)?;
    let f = &h.as_file()?.file;
    if arg.fsync_flags & FSYNC_FDATASYNC != 0 {
        f.sync_data()?;
    } else {
        rustix::fs::fsync(f.as_fd())?;
    }
    Ok(Answer::empty())
}

/// `FALLOCATE` (allocate, keep size, punch hole, zero range...: the mode goes through).
pub fn fallocate(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: FallocateIn = body.arg()?;
    let h = fs.handles.file(arg.fh)?;
    let f = &h.as_file()?.file;
    let mode = rustix::fs::FallocateFlags::from_bits_retain(arg.mode as _);
    rustix::fs::fallocate(f.as_fd(), mode, arg.offset, arg.length)?;
    Ok(Answer::empty())
}

/// `LSEEK` (the kernel sends only `SEEK_DATA` and `SEEK_HOLE`).
pub fn lseek(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: LseekIn = body.arg()?;
    let h = fs.handles.file(arg.fh)?;
    let f = &h.as_file()?.file;
    let off = i64::try_from(arg.offset).map_err(|_| Errno(libc::ENXIO))?;
    let pos = match arg.whence as i32 {
        libc::SEEK_DATA => SeekFrom::Data(off as u64),
        libc::SEEK_HOLE => SeekFrom::Hole(off as u64),
        libc::SEEK_SET => SeekFrom::Start(off as u64),
        libc::SEEK_END => SeekFrom::End(off),
        _ => return Err(Errno::INVAL),
    };
    let offset = rustix::fs::seek(f.as_fd(), pos)?;
    Ok(Answer::of(&LseekOut { offset }))
}

/// `COPY_FILE_RANGE`: the backing file system copies (or clones) without the data passing
/// through the server.
pub fn copy_file_range(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: CopyFileRangeIn = body.arg()?;
    if arg.flags != 0 {
        return Err(Errno::INVAL);
    }
    let hin = fs.handles.file(arg.fh_in)?;
    let hout = fs.handles.file(arg.fh_out)?;
    let (mut off_in, mut off_out) = (arg.off_in, arg.off_out);
    let len = arg.len.min(u32::MAX as u64 & !0xfff) as usize;
    let n = rustix::fs::copy_file_range(
        hin.as_file()?.file.as_fd(),
        Some(&mut off_in),
        hout.as_file()?.file.as_fd(),
        Some(&mut off_out),
        len,
    )?;
    Ok(Answer::of(&WriteOut {
        size: n as u32,
        padding: 0,
    }))
}
