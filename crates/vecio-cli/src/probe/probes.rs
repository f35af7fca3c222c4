//! The capability probes of `vecio info`: one real call per flag or interface, its result
//! classified (worked, would block, refused, failed) with the kernel's own error named.

use std::fs::OpenOptions;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;

use anyhow::{Context, Result};
use serde::{Deserialize, Serialize};
use vecio::engine::{UringEngine, UringOptions};
use vecio::{AlignedBuf, Batch, Direct, File, IoIter, RwFlags};

use super::{InfoOptions, Kind};

/// Bytes each probe moves.
const PROBE_LEN: usize = 4096;

/// What the kernel did with one probe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    /// The call succeeded.
    Works,
    /// `EAGAIN`: the flag is accepted, but this call would have blocked (e.g. nothing cached).
    WouldBlock,
    /// `EOPNOTSUPP` or `EINVAL`: the file, filesystem or kernel refuses it.
    Refused,
    /// Another error (named in the detail).
    Failed,
    /// Not tried (the detail says why).
    NotProbed,
}

impl Outcome {
    /// Its name in human output.
    pub fn name(self) -> &'static str {
        match self {
            Outcome::Works => "works",
            Outcome::WouldBlock => "works (would block now)",
            Outcome::Refused => "refused",
            Outcome::Failed => "failed",
            Outcome::NotProbed => "not probed",
        }
    }

    /// True when the kernel accepts the flag on this file (it worked or would block).
    pub fn accepted(self) -> Option<bool> {
        match self {
            Outcome::Works | Outcome::WouldBlock => Some(true),
            Outcome::Refused => Some(false),
            Outcome::Failed | Outcome::NotProbed => None,
        }
    }
}

/// One probe's outcome and what exactly happened.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Probe {
    /// The outcome.
    pub outcome: Outcome,
    /// The call and its result, e.g. `preadv2(RWF_NOWAIT): 4096 bytes`.
    pub detail: String,
}

impl Probe {
    fn new(outcome: Outcome, detail: impl Into<String>) -> Probe {
        Probe {
            outcome,
            detail: detail.into(),
        }
    }

    /// Classifies the result of a system call named `call`.
    fn from_call(call: &str, r: io::Result<usize>) -> Probe {
        match r {
            Ok(n) => Probe::new(Outcome::Works, format!("{call}: {n} bytes")),
            Err(e) => {
                let outcome = match e.raw_os_error() {
                    Some(libc::EAGAIN) => Outcome::WouldBlock,
                    Some(libc::EOPNOTSUPP) | Some(libc::EINVAL) => Outcome::Refused,
                    _ => Outcome::Failed,
                };
                Probe::new(outcome, format!("{call}: {}", errno_text(&e)))
            }
        }
    }
}

/// Everything probed.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Capabilities {
    /// `open(O_DIRECT)` and one aligned direct read.
    pub o_direct: Probe,
    /// `preadv2(RWF_NOWAIT)`, buffered.
    pub nowait_read: Probe,
    /// `pwritev2(RWF_NOWAIT)`, buffered.
    pub nowait_write: Probe,
    /// `pwritev2(RWF_DSYNC)`.
    pub dsync_write: Probe,
    /// `preadv2(RWF_DONTCACHE)`.
    pub dontcache_read: Probe,
    /// `pwritev2(RWF_DONTCACHE)`.
    pub dontcache_write: Probe,
    /// A read through io_uring (and an `O_DIRECT` one where direct I/O works).
    pub io_uring: Probe,
}

impl Capabilities {
    /// Every probe with its name in human output, in order.
    pub fn named(&self) -> [(&'static str, &Probe); 7] {
        [
            ("O_DIRECT", &self.o_direct),
            ("RWF_NOWAIT read", &self.nowait_read),
            ("RWF_NOWAIT write", &self.nowait_write),
            ("RWF_DSYNC write", &self.dsync_write),
            ("RWF_DONTCACHE read", &self.dontcache_read),
            ("RWF_DONTCACHE write", &self.dontcache_write),
            ("io_uring", &self.io_uring),
        ]
    }
}

/// A temporary file holding 64 KiB of data, written back, removed on drop.
pub(super) struct ProbeFile(tempfile::NamedTempFile);

impl ProbeFile {
    /// Creates one in `dir`.
    pub(super) fn create_in(dir: &Path) -> Result<ProbeFile> {
        let mut t = tempfile::Builder::new()
            .prefix(".vecio-info-")
            .tempfile_in(dir)
            .with_context(|| format!("creating a probe file in {}", dir.display()))?;
        t.write_all(&[0x5a; 16 * PROBE_LEN])
            .and_then(|()| t.as_file().sync_all())
            .with_context(|| format!("writing a probe file in {}", dir.display()))?;
        Ok(ProbeFile(t))
    }

