//! The file a benchmark runs on: the user's file or device, or a scratch file vecio creates,
//! fills with real data and deletes (docs/report.md, "The harness").

use std::fs::{self, File, OpenOptions};
use std::io::{self, Seek, SeekFrom};
use std::os::unix::fs::{FileExt, FileTypeExt, OpenOptionsExt};
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use rand::RngCore;

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
    _dir: Option<crate::harness::cleanup::ScratchDir>,
    /// A created file stays registered for removal if the run is stopped.
    _tracked: Option<crate::harness::cleanup::Tracked>,
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
        let scratch =
            Self::prepare_with_progress(dir, path, size, &mut |done| phase.set_position(done))?;
        phase.finish();
        Ok(scratch)
    }

    /// Prepares a file of at least `size` bytes, calling `progress` with the bytes written so
    /// far while filling a created file.
    ///
    /// - `path` is a block device: used as it is (never written here); fails if smaller
    ///   than `size`.
    /// - `path` is an existing regular file of at least `size` bytes: used as it is, never
    ///   truncated nor deleted. A smaller one is an error, not something to extend.
    /// - `path` does not exist: created there, filled, deleted on drop.
    /// - no `path`: created in a new temporary directory under `dir` (default: the current
    ///   directory), filled, deleted with its directory on drop.
    ///
    /// Created files are `size` rounded up to [`FILL_ALIGN`].
    pub fn prepare_with_progress(
        dir: Option<&Path>,
        path: Option<PathBuf>,
        size: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ScratchFile> {
        if size == 0 {
            bail!("scratch file size must be greater than zero");
        }
        if let Some(path) = path {
            match fs::metadata(&path) {
                Ok(meta) => return Self::existing(path, &meta, size),
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    let parent = match path.parent() {
                        Some(p) if !p.as_os_str().is_empty() => p.to_path_buf(),
                        _ => PathBuf::from("."),
                    };
                    ensure_free(&parent, size)?;
                    return Self::create(path, None, size, progress);
                }
                Err(e) => return Err(e).with_context(|| format!("cannot stat {}", path.display())),
            }
        }
        let parent = match dir {
            Some(d) => d.to_path_buf(),
            None => std::env::current_dir().context("cannot find the current directory")?,
        };
        ensure_free(&parent, size)?;
        let tmp = crate::harness::cleanup::ScratchDir::new_in("scratch", &parent)?;
        let path = tmp.path().join("scratch.dat");
        Self::create(path, Some(tmp), size, progress)
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

    /// Creates `path` (which must not exist) and fills it; on failure the file is removed.
    fn create(
        path: PathBuf,
        dir: Option<crate::harness::cleanup::ScratchDir>,
        size: u64,
        progress: &mut dyn FnMut(u64),
    ) -> Result<ScratchFile> {
        let len = size.div_ceil(FILL_ALIGN as u64) * FILL_ALIGN as u64;
        // A file in a scratch directory goes with the directory; one at the user's path is
        // registered on its own.
        let tracked = dir
            .is_none()
            .then(|| crate::harness::cleanup::track_path(&path));
        // From here on, dropping `file` removes what was created, even on error.
        let file = ScratchFile {
            path,
            len,
            origin: Origin::Created,
            _dir: dir,
            _tracked: tracked,
        };
        fill(&file.path, len, progress)
            .with_context(|| format!("cannot fill scratch file {}", file.path.display()))?;
        Ok(file)
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
            // Best effort: a scratch file that cannot be removed is not worth a panic.
            let _ = fs::remove_file(&self.path);
        }
        // `self._dir`, if any, removes the temporary directory when dropped after this.
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
