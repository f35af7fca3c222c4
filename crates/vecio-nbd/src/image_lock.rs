//! qemu's image locks, so that `vecio nbd` and `vecio ublk` do not write an image a virtual
//! machine is running on, and a VM (or `qemu-img resize`) is not started on an image they
//! serve.
//!
//! qemu marks each image it opens with open-file-description read locks on single bytes
//! (`block/file-posix.c`): byte 100 + i for each permission i it holds, byte 200 + i for each
//! it does not let others hold. The permissions, by bit: consistent read, write, write
//! unchanged, resize. A VM's disk holds read and write and does not share write (bytes 100,
//! 101 and 201 in `/proc/locks`, qemu 7.2); qemu-nbd holds read (and write unless `-r`) and
//! shares everything but resize (100, 101, 203). A newcomer takes its
//! own bytes, then tests the others': a byte 200 + i of a permission it wants, or 100 + i of
//! one it does not share, held by another description, and it refuses to open. vecio takes
//! qemu-nbd's permissions, so it refuses and is refused exactly where qemu-nbd would be.

use std::fs::File;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use crate::error::{Error, Result};

/// qemu's first byte of the permissions held.
const PERM_BASE: i64 = 100;
/// qemu's first byte of the permissions not shared.
const SHARED_BASE: i64 = 200;

/// qemu's permissions (`BLK_PERM_*`), by bit, with what a refusal says of each.
const PERMISSIONS: [(&str, &str); 4] = [
    ("consistent read", "read it"),
    ("write", "write it"),
    ("write unchanged", "write it unchanged"),
    ("resize", "resize it"),
];
const READ: u32 = 1 << 0;
const WRITE: u32 = 1 << 1;
const RESIZE: u32 = 1 << 3;
const ALL: u32 = (1 << PERMISSIONS.len()) - 1;

/// How a server uses the image, which says the bytes it locks.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Access {
    /// Reads and writes (qemu-nbd's default): holds read and write, shares all but resize.
    ReadWrite,
    /// Reads only (`-r`): holds read, shares all but resize.
    ReadOnly,
    /// Reads only, whatever others hold (`--force-share`, qemu-nbd's `-U`): shares all.
    ForceShare,
}

impl Access {
    /// The access of a server exporting read-only or not, and forcing the share or not
    /// (`--force-share` counts only with `-r`).
    pub fn of(read_only: bool, force_share: bool) -> Access {
        match (read_only, force_share) {
            (true, true) => Access::ForceShare,
            (true, false) => Access::ReadOnly,
            (false, _) => Access::ReadWrite,
        }
    }

    /// The permissions held and those shared.
    fn permissions(self) -> (u32, u32) {
        match self {
            Access::ReadWrite => (READ | WRITE, ALL & !RESIZE),
            Access::ReadOnly => (READ, ALL & !RESIZE),
            Access::ForceShare => (READ, ALL),
        }
    }
}

/// The locks taken on an image. They belong to the open file description this holds, so they
/// go when the last descriptor of it closes: this one dropped, or a dup of it (a `--fork`
/// child inherits them).
#[derive(Debug)]
pub struct ImageLock {
    _file: File,
}

/// Takes qemu's locks on `path` for `access`, or refuses with
/// [`Error::ImageInUse`] when another process holds the image in a way `access` cannot
/// share. `None`: the file system has no byte-range locks (qemu then goes without too), or
/// the file cannot be opened for reading (the server's own open then fails, saying why).
pub fn lock(path: &Path, access: Access) -> Result<Option<ImageLock>> {
    // A file this cannot open, the server cannot serve either: its own open says why.
    let Ok(file) = open(path) else { return Ok(None) };
    lock_open(file, path, access)
}

/// `path` opened for reading, which read locks need (a FIFO's open must not wait for a
/// writer).
fn open(path: &Path) -> std::io::Result<File> {
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
}

/// The permission numbers whose bits are set in `set`.
fn bits(set: u32) -> impl Iterator<Item = usize> {
    (0..PERMISSIONS.len()).filter(move |i| set & (1 << i) != 0)
}

