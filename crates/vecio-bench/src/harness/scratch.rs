//! The file a benchmark runs on: the user's file or device, or a scratch file vecio creates,
//! fills with real data and deletes (docs/report.md, "The harness").

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rand::RngCore;

use crate::harness::cleanup::{self, ScratchDir, Tracked};

/// Size of one fill write.
pub const FILL_CHUNK: usize = 1 << 20;

/// Alignment of fill buffers, offsets and created file sizes; covers every logical block size
/// Linux supports (512 to 4096).
pub const FILL_ALIGN: usize = 4096;

/// Where a [`ScratchFile`]'s bytes come from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// A block device given by the user, used as it is.
    BlockDevice,
    /// An existing regular file given by the user, used as it is.
    UserFile,
    /// A file vecio created and filled; deleted on drop.
    Created,
}

/// A file or block device of at least the requested size, ready for direct I/O.
#[derive(Debug)]
pub struct ScratchFile {
    path: PathBuf,
    len: u64,
    origin: Origin,
    /// The temporary directory holding a created file; dropping it removes the directory.
    _dir: Option<ScratchDir>,
    /// A created file stays registered for removal if the run is stopped.
    _tracked: Option<Tracked>,
}

impl ScratchFile {
    /// Prepares a file of at least `size` bytes; see [`ScratchFile::prepare_with_progress`].
    pub fn prepare(dir: Option<&Path>, path: Option<PathBuf>, size: u64) -> Result<ScratchFile> {
        Self::prepare_with_progress(dir, path, size, &mut |_| {})
    }

    /// [`prepare_with_progress`](Self::prepare_with_progress) behind a byte-count progress
    /// bar named `label`.
    pub fn prepare_with_bar(
        label: &str,
        dir: Option<&Path>,
        path: Option<PathBuf>,
        size: u64,
    ) -> Result<ScratchFile> {
        let phase = crate::harness::progress::Phase::bytes(label, size);
        Self::prepare_with_progress(dir, path, size, &mut |done| phase.set_position(done))
    }

    /// Prepares a file of at least `size` bytes, calling `progress` with the bytes written so
    /// far while filling a created file. A block device or an existing regular file at `path`
    /// is used as it is (never written here, truncated nor deleted), and must hold `size`
    /// bytes. A `path` that does not exist is created, filled and deleted on drop; without a
    /// `path` the file goes in a new temporary directory under `dir` (default: the current
    /// directory), removed on drop. Created files are `size` rounded up to [`FILL_ALIGN`].
    pub fn prepare_with_progress(
        dir: Option<&Path>,
        path: Option<PathBuf>,
        size: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ScratchFile> {
        if size == 0 {
            bail!("scratch file size must be greater than zero");
        }
        let (path, tmp) = match path {
            Some(path) => match fs::metadata(&path) {
                Ok(meta) => return Self::existing(path, &meta, size),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let parent = path.parent().filter(|p| !p.as_os_str().is_empty());
                    ensure_free(parent.unwrap_or(Path::new(".")), size)?;
                    (path, None)
                }
                Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
            },
            None => {
                let parent = match dir {
                    Some(d) => d.to_path_buf(),
                    None => std::env::current_dir().context("cannot find the current directory")?,
                };
                ensure_free(&parent, size)?;
                let tmp = ScratchDir::new_in("scratch", &parent)?;
                (tmp.path().join("scratch.dat"), Some(tmp))
            }
        };
        let len = size.div_ceil(FILL_ALIGN as u64) * FILL_ALIGN as u64;
        // A file in a scratch directory goes with the directory; one at the user's path is
        // registered on its own. From here on, dropping `file` removes what was created.
        let file = ScratchFile {
            _tracked: tmp.is_none().then(|| cleanup::track_path(&path)),
            path,
            len,
            origin: Origin::Created,
            _dir: tmp,
        };
        fill(&file.path, len, progress)
            .with_context(|| format!("cannot fill scratch file {}", file.path.display()))?;
        Ok(file)
    }

