//! Direct probes of the kernel, independent of vecio, for checking what `vecio info` reports;
//! and the loop devices and mounts the tests set up (root only), undone on drop.

#![allow(dead_code)]

use std::fs::{File, OpenOptions};
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::process::Command;

/// What a flagged call says about the flag: `Some(true)` accepted (it worked or would block),
/// `Some(false)` refused (`EOPNOTSUPP`, `EINVAL`), `None` another error.
pub fn accepted(r: io::Result<usize>) -> Option<bool> {
    match r {
        Ok(_) => Some(true),
        Err(e) => match e.raw_os_error() {
            Some(libc::EAGAIN) => Some(true),
            Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => Some(false),
            _ => None,
        },
    }
}

/// `preadv2` of 4096 bytes at offset 0 with `flags`.
pub fn preadv2(f: &File, flags: i32) -> io::Result<usize> {
    let mut buf = vec![0u8; 4096];
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: iov describes `buf`, valid and writable for the whole call.
    let r = unsafe { libc::preadv2(f.as_raw_fd(), &iov, 1, 0, flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// `pwritev2` of `data` at offset 0 with `flags`.
pub fn pwritev2(f: &File, flags: i32, data: &[u8]) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: iov describes `data`, valid for reads for the whole call.
    let r = unsafe { libc::pwritev2(f.as_raw_fd(), &iov, 1, 0, flags) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// Whether `open(O_DIRECT)` and one 4096-aligned read of 4096 bytes work.
pub fn o_direct(path: &Path) -> bool {
    let Ok(f) = OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    else {
        return false;
    };
    let layout = std::alloc::Layout::from_size_align(4096, 4096).expect("a valid layout");
    // SAFETY: the layout has a non-zero size; the memory is freed below.
    let p = unsafe { std::alloc::alloc_zeroed(layout) };
    assert!(!p.is_null());
    // SAFETY: p is valid for 4096 bytes until dealloc below.
    let r = unsafe { libc::pread(f.as_raw_fd(), p.cast(), 4096, 0) };
    // SAFETY: p was allocated above with this layout.
    unsafe { std::alloc::dealloc(p, layout) };
    r >= 0
}

/// Whether a buffered read of `path` through a fresh io_uring completes without error.
pub fn uring_read(path: &Path) -> bool {
    let (Ok(mut ring), Ok(f)) = (io_uring::IoUring::new(8), File::open(path)) else {
        return false;
    };
    let mut buf = vec![0u8; 4096];
    let sqe = io_uring::opcode::Read::new(
        io_uring::types::Fd(f.as_raw_fd()),
        buf.as_mut_ptr(),
        buf.len() as u32,
    )
    .offset(0)
    .build();
    // SAFETY: `buf` and `f` outlive the request, which is waited for before they drop.
    if unsafe { ring.submission().push(&sqe) }.is_err() || ring.submit_and_wait(1).is_err() {
        return false;
    }
    let done = ring.completion().next().is_some_and(|c| c.result() >= 0);
    done
}

/// `statx(STATX_DIOALIGN)`: (memory, offset) alignment, when the kernel reports it.
pub fn dio_align(path: &Path) -> Option<(u32, u32)> {
    use rustix::fs::{AtFlags, StatxFlags, CWD};
    let st = rustix::fs::statx(CWD, path, AtFlags::empty(), StatxFlags::DIOALIGN).ok()?;
    let has = StatxFlags::from_bits_retain(st.stx_mask).contains(StatxFlags::DIOALIGN);
    (has && st.stx_dio_offset_align > 0).then_some((st.stx_dio_mem_align, st.stx_dio_offset_align))
}

/// The logical block size of a block device (`BLKSSZGET`).
pub fn logical_block_size(f: &File) -> u32 {
    let mut size: libc::c_int = 0;
    // SAFETY: BLKSSZGET writes one c_int through the pointer, valid for that write.
    let r = unsafe { libc::ioctl(f.as_raw_fd(), libc::BLKSSZGET, &mut size) };
    assert!(r == 0, "BLKSSZGET: {}", io::Error::last_os_error());
    size as u32
}

/// Drops a file from the page cache after writing it back.
pub fn evict(path: &Path) {
    let f = File::open(path).expect("opening to evict");
    f.sync_all().expect("fsync");
    // SAFETY: posix_fadvise only reads its integer arguments.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0);
}

/// True when the tests run as root (needed for loop devices and mounts).
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// Runs a command; `Err` with its stderr when it fails.
pub fn run(cmd: &mut Command) -> Result<String, String> {
    let out = cmd.output().map_err(|e| format!("{cmd:?}: {e}"))?;
    if !out.status.success() {
        return Err(format!(
            "{cmd:?}: {}",
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).trim().to_string())
}

/// A loop device over an image file, detached on drop.
pub struct LoopDevice(pub PathBuf);

impl LoopDevice {
    /// Attaches `image` (buffered: `--direct-io=off`).
    pub fn attach(image: &Path) -> Result<LoopDevice, String> {
        let dev = run(Command::new("losetup")
            .args(["--find", "--show", "--direct-io=off"])
            .arg(image))?;
        Ok(LoopDevice(PathBuf::from(dev)))
    }
}

impl Drop for LoopDevice {
    fn drop(&mut self) {
        let _ = Command::new("losetup").arg("-d").arg(&self.0).output();
    }
}

/// A mount, unmounted on drop.
pub struct Mount(pub PathBuf);

impl Mount {
    /// `mount ARGS... SOURCE TARGET`.
    pub fn new(args: &[&str], source: &Path, target: &Path) -> Result<Mount, String> {
        run(Command::new("mount").args(args).arg(source).arg(target))?;
        Ok(Mount(target.to_path_buf()))
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(&self.0).output();
    }
}