/// As [`lock`], on a file already open (`path` names it in messages). The locks belong to
/// its open file description: give a `dup` of the descriptor a server serves from, and they
/// last while either is open.
pub fn lock_open(file: File, path: &Path, access: Access) -> Result<Option<ImageLock>> {
    let io = |source| Error::Lock {
        path: path.to_path_buf(),
        source,
    };
    let (held, shared) = access.permissions();
    // Ours first, then theirs, as qemu does: two servers starting at once see each other.
    let ours = bits(held).map(|i| PERM_BASE + i as i64);
    let not_shared = bits(ALL & !shared).map(|i| SHARED_BASE + i as i64);
    for byte in ours.chain(not_shared) {
        match read_lock(&file, byte) {
            Ok(()) => {}
            Err(e) if unsupported(&e) => {
                tracing::warn!(file = %path.display(), "no byte-range locks here: {e}");
                return Ok(None);
            }
            Err(e) if held_by_another(&e) => return Err(in_use(path, byte)),
            Err(e) => return Err(io(e)),
        }
    }
    let theirs = bits(held).map(|i| SHARED_BASE + i as i64);
    let unshared = bits(ALL & !shared).map(|i| PERM_BASE + i as i64);
    for byte in theirs.chain(unshared) {
        if another_holds(&file, byte).map_err(io)? {
            return Err(in_use(path, byte));
        }
    }
    Ok(Some(ImageLock { _file: file }))
}

/// What other processes hold on `path` under qemu's image locks, in words (`vecio info`):
/// the permissions held and those not shared, and how vecio nbd and vecio ublk would serve
/// the image. `None` when the file cannot be opened or takes no byte-range locks.
pub fn holders(path: &Path) -> Option<String> {
    let file = open(path).ok()?;
    let set = |base: i64| -> Option<u32> {
        let mut bits = 0;
        for i in 0..PERMISSIONS.len() {
            bits |= u32::from(another_holds(&file, base + i as i64).ok()?) << i;
        }
        Some(bits)
    };
    let (held, not_shared) = (set(PERM_BASE)?, set(SHARED_BASE)?);
    if held | not_shared == 0 {
        return Some("none (no process holds it under qemu's image locks)".into());
    }
    let names = |set: u32| -> String {
        let n: Vec<&str> = bits(set).map(|i| PERMISSIONS[i].0).collect();
        if n.is_empty() {
            "nothing".into()
        } else {
            n.join(", ")
        }
    };
    // The first access whose wants nobody forbids and whose unshared nobody holds.
    let allows = |a: Access| {
        let (wants, shares) = a.permissions();
        wants & not_shared == 0 && held & !shares == 0
    };
    let serves = [
        (Access::ReadWrite, "read-write"),
        (Access::ReadOnly, "only read-only (-r)"),
        (Access::ForceShare, "only with -r --force-share"),
    ]
    .into_iter()
    .find(|(a, _)| allows(*a))
    .map_or("not at all", |(_, how)| how);
    let sharing = match not_shared {
        0 => "share everything".to_string(),
        bits => format!("do not share {}", names(bits)),
    };
    Some(format!(
        "others hold {}, and {sharing}: vecio nbd and vecio ublk would serve it {serves}",
        names(held)
    ))
}

/// What a refusal over qemu's lock byte `byte` says.
fn in_use(path: &Path, byte: i64) -> Error {
    let (name, verb) = PERMISSIONS[(byte % 100) as usize];
    let what = if byte >= SHARED_BASE {
        format!("lets no one else {verb} (qemu: Failed to get \"{name}\" lock)")
    } else {
        format!("holds it with permission to {verb} (qemu: Failed to get shared \"{name}\" lock)")
    };
    let hint = match byte - SHARED_BASE {
        1 => "; -r serves it read-only beside that process",
        0 => "; -r --force-share serves it read-only anyway",
        _ => "",
    };
    Error::ImageInUse(format!(
        "{}: another process is using the image (a virtual machine, qemu-img?): it {what}{hint}",
        path.display()
    ))
}

/// `F_OFD_SETLK` of a read lock on `byte`.
pub(crate) fn read_lock(file: &File, byte: i64) -> std::io::Result<()> {
    let mut fl = one_byte(libc::F_RDLCK, byte);
    // SAFETY: `fl` is a valid `flock` for the call to read, and the descriptor is open.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_SETLK, &mut fl) };
    if r == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(())
}

/// Whether another open file description holds a lock on `byte` (`F_OFD_GETLK` of a write
/// lock: any lock of another's conflicts with it, ours never do).
pub(crate) fn another_holds(file: &File, byte: i64) -> std::io::Result<bool> {
    let mut fl = one_byte(libc::F_WRLCK, byte);
    // SAFETY: `fl` is a valid `flock` the call fills in, and the descriptor is open.
    let r = unsafe { libc::fcntl(file.as_raw_fd(), libc::F_OFD_GETLK, &mut fl) };
    if r == -1 {
        return Err(std::io::Error::last_os_error());
    }
    Ok(fl.l_type != libc::F_UNLCK as libc::c_short)
}