    /// Uses an existing file or device as it is, after checking its type and size.
    fn existing(path: PathBuf, meta: &fs::Metadata, size: u64) -> Result<ScratchFile> {
        let (len, origin) = if meta.file_type().is_block_device() {
            let mut f = File::open(&path)
                .with_context(|| format!("cannot open block device {}", path.display()))?;
            let len = f
                .seek(SeekFrom::End(0))
                .with_context(|| format!("cannot size block device {}", path.display()))?;
            (len, Origin::BlockDevice)
        } else if meta.is_file() {
            (meta.len(), Origin::UserFile)
        } else {
            bail!(
                "{} is neither a regular file nor a block device",
                path.display()
            );
        };
        if len < size {
            bail!(
                "{} holds {len} bytes but the benchmark needs {size}; give a larger file or a \
                 path that does not exist yet (vecio never extends or truncates your file)",
                path.display()
            );
        }
        Ok(ScratchFile {
            path,
            len,
            origin,
            _dir: None,
            _tracked: None,
        })
    }

    /// Path of the file or device.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Size in bytes: the created size, or the user's file or device size.
    pub fn len(&self) -> u64 {
        self.len
    }

    /// Always false: a prepared file holds at least one block (kept for the `len` convention).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Where the bytes come from.
    pub fn origin(&self) -> Origin {
        self.origin
    }
}

impl Drop for ScratchFile {
    fn drop(&mut self) {
        if self.origin == Origin::Created {
            // Best effort; `_dir`, if any, then removes the temporary directory.
            let _ = fs::remove_file(&self.path);
        }
    }
}

/// Room kept free beside a scratch file: the filesystem's own metadata and the rest of the
/// machine need some too.
pub const FREE_MARGIN: u64 = 64 << 20;

/// Fails, before anything is written, unless the filesystem holding `dir` has room for
/// `bytes` more plus [`FREE_MARGIN`] (`statvfs(2)`: blocks available to this user).
pub fn ensure_free(dir: &Path, bytes: u64) -> Result<()> {
    let st = rustix::fs::statvfs(dir)
        .map_err(io::Error::from)
        .with_context(|| format!("cannot read the free space of {}", dir.display()))?;
    let free = st.f_bavail.saturating_mul(st.f_frsize);
    let need = bytes.saturating_add(FREE_MARGIN);
    if free < need {
        bail!(
            "{} has {} free but the scratch files need {} (and {} to spare); free some space, \
             give a smaller --size or another --dir",
            dir.display(),
            indicatif::HumanBytes(free),
            indicatif::HumanBytes(bytes),
            indicatif::HumanBytes(FREE_MARGIN)
        );
    }
    Ok(())
}

/// Creates `path` and writes `len` random bytes (a multiple of [`FILL_ALIGN`]) in
/// [`FILL_CHUNK`]s, with `O_DIRECT` where the filesystem accepts it, then fsyncs.
fn fill(path: &Path, len: u64, progress: &mut dyn FnMut(u64)) -> io::Result<()> {
    match create_new(path, libc::O_DIRECT).and_then(|f| write_random(&f, len, progress)) {
        Ok(()) => Ok(()),
        // EINVAL: the filesystem refuses O_DIRECT, at open or at the first write. O_EXCL
        // guarantees any file there is ours, so start again buffered.
        Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
            let _ = fs::remove_file(path);
            write_random(&create_new(path, 0)?, len, progress)?;
            Ok(())
        }
        Err(e) => Err(e),
    }
}

/// Creates `path` and writes `len` random bytes to it through the page cache, then fsyncs: a
/// data file that starts cached, as one an application just wrote.
pub fn fill_buffered(path: &Path, len: u64) -> io::Result<()> {
    write_random(&create_new(path, 0)?, len, &mut |_| {})
}

/// Writes `len` random bytes to `file` from offset 0 from an aligned buffer, then fsyncs.
fn write_random(file: &File, len: u64, progress: &mut dyn FnMut(u64)) -> io::Result<()> {
    // An over-allocated vector holds an aligned window, so no unsafe allocation is needed.
    let mut storage = vec![0u8; FILL_CHUNK + FILL_ALIGN];
    let start = storage.as_ptr().align_offset(FILL_ALIGN);
    let buf = &mut storage[start..start + FILL_CHUNK];
    let mut rng = rand::thread_rng();
    let mut done = 0u64;
    while done < len {
        let n = (len - done).min(FILL_CHUNK as u64) as usize;
        rng.fill_bytes(&mut buf[..n]);
        file.write_all_at(&buf[..n], done)?;
        done += n as u64;
        progress(done);
    }
    file.sync_all()
}

/// Opens `path` for writing, failing if it exists, with extra open(2) `flags`.
fn create_new(path: &Path, flags: libc::c_int) -> io::Result<File> {
    OpenOptions::new()
        .write(true)
        .create_new(true)
        .custom_flags(flags)
        .open(path)
}
