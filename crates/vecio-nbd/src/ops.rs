//! The commands that are not reads or writes: flush, trim, write zeroes, block status and
//! cache. Each is a blocking call on the export; the connection drains its own requests in
//! flight before it calls one (see `conn.rs`), so none runs while this connection holds range
//! locks.
//!
//! Errors are NBD error values ([`Errno`]).

use rustix::fs::SeekFrom;
use rustix::io::Errno as OsErrno;

use crate::export::{Cache, Export};
use crate::proto::{AllocFlags, CmdFlags, Errno, Extent};

/// Most extents one block-status reply carries (the protocol asks for at most 2^20).
pub(crate) const MAX_EXTENTS: usize = 1 << 16;

fn os(e: OsErrno) -> Errno {
    Errno::from_os(e.raw_os_error())
}

/// `NBD_CMD_FLUSH`: `fdatasync(2)` on the shared file, covering every connection's writes.
pub(crate) fn flush(export: &Export) -> Result<(), Errno> {
    export.flush().map_err(|e| Errno::from_io(&e))
}

/// `NBD_CMD_TRIM`: punches a hole (`FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE`). A trim is
/// advisory: where the file system cannot punch, nothing is done and the trim succeeds.
pub(crate) fn trim(export: &Export, offset: u64, len: u64, flags: CmdFlags) -> Result<(), Errno> {
    match punch(export, offset, len) {
        Ok(()) => {}
        Err(e) if unsupported(e) => {}
        Err(e) => return Err(os(e)),
    }
    if flags.contains(CmdFlags::FUA) {
        flush(export)?;
    }
    Ok(())
}

/// `NBD_CMD_WRITE_ZEROES`. Without `NO_HOLE` the range is punched (it reads back as zeroes);
/// with it, or where punching is refused, it is zeroed in place (`FALLOC_FL_ZERO_RANGE`), and
/// where that is refused too, zeroes are written. With `FAST_ZERO`, the write fallback is not
/// taken: the request fails with `NBD_ENOTSUP` before anything changes.
pub(crate) fn write_zeroes(
    export: &Export,
    offset: u64,
    len: u64,
    flags: CmdFlags,
) -> Result<(), Errno> {
    {
        // vecio holds the blocks each fallocate touches exclusively, so no read-modify-write
        // of an unaligned neighbour can write stale bytes back over them.
        let mut done = false;
        if !flags.contains(CmdFlags::NO_HOLE) {
            match punch(export, offset, len) {
                Ok(()) => done = true,
                Err(e) if unsupported(e) => {}
                Err(e) => return Err(os(e)),
            }
        }
        if !done {
            match export.file().zero_range(offset, len).map_err(io_errno) {
                Ok(()) => done = true,
                Err(e) if unsupported(e) => {}
                Err(e) => return Err(os(e)),
            }
        }
        if !done {
            if flags.contains(CmdFlags::FAST_ZERO) {
                return Err(Errno::ENOTSUP);
            }
            write_zero_bytes(export, offset, len)?;
        }
    }
    if flags.contains(CmdFlags::FUA) {
        flush(export)?;
    }
    Ok(())
}

fn punch(export: &Export, offset: u64, len: u64) -> Result<(), OsErrno> {
    export.holes().punched();
    export.file().punch_hole(offset, len).map_err(io_errno)
}

fn io_errno(e: std::io::Error) -> OsErrno {
    OsErrno::from_raw_os_error(e.raw_os_error().unwrap_or(libc::EIO))
}

/// `fallocate` modes a file system or device may not have.
fn unsupported(e: OsErrno) -> bool {
    e == OsErrno::OPNOTSUPP || e == OsErrno::NOSYS || e == OsErrno::NODEV || e == OsErrno::INVAL
}

/// Writes zero bytes over the range through vecio (aligned chunks go straight to the file;
/// unaligned edges are read-modify-written under vecio's range lock).
fn write_zero_bytes(export: &Export, mut offset: u64, len: u64) -> Result<(), Errno> {
    let zeros = export.zeros();
    let end = offset + len;
    while offset < end {
        let n = ((end - offset) as usize).min(zeros.len());
        match export.file().write_at(&zeros[..n], offset) {
            Ok(0) => return Err(Errno::EIO),
            Ok(w) => offset += w as u64,
            Err(e) => return Err(Errno::from_os(e.raw_os_error().unwrap_or(libc::EIO))),
        }
    }
    Ok(())
}

/// `NBD_CMD_CACHE`: `posix_fadvise(WILLNEED)` for a buffered export. A direct export has no
/// page cache to fill (filling it would be the double caching direct I/O exists to avoid),
/// so the hint is accepted and does nothing.
pub(crate) fn cache(export: &Export, offset: u64, len: u64) -> Result<(), Errno> {
    if export.cache() == Cache::Writeback {
        let len = std::num::NonZeroU64::new(len);
        // Advice only: a refusal changes nothing for the client.
        let _ = rustix::fs::fadvise(export.file(), offset, len, rustix::fs::Advice::WillNeed);
    }
    Ok(())
}

/// `NBD_CMD_BLOCK_STATUS` for `base:allocation`: extents from `SEEK_DATA`/`SEEK_HOLE`, holes
/// reported as `HOLE | ZERO`, data as 0. Where the file cannot tell, the whole range is
/// reported as data (status 0 is always safe). With `one`, a single extent. The extents
/// cover the range, or a first part of it when [`MAX_EXTENTS`] are not enough.
pub(crate) fn block_status(
    export: &Export,
    offset: u64,
    len: u64,
    one: bool,
) -> Result<Vec<Extent>, Errno> {
    let end = offset.saturating_add(len);
    let fd = export.file();
    let mut out: Vec<Extent> = Vec::new();
    let mut pos = offset;
    while pos < end && out.len() < MAX_EXTENTS {
        let (upto, flags) = match rustix::fs::seek(fd, SeekFrom::Data(pos)) {
            Ok(data) if data > pos => (data, AllocFlags::HOLE | AllocFlags::ZERO),
            Ok(_) => match rustix::fs::seek(fd, SeekFrom::Hole(pos)) {
                Ok(hole) if hole > pos => (hole, AllocFlags::empty()),
                _ => (end, AllocFlags::empty()),
            },
            // No data from here to the end of the file.
            Err(OsErrno::NXIO) => (end, AllocFlags::HOLE | AllocFlags::ZERO),
            Err(_) => (end, AllocFlags::empty()),
        };
        let upto = upto.min(end);
        let n = upto - pos;
        match out.last_mut() {
            Some(last) if last.flags == flags.bits() => last.len += n,
            _ => out.push(Extent {
                len: n,
                flags: flags.bits(),
            }),
        }
        pos = upto;
        if one {
            break;
        }
    }
    if out.is_empty() {
        out.push(Extent { len, flags: 0 });
    }
    if one {
        out.truncate(1);
    }
    Ok(out)
}