fn one_byte(kind: libc::c_int, byte: i64) -> libc::flock {
    // SAFETY: `flock` is plain data; all zeros is a valid value, filled in below.
    let mut fl: libc::flock = unsafe { std::mem::zeroed() };
    fl.l_type = kind as libc::c_short;
    fl.l_whence = libc::SEEK_SET as libc::c_short;
    fl.l_start = byte;
    fl.l_len = 1;
    fl
}

/// The file system (or the kind of file) takes no byte-range locks.
fn unsupported(e: &std::io::Error) -> bool {
    matches!(
        e.raw_os_error(),
        Some(libc::EINVAL | libc::ENOLCK | libc::EOPNOTSUPP | libc::EBADF)
    )
}

/// Another description holds a conflicting lock on the byte.
fn held_by_another(e: &std::io::Error) -> bool {
    matches!(e.raw_os_error(), Some(libc::EAGAIN | libc::EACCES))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a lock holds, as `/proc/locks` lists them for the file's inode.
    fn locked_bytes(path: &Path) -> Vec<(i64, i64)> {
        use std::os::unix::fs::MetadataExt;
        let ino = std::fs::metadata(path).unwrap().ino();
        let text = std::fs::read_to_string("/proc/locks").unwrap();
        let mut out: Vec<(i64, i64)> = text
            .lines()
            .filter(|l| l.contains("OFDLCK") && l.contains(&format!(":{ino} ")))
            .filter_map(|l| {
                let f: Vec<&str> = l.split_whitespace().collect();
                let n = f.len();
                Some((f[n - 2].parse().ok()?, f[n - 1].parse().ok()?))
            })
            .collect();
        out.sort();
        out
    }

    #[test]
    fn locks_what_qemu_nbd_locks_and_refuses_what_it_refuses() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        std::fs::write(&img, vec![0u8; 4096]).unwrap();
        let writer = lock(&img, Access::ReadWrite).unwrap().expect("locks on this fs");
        // qemu-nbd's bytes: read and write held, resize not shared.
        assert_eq!(locked_bytes(&img), [(100, 101), (203, 203)]);
        // A second writer shares write, as two qemu-nbds do; a reader too.
        let second = lock(&img, Access::ReadWrite).unwrap();
        let reader = lock(&img, Access::ReadOnly).unwrap();
        drop((second, reader, writer));
        assert_eq!(locked_bytes(&img), []);

        // A VM's disk: read and write held, write not shared.
        let vm = File::open(&img).unwrap();
        for byte in [100, 101, 201] {
            read_lock(&vm, byte).unwrap();
        }
        let err = lock(&img, Access::ReadWrite).unwrap_err().to_string();
        assert!(err.contains("lets no one else write it") && err.contains("-r"), "{err}");
        // What a refused server took is let go.
        assert_eq!(locked_bytes(&img), [(100, 101), (201, 201)]);
        // Read-only serving beside it is what qemu-nbd -r allows too.
        assert!(lock(&img, Access::ReadOnly).unwrap().is_some());
        drop(vm);

        // Something resizing it: neither a reader nor a writer that does not share resize.
        let resizer = File::open(&img).unwrap();
        read_lock(&resizer, 103).unwrap();
        let err = lock(&img, Access::ReadOnly).unwrap_err().to_string();
        assert!(err.contains("permission to resize it"), "{err}");
        assert!(lock(&img, Access::ForceShare).unwrap().is_some());
        let said = holders(&img).unwrap();
        let want = "others hold resize, and share everything: vecio nbd and vecio ublk would \
                    serve it only with -r --force-share";
        assert_eq!(said, want);
        drop(resizer);
        assert!(holders(&img).unwrap().starts_with("none"));
    }

    #[test]
    fn says_who_holds_a_vm_disk() {
        let dir = tempfile::tempdir().unwrap();
        let img = dir.path().join("disk.img");
        std::fs::write(&img, [0u8; 512]).unwrap();
        let vm = File::open(&img).unwrap();
        for byte in [100, 101, 201] {
            read_lock(&vm, byte).unwrap();
        }
        let said = holders(&img).unwrap();
        assert_eq!(
            said,
            "others hold consistent read, write, and do not share write: vecio nbd and vecio \
             ublk would serve it only read-only (-r)"
        );
    }
}