    /// Its path.
    pub(super) fn path(&self) -> &Path {
        self.0.path()
    }
}

/// Runs every probe: reads on `read_path`, writes where [`write_target`] says. Returns the
/// capabilities and the file the write probes ran on.
pub(super) fn run(
    read_path: &Path,
    kind: Kind,
    dir_probe: Option<&ProbeFile>,
    opts: &InfoOptions,
) -> (Capabilities, Option<String>) {
    let o_direct = probe_direct(read_path);
    let reader = OpenOptions::new().read(true).open(read_path);
    let read = |flag: RwFlags, name: &str| match &reader {
        Ok(f) => Probe::from_call(
            &format!("preadv2({name})"),
            preadv2(f.as_raw_fd(), flag, PROBE_LEN),
        ),
        Err(e) => Probe::new(Outcome::Failed, format!("open: {}", errno_text(e))),
    };
    let nowait_read = read(RwFlags::NOWAIT, "RWF_NOWAIT");
    let dontcache_read = read(RwFlags::DONTCACHE, "RWF_DONTCACHE");
    let io_uring = probe_uring(read_path, o_direct.outcome == Outcome::Works);

    let (writes, target) = match write_target(read_path, kind, dir_probe, opts) {
        Ok(t) => (t.run(), Some(t.label)),
        Err(why) => {
            let none = || Probe::new(Outcome::NotProbed, why.clone());
            ([none(), none(), none()], None)
        }
    };
    let [nowait_write, dsync_write, dontcache_write] = writes;
    (
        Capabilities {
            o_direct,
            nowait_read,
            nowait_write,
            dsync_write,
            dontcache_read,
            dontcache_write,
            io_uring,
        },
        target,
    )
}

/// `open(O_DIRECT)`, then one aligned read of [`PROBE_LEN`] bytes at offset 0.
fn probe_direct(path: &Path) -> Probe {
    let f = match OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_DIRECT)
        .open(path)
    {
        Ok(f) => f,
        Err(e) => return Probe::from_call("open(O_DIRECT)", Err(e)),
    };
    let mut buf = AlignedBuf::page_aligned(PROBE_LEN);
    match f.read_at(&mut buf, 0) {
        Ok(n) => Probe::new(
            Outcome::Works,
            format!("open(O_DIRECT) and an aligned {PROBE_LEN}-byte read: {n} bytes"),
        ),
        Err(e) => Probe::from_call("open(O_DIRECT), then an aligned read", Err(e)),
    }
}

/// One buffered read through a fresh io_uring, and a direct one when direct I/O works.
fn probe_uring(path: &Path, direct: bool) -> Probe {
    let mut engine = match UringEngine::new(UringOptions {
        entries: 8,
        fixed_files: 0,
        fixed_buffers: 0,
        single_thread: false,
    }) {
        Ok(e) => e,
        Err(e) => {
            let outcome = match e.raw_os_error() {
                Some(libc::ENOSYS) | Some(libc::EPERM) | Some(libc::EOPNOTSUPP) => Outcome::Refused,
                _ => Outcome::Failed,
            };
            return Probe::new(outcome, format!("io_uring_setup: {e}"));
        }
    };
    let mut read = |mode: Direct| -> std::result::Result<usize, String> {
        let file = File::options()
            .read(true)
            .direct(mode)
            .open(path)
            .map_err(|e| e.to_string())?;
        let mut buf = AlignedBuf::page_aligned(PROBE_LEN);
        let mut batch = Batch::new();
        batch.push(&file, 0, IoIter::read_into(&mut buf), RwFlags::empty());
        match batch.run(&mut engine).pop() {
            Some(Ok(n)) => Ok(n),
            Some(Err(e)) => Err(e.to_string()),
            None => Err("no completion".into()),
        }
    };
    let buffered = match read(Direct::Off) {
        Ok(n) => n,
        Err(e) => return Probe::new(Outcome::Failed, format!("io_uring buffered read: {e}")),
    };
    let mut detail = format!("io_uring buffered read: {buffered} bytes");
    if direct {
        match read(Direct::On) {
            Ok(n) => detail += &format!("; O_DIRECT read: {n} bytes"),
            Err(e) => detail += &format!("; O_DIRECT read failed: {e}"),
        }
    }
    Probe::new(Outcome::Works, detail)
}

/// Where write probes run: an open file, the offset, and the bytes to write there.
struct WriteTarget {
    file: std::fs::File,
    data: Vec<u8>,
    label: String,
    /// Keeps a temporary file alive until the probes ran.
    _tmp: Option<ProbeFile>,
}

impl WriteTarget {
    /// `pwritev2` of the target's bytes at offset 0 with each flag.
    fn run(&self) -> [Probe; 3] {
        let fd = self.file.as_raw_fd();
        let write = |flag: RwFlags, name: &str| {
            Probe::from_call(&format!("pwritev2({name})"), pwritev2(fd, flag, &self.data))
        };
        [
            write(RwFlags::NOWAIT, "RWF_NOWAIT"),
            write(RwFlags::DSYNC, "RWF_DSYNC"),
            write(RwFlags::DONTCACHE, "RWF_DONTCACHE"),
        ]
    }
}

