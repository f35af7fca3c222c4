//! Directories: opendir, readdir, readdirplus, releasedir, fsyncdir.

use std::mem::MaybeUninit;

use rustix::fs::{OFlags, SeekFrom};
use zerocopy::IntoBytes;

use super::Answer;
use crate::abi::request::Body;
use crate::abi::{Dirent, EntryOut, FsyncIn, OpenOut, ReadIn, ReleaseIn};
use crate::error::{Errno, OpResult};
use crate::fs::attr::from_stat;
use crate::fs::handle::dir_handle;
use crate::fs::Fs;

/// `OPENDIR`.
pub fn opendir(fs: &Fs, node: u64) -> OpResult<Answer> {
    let inode = fs.inodes.get(node)?;
    let fd = fs.reopen(&inode, OFlags::RDONLY | OFlags::DIRECTORY)?;
    fs.keep_atime(&fd);
    let fh = fs.handles.insert(dir_handle(fd, inode.opened()));
    Ok(Answer::of(&OpenOut {
        fh,
        open_flags: 0,
        backing_id: 0,
    }))
}

fn align8(n: usize) -> usize {
    (n + 7) & !7
}

/// `READDIR` and `READDIRPLUS`: entries from the kernel's offset (a `d_off` cookie of the
/// backing directory) until the reply is full. `READDIRPLUS` looks each entry up (one more
/// kernel reference each) except `.` and `..`, which go with node id 0.
pub fn readdir(fs: &Fs, node: u64, body: &mut Body<'_>, plus: bool) -> OpResult<Answer> {
    let arg: ReadIn = body.arg()?;
    let handle = fs.handles.get(arg.fh)?;
    let dir = handle.as_dir()?;
    let fd = dir.fd.lock().unwrap_or_else(|p| p.into_inner());
    rustix::fs::seek(&*fd, SeekFrom::Start(arg.offset))?;
    let size = arg.size as usize;
    let mut out = Vec::with_capacity(size.min(64 << 10));
    let mut space = vec![MaybeUninit::<u8>::uninit(); 32 << 10];
    let mut entries = rustix::fs::RawDir::new(&*fd, &mut space);
    let header_len = std::mem::size_of::<Dirent>()
        + if plus {
            std::mem::size_of::<EntryOut>()
        } else {
            0
        };
    while let Some(entry) = entries.next() {
        let entry = entry.map_err(Errno::from)?;
        let name = entry.file_name().to_bytes();
        let rec = align8(header_len + name.len());
        if out.len() + rec > size {
            break;
        }
        let typ = entry.file_type().as_raw_mode() >> 12;
        if plus {
            let dots = name == b"." || name == b"..";
            let e = if dots {
                bare(&entry)
            } else {
                match fs.inodes.lookup(node, entry.file_name()) {
                    Ok((id, st)) => fs.cfg.timeouts.entry(id, from_stat(&st)),
                    // Gone since getdents: leave it out, as a later readdir would.
                    Err(e) if e == Errno::NOENT => continue,
                    // Any other failure (EMFILE...): the name without attributes (node id
                    // 0, as for the dots), which the kernel lists and looks up later, rather
                    // than a listing that silently misses it.
                    Err(_) => bare(&entry),
                }
            };
            out.extend_from_slice(e.as_bytes());
        }
        let d = Dirent {
            ino: entry.ino(),
            off: entry.next_entry_cookie(),
            namelen: name.len() as u32,
            typ,
        };
        out.extend_from_slice(d.as_bytes());
        out.extend_from_slice(name);
        out.resize(align8(out.len()), 0);
    }
    Ok(Answer::Bytes(out))
}

/// A `READDIRPLUS` entry without a node: the kernel lists the name and leaves it unlooked-up.
fn bare(entry: &rustix::fs::RawDirEntry<'_>) -> EntryOut {
    let mut e = EntryOut::default();
    e.attr.ino = entry.ino();
    e.attr.mode = entry.file_type().as_raw_mode();
    e
}

/// `RELEASEDIR`.
pub fn releasedir(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: ReleaseIn = body.arg()?;
    fs.handles.remove(arg.fh);
    Ok(Answer::empty())
}

/// `FSYNCDIR`.
pub fn fsyncdir(fs: &Fs, body: &mut Body<'_>) -> OpResult<Answer> {
    let arg: FsyncIn = body.arg()?;
    let handle = fs.handles.get(arg.fh)?;
    let fd = handle
        .as_dir()?
        .fd
        .lock()
        .unwrap_or_else(|p| p.into_inner());
    rustix::fs::fsync(&*fd)?;
    Ok(Answer::empty())
}
