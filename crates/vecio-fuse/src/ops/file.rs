//! Open files: open, create, release, fsync, fallocate, lseek, copy_file_range. `READ` and
//! `WRITE` are in `io`.

use std::os::fd::{AsFd, OwnedFd};
use std::sync::Arc;

use rustix::fs::{Mode, OFlags, ResolveFlags, SeekFrom};

use vecio::RwFlags;
use zerocopy::IntoBytes;

use super::Answer;
use crate::abi::request::Body;
use crate::abi::{
    CopyFileRangeIn, CreateIn, FallocateIn, FlushIn, FopenFlags, FsyncIn, LseekIn, LseekOut,
    OpenIn, OpenOut, ReleaseIn, WriteOut, FSYNC_FDATASYNC, OPEN_FOR_EXEC, OPEN_KILL_SUIDGID,
};
use crate::error::{Errno, OpResult};
use crate::fs::attr::from_stat;
use crate::fs::backing::ReadsOpen;
use crate::fs::handle::{FileHandle, Handle};
use crate::fs::inode::Inode;
use crate::fs::{component, Fs};

/// The open flags the backing file gets: the caller's, without those the kernel already
/// applied (`O_APPEND`: the kernel sends the end-of-file offset), those that vecio decides
/// itself, and `O_NONBLOCK` (`OPEN` is sent for regular files only, where it means nothing;
/// vecio would clear it with one more system call).
fn backing_flags(flags: u32) -> OFlags {
    OFlags::from_bits_retain((flags & !OPEN_FOR_EXEC) as _)
        - (OFlags::APPEND
            | OFlags::DIRECT
            | OFlags::CREATE
            | OFlags::EXCL
            | OFlags::NOCTTY
            | OFlags::NONBLOCK)
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
    let write_only = base & OFlags::RWMODE == OFlags::WRONLY;
    let read_write = |f: OFlags| (f - OFlags::WRONLY) | OFlags::RDWR;
    if !wants_direct(fs, flags) {
        if !(write_only && fs.cfg.writeback_cache) {
            return open(base);
        }
        // The kernel's write-back cache reads the pages it fills partly, even of a file
        // opened write-only: such a file gets a read-write backing file. The caller's own
        // right to write was checked by opening write-only first when it may not read.
        if let Ok(fd) = open(read_write(base)) {
            return Ok(fd);
        }
        let fd = open(base)?;
        let _root = crate::fs::creds::AsServer::new();
        return Ok(fs
            .path_fd_of(&fd)
            .and_then(|p| reopen_fd(fs, &p, read_write(base)))
            .unwrap_or(fd));
    }
    let direct = base | OFlags::DIRECT;
    if write_only {
        if let Ok(fd) = open(read_write(direct)) {
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

/// Opens the inode of `path_fd` (an `O_PATH` descriptor) anew with `flags`.
fn reopen_fd(fs: &Fs, path_fd: &OwnedFd, flags: OFlags) -> OpResult<OwnedFd> {
    use std::os::fd::AsRawFd;
    let flags = (flags - (OFlags::CREATE | OFlags::EXCL | OFlags::TRUNC)) | OFlags::CLOEXEC;
    Ok(rustix::fs::openat(
        fs.proc_dir(),
        crate::fs::procfs::fd_name(path_fd.as_raw_fd()),
        flags,
        Mode::empty(),
    )?)
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

/// Wraps a handle's backing file: the handle, the reply flags, the passthrough id. Under
/// `--passthrough` every open of an inode shares the inode's one backing registration (the
/// kernel allows one backing file per inode, fails with `EIO` an open that does not name it
/// while the inode has one, and keeps it attached while a direct write vecio serves runs).
/// A direct open's reads and writes stay with vecio (`FOPEN_DIRECT_IO` overrides
/// `FOPEN_PASSTHROUGH`; only its `mmap` goes to the backing file, as every other open's does);
/// with `--passthrough-direct` the kernel serves them on the backing file without a round
/// trip. Under read-only passthrough (`vecio fuse`'s default) read-only
/// buffered opens go to the kernel while no open of the inode is served
/// (`crate::fs::backing::for_open`). `flags` are the caller's open flags.
fn file_handle(
    fs: &Fs,
    inode: &Arc<Inode>,
    file: Arc<vecio::File>,
    flags: u32,
) -> (Handle, u32, i32) {
    let mut open_flags = FopenFlags::empty();
    let mut backing = None;
    let mut served = None;
    if fs.cfg.passthrough {
        backing = crate::fs::backing::acquire(fs, inode, &file);
    } else if fs.cfg.passthrough_reads && fs.dev.get().is_some() {
        let oflags = OFlags::from_bits_retain(flags as _);
        let read_only = oflags & OFlags::RWMODE == OFlags::RDONLY
            && !oflags.contains(OFlags::TRUNC)
            && !file.is_direct();
        match crate::fs::backing::for_open(fs, inode, &file, read_only) {
            ReadsOpen::Kernel(b) => backing = Some(b),
            ReadsOpen::Served(s) => served = Some(s),
        }
    }
    let served_direct = FopenFlags::DIRECT_IO | FopenFlags::PARALLEL_DIRECT_WRITES;
    match (&backing, file.is_direct()) {
        (Some(_), true) if !fs.cfg.passthrough_direct => {
            open_flags |= FopenFlags::PASSTHROUGH | served_direct
        }
        (Some(_), _) => open_flags |= FopenFlags::PASSTHROUGH,
        (None, true) => open_flags |= served_direct,
        (None, false) => {}
    }
    if no_flush_needed(fs) {
        open_flags |= FopenFlags::NOFLUSH;
    }
    let id = backing.as_ref().map_or(0, |b| b.id());
    let handle = Handle::File(FileHandle {
        file,
        backing,
        served,
        open: inode.opened(),
    });
    (handle, open_flags.bits(), id)
}

/// True when a `close` needs no `FLUSH`: the server keeps no POSIX locks (the kernel does,
/// over io_uring; a `FLUSH` is what releases the closing owner's locks in the backing file
/// system) and the kernel caches no writes (under `-o writeback_cache` it writes them back at
/// `FLUSH`). `FOPEN_NOFLUSH` then saves one round trip per close.
fn no_flush_needed(fs: &Fs) -> bool {
    fs.granted.get().is_some_and(|g| {
        !g.intersects(crate::abi::InitFlags::POSIX_LOCKS | crate::abi::InitFlags::WRITEBACK_CACHE)
    })
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
    let fd = if arg.flags & OPEN_FOR_EXEC != 0 {
        open_for_exec(fs, &inode, arg.flags)?
    } else {
        open_backing(fs, arg.flags, |f| fs.reopen(&inode, f))?
    };
    fs.keep_atime(&fd);
    if arg.open_flags & OPEN_KILL_SUIDGID != 0 {
        super::kill_suid_sgid(fs, node, fd.as_fd())?;
    }
    let file = backing_file(fs, &inode, fd)?;
    let (handle, open_flags, backing_id) = file_handle(fs, &inode, file, arg.flags);
    let fh = fs.handles.insert(handle);
    Ok(Answer::of(&OpenOut {
        fh,
        open_flags,
        backing_id,
    }))
}

/// An open for `execve`: the caller needs execute permission, which is checked as the caller
/// (`faccessat(X_OK)` with its ids), and may lack read permission (`chmod 001`), so the file is
/// then opened by the server. The kernel reads it for the program; the caller gets no
/// descriptor it could read from.
fn open_for_exec(fs: &Fs, inode: &Inode, flags: u32) -> OpResult<OwnedFd> {
    rustix::fs::accessat(
        fs.proc_dir(),
        inode.fd()?.proc_name(),
        rustix::fs::Access::EXEC_OK,
        rustix::fs::AtFlags::EACCESS,
    )?;
    let _server = crate::fs::creds::AsServer::new();
    open_backing(fs, flags, |f| fs.reopen(inode, f))
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
    let _umask = crate::fs::creds::CallerUmask::new(arg.umask);
    let fd = open_backing(fs, arg.flags, |f| {
        let f = f | extra | OFlags::CLOEXEC;
        Ok(rustix::fs::openat2(dir.fd()?, name, f, mode, resolve)?)
    })?;
    fs.keep_atime(&fd);
    let (id, st) = fs.inodes.adopt(fs.path_fd_of(&fd)?)?;
    let inode = fs.inodes.get(id)?;
    let file = backing_file(fs, &inode, fd)?;
    let (handle, open_flags, backing_id) = file_handle(fs, &inode, file, arg.flags);
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

/// `RELEASE`: the handle goes (and with its descriptor, its `flock` lock), and so do the
/// record locks of owners that locked through it alone (OFD locks); its share of the inode's
/// passthrough registration is dropped.
pub fn release(fs: &Fs, _node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: ReleaseIn = body.arg()?;
    fs.locks.release_handle(arg.fh);
    drop(fs.handles.remove(arg.fh));
    if tracing::enabled!(tracing::Level::DEBUG) {
        tracing::debug!(
            fh = arg.fh,
            "released; holding {}",
            crate::fs::held::held(fs)
        );
    }
    Ok(Answer::empty())
}

/// `FLUSH` (a `close`): the closing owner's POSIX locks on the file go, as POSIX says.
pub fn flush(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: FlushIn = body.arg()?;
    super::locks::flush(fs, node, &arg);
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

/// `FALLOCATE` of node `node` (allocate, keep size, punch hole, zero range...:
/// the mode goes through), under vecio's range lock, so it cannot land inside a
/// read-modify-write of an unaligned direct write through another handle.
pub fn fallocate(fs: &Fs, node: u64, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: FallocateIn = body.arg()?;
    let h = fs.handles.file(arg.fh)?;
    let f = &h.as_file()?.file;
    let mode = rustix::fs::FallocateFlags::from_bits_retain(arg.mode as _);
    f.fallocate(mode, arg.offset, arg.length)?;
    // Natively a caller without CAP_FSETID loses setuid (and setgid with group execute) on
    // fallocate, as on a write. The kernel leaves it to the server and marks nothing; with
    // FUSE_ALLOW_IDMAP it does not even say who the caller is (the request is served as the
    // server, who keeps the bits), so the caller's capability is read from its thread.
    super::killpriv::after_fallocate(fs, node, f.as_fd())?;
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
/// through the server, under vecio's range locks; where it refuses (a direct backing file at
/// an unaligned offset, under `-o direct_io`), vecio copies through its own reads and writes.
pub fn copy_file_range(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: CopyFileRangeIn = body.arg()?;
    if arg.flags != 0 {
        return Err(Errno::INVAL);
    }
    let hin = fs.handles.file(arg.fh_in)?;
    let hout = fs.handles.file(arg.fh_out)?;
    let len = arg.len.min(u32::MAX as u64 & !0xfff) as usize;
    let n =
        hin.as_file()?
            .file
            .copy_range_to(arg.off_in, &hout.as_file()?.file, arg.off_out, len)?;
    Ok(Answer::of(&WriteOut {
        size: n as u32,
        padding: 0,
    }))
}