/// Picks where the write probes run, or says why they do not.
fn write_target(
    path: &Path,
    kind: Kind,
    dir_probe: Option<&ProbeFile>,
    opts: &InfoOptions,
) -> std::result::Result<WriteTarget, String> {
    let open_rw = |p: &Path, flags: i32| {
        OpenOptions::new()
            .read(true)
            .write(true)
            .custom_flags(flags)
            .open(p)
    };
    match kind {
        Kind::Directory | Kind::Regular => {
            let (tmp, p) = match dir_probe {
                Some(d) => (None, d.path().to_path_buf()),
                None => {
                    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
                    let t = ProbeFile::create_in(dir.unwrap_or(Path::new(".")))
                        .map_err(|e| format!("no temporary file beside it: {e:#}"))?;
                    let p = t.path().to_path_buf();
                    (Some(t), p)
                }
            };
            let file = open_rw(&p, 0).map_err(|e| format!("open: {}", errno_text(&e)))?;
            Ok(WriteTarget {
                file,
                data: vec![0xa5; PROBE_LEN],
                label: match kind {
                    Kind::Directory => "the temporary read-probe file".into(),
                    _ => "a temporary file beside it (the file itself is not written)".into(),
                },
                _tmp: tmp,
            })
        }
        Kind::Block if !opts.write_device => Err("not probed on a block device unless asked \
             (vecio info --write rewrites its first block with its own bytes)"
            .into()),
        Kind::Block => {
            let file = open_rw(path, libc::O_EXCL).map_err(|e| match e.raw_os_error() {
                Some(libc::EBUSY) => "device in use (mounted or held): not written".to_string(),
                _ => format!("open(O_RDWR|O_EXCL): {}", errno_text(&e)),
            })?;
            let mut data = vec![0u8; PROBE_LEN];
            let n = file
                .read_at(&mut data, 0)
                .map_err(|e| format!("reading the first block: {}", errno_text(&e)))?;
            data.truncate(n);
            Ok(WriteTarget {
                file,
                data,
                label: format!(
                    "{} itself: its first {n} bytes rewritten with their own data",
                    path.display()
                ),
                _tmp: None,
            })
        }
    }
}

/// `preadv2(fd, one buffer of len bytes, offset 0, flags)`.
fn preadv2(fd: RawFd, flags: RwFlags, len: usize) -> io::Result<usize> {
    let mut buf = vec![0u8; len];
    let iov = libc::iovec {
        iov_base: buf.as_mut_ptr().cast(),
        iov_len: buf.len(),
    };
    // SAFETY: iov describes `buf`, valid and writable for its length for the whole call.
    let r = unsafe { libc::preadv2(fd, &iov, 1, 0, flags.to_kernel()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// `pwritev2(fd, data, offset 0, flags)`.
fn pwritev2(fd: RawFd, flags: RwFlags, data: &[u8]) -> io::Result<usize> {
    let iov = libc::iovec {
        iov_base: data.as_ptr() as *mut libc::c_void,
        iov_len: data.len(),
    };
    // SAFETY: iov describes `data`, valid for reads of its length for the whole call; the
    // kernel does not write through it.
    let r = unsafe { libc::pwritev2(fd, &iov, 1, 0, flags.to_kernel()) };
    if r < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(r as usize)
}

/// `EOPNOTSUPP (Operation not supported)`: the errno's name and the C library's text.
pub(super) fn errno_text(e: &io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(libc::EAGAIN) => "EAGAIN",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::EPERM) => "EPERM",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EBUSY) => "EBUSY",
        Some(libc::EROFS) => "EROFS",
        Some(libc::ENOSYS) => "ENOSYS",
        Some(libc::EIO) => "EIO",
        _ => return e.to_string(),
    };
    let text = e.to_string();
    let text = text.split(" (os error").next().unwrap_or(&text);
    format!("{name} ({text})")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_results() {
        let p = Probe::from_call("x", Ok(4096));
        assert_eq!(
            (p.outcome, p.detail.as_str()),
            (Outcome::Works, "x: 4096 bytes")
        );
        let e = |n| Err(io::Error::from_raw_os_error(n));
        assert_eq!(
            Probe::from_call("x", e(libc::EAGAIN)).outcome,
            Outcome::WouldBlock
        );
        let refused = Probe::from_call("x", e(libc::EOPNOTSUPP));
        assert_eq!(refused.outcome, Outcome::Refused);
        assert!(
            refused.detail.starts_with("x: EOPNOTSUPP ("),
            "{}",
            refused.detail
        );
        assert_eq!(Probe::from_call("x", e(libc::EIO)).outcome, Outcome::Failed);
        assert_eq!(Outcome::WouldBlock.accepted(), Some(true));
        assert_eq!(Outcome::Refused.accepted(), Some(false));
        assert_eq!(Outcome::NotProbed.accepted(), None);
    }
}
