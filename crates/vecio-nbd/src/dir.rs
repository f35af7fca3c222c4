//! `ExportDir`: every regular file of a directory served as an export named after it
//! (`vecio nbd --dir DIR`).
//!
//! The directory is opened once; each listing reads it again, so files added later are
//! listed and removed ones are not. An export is opened on first use, beneath the
//! directory's descriptor (`openat2(RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS)`, `openat` with
//! `O_NOFOLLOW` on kernels before 5.6), and then shared by every connection to it, as the
//! one export of a single-file server is: one [`vecio::File`] per file, so multi-conn stays
//! safe. A name is looked up again at every use: an export whose file was removed or
//! replaced is retired, there or at the next listing (connections still using it keep it;
//! it is flushed and closed at the first lookup or listing after the last of them leaves),
//! and the new file, if any, is opened.
//!
//! Names are refused before any system call when they could leave the directory or are not
//! a file name at all: empty, `.`, `..`, containing `/` or NUL, over 4096 bytes. Symbolic
//! links are refused, whatever they point to, and so is anything but a regular file
//! (directories, block and character devices, FIFOs, sockets): a block device is served by
//! naming it as a single export, never because a node appeared in a directory.

use std::collections::HashMap;
use std::os::fd::OwnedFd;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, MutexGuard};

use rustix::fs::{AtFlags, FileType, Mode, OFlags, ResolveFlags};

use crate::error::{Error, Result};
use crate::export::{Cache, Export, ExportOptions};

/// Why a name is not a file name of the directory, or `Ok` when it may be one.
pub fn check_name(name: &str) -> std::result::Result<(), &'static str> {
    match name {
        "" => Err("empty name"),
        "." | ".." => Err("not a file name"),
        _ if name.len() > crate::proto::MAX_STRING => Err("name over 4096 bytes"),
        _ if name.contains('/') => Err("name contains '/'"),
        _ if name.contains('\0') => Err("name contains NUL"),
        _ => Ok(()),
    }
}

/// An export that is open, with the file it was opened from.
struct Entry {
    export: Arc<Export>,
    /// qemu's image locks, on the export's own open file description (they last while the
    /// export's file is open, retired or not).
    _lock: Option<crate::image_lock::ImageLock>,
    dev: u64,
    ino: u64,
}

/// Open exports by name, and retired ones still in use.
#[derive(Default)]
struct Open {
    current: HashMap<String, Entry>,
    retired: Vec<Arc<Export>>,
}

/// Every regular file of a directory, each an export named after it (see the module
/// documentation).
pub struct ExportDir {
    dir: OwnedFd,
    path: PathBuf,
    opts: ExportOptions,
    /// Serve files that start like a disk-image container too (`-f raw`).
    any_format: bool,
    /// Serve read-only whatever qemu's image locks say (`--force-share`).
    force_share: bool,
    open: Mutex<Open>,
}

impl std::fmt::Debug for ExportDir {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ExportDir")
            .field("path", &self.path)
            .field("opts", &self.opts)
            .field("any_format", &self.any_format)
            .finish()
    }
}

impl ExportDir {
    /// Opens the directory `path`. `opts.read_only` and `opts.cache` apply to every export;
    /// `opts.name`, when not empty, names the default export (the file a client asking for
    /// "" gets; it must be a regular file of the directory now) and `opts.description`
    /// describes that export. With no default, "" is refused like any unknown name.
    pub fn open(path: impl AsRef<Path>, opts: ExportOptions) -> Result<Self> {
        let path = path.as_ref().to_path_buf();
        if !opts.description.is_empty() && opts.name.is_empty() {
            let msg = "a description needs a default export to describe";
            return Err(Error::Config(msg.into()));
        }
        if opts.description.len() > crate::proto::MAX_STRING || opts.description.contains('\0') {
            return Err(Error::Config("description too long or contains NUL".into()));
        }
        let flags = OFlags::RDONLY | OFlags::DIRECTORY | OFlags::CLOEXEC;
        let dir = rustix::fs::open(&path, flags, Mode::empty()).map_err(|e| Error::Dir {
            path: path.clone(),
            source: e.into(),
        })?;
        let d = ExportDir {
            dir,
            path,
            opts,
            any_format: false,
            force_share: false,
            open: Mutex::new(Open::default()),
        };
        if !d.opts.name.is_empty() {
            if let Err(why) = check_name(&d.opts.name) {
                return Err(Error::Config(format!("default export: {why}")));
            }
            if d.stat(&d.opts.name).is_none() {
                return Err(Error::Config(format!(
                    "default export {:?}: not a regular file in {}",
                    d.opts.name,
                    d.path.display()
                )));
            }
        }
        Ok(d)
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// True when every export is read-only.
    pub fn is_read_only(&self) -> bool {
        self.opts.read_only
    }

    /// The default export's name ("" when there is none).
    pub fn default_name(&self) -> &str {
        &self.opts.name
    }

    /// The exports as they are now, sorted by name, each with its description: every
    /// regular file of the directory whose name is UTF-8 and passes [`check_name`]
    /// (`getdents64(2)`, then `fstatat(2)` without following links). Open exports whose
    /// file is gone or replaced are retired on the way, so a removed file's space is not
    /// held once its last connection leaves.
    pub fn list(&self) -> Result<Vec<(String, String)>> {
        let dir_err = |e: rustix::io::Errno| Error::Dir {
            path: self.path.clone(),
            source: e.into(),
        };
        let mut found = HashMap::new();
        for entry in rustix::fs::Dir::read_from(&self.dir).map_err(dir_err)? {
            let entry = entry.map_err(dir_err)?;
            let Ok(name) = entry.file_name().to_str() else {
                continue;
            };
            if check_name(name).is_err() {
                continue;
            }
            if let Some(id) = self.stat(name) {
                found.insert(name.to_owned(), id);
            }
        }
        {
            let mut open = self.lock();
            let gone: Vec<String> = (open.current.iter())
                .filter(|(n, e)| found.get(*n) != Some(&(e.dev, e.ino)))
                .map(|(n, _)| n.clone())
                .collect();
            for name in gone {
                retire(&mut open, &name);
            }
            prune(&mut open.retired);
        }
        let mut names: Vec<String> = found.into_keys().collect();
        names.sort();
        Ok(names
            .into_iter()
            .map(|n| {
                let d = match n == self.opts.name {
                    true => self.opts.description.clone(),
                    false => String::new(),
                };
                (n, d)
            })
            .collect())
    }

    /// The export a client asking for `name` gets: "" is the default export if there is
    /// one. Opened now if it is not open yet (or its file was replaced); otherwise the
    /// export every other connection to it shares. `Err` carries the reason, for the client.
    pub fn get(&self, name: &str) -> std::result::Result<Arc<Export>, String> {
        let name = match name {
            "" if self.opts.name.is_empty() => {
                return Err("no default export: ask for a name (the list has them)".into())
            }
            "" => self.opts.name.as_str(),
            n => n,
        };
        check_name(name)?;
        let mut open = self.lock();
        prune(&mut open.retired);
        let Some((dev, ino)) = self.stat(name) else {
            retire(&mut open, name);
            return Err("no such export".into());
        };
        if let Some(e) = open.current.get(name) {
            if (e.dev, e.ino) == (dev, ino) {
                return Ok(e.export.clone());
            }
        }
        retire(&mut open, name);
        let entry = self.open_export(name).map_err(|e| {
            // The reason names the server's paths: it goes to the log, not to the client.
            tracing::warn!(export = name, "cannot open: {e}");
            String::from("the export cannot be opened")
        })?;
        let export = entry.export.clone();
        open.current.insert(name.to_owned(), entry);
        Ok(export)
    }

    /// Serves files that start like a qcow2, VMDK or other disk-image container as their
    /// bytes (`-f raw`); by default such a file is refused when a client asks for it
    /// ([`image_format`](crate::image_format)).
    pub fn any_format(mut self, yes: bool) -> Self {
        self.any_format = yes;
        self
    }

    /// With a read-only directory: serves each file whatever another process holds under
    /// qemu's image locks; by default a file is locked as qemu-nbd locks it when it is opened,
    /// and one a virtual machine writes is refused to the client that asks for it
    /// ([`image_lock`](crate::image_lock)).
    pub fn force_share(mut self, yes: bool) -> Self {
        self.force_share = yes;
        self
    }

    /// Exports open now, and retired ones (file removed or replaced) still in use.
    pub(crate) fn open_counts(&self) -> (usize, usize) {
        let open = self.open.lock().unwrap_or_else(|p| p.into_inner());
        (open.current.len(), open.retired.len())
    }

    /// Flushes every export open for writing (`fdatasync(2)`), the retired ones still in
    /// use included; returns the first failure after trying them all.
    pub fn flush(&self) -> Result<()> {
        if self.opts.read_only {
            return Ok(());
        }
        let open = self.lock();
        let mut first = Ok(());
        let all = open.current.values().map(|e| &e.export);
        for export in all.chain(open.retired.iter()) {
            if let Err(source) = export.flush() {
                let path = export.file().display_path();
                tracing::warn!(path = %path.display(), "flush: {source}");
                if first.is_ok() {
                    first = Err(Error::Flush { path, source });
                }
            }
        }
        first
    }

    fn lock(&self) -> MutexGuard<'_, Open> {
        // A panic elsewhere cannot leave the map half-changed: keep serving.
        self.open.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// `(st_dev, st_ino)` of `name` when it is a regular file of the directory itself (not
    /// through a link).
    fn stat(&self, name: &str) -> Option<(u64, u64)> {
        let st = rustix::fs::statat(&self.dir, name, AtFlags::SYMLINK_NOFOLLOW).ok()?;
        let regular = FileType::from_raw_mode(st.st_mode) == FileType::RegularFile;
        regular.then_some((st.st_dev, st.st_ino))
    }

    /// Opens `name` beneath the directory, refusing links and anything but a regular file.
    fn open_export(&self, name: &str) -> Result<Entry> {
        let label = self.path.join(name);
        let open_err = |e: rustix::io::Errno| {
            Error::File(vecio::Error::Open {
                path: Arc::from(label.as_path()),
                source: e.into(),
            })
        };
        let mut flags = OFlags::CLOEXEC | OFlags::NOFOLLOW | OFlags::NOCTTY | OFlags::NONBLOCK;
        flags |= match self.opts.read_only {
            true => OFlags::RDONLY,
            false => OFlags::RDWR,
        };
        if self.opts.cache == Cache::None {
            flags |= OFlags::DIRECT;
        }
        let fd = open_beneath(&self.dir, name, flags).map_err(|e| match e {
            rustix::io::Errno::INVAL if self.opts.cache == Cache::None => {
                Error::File(vecio::Error::DirectRefused {
                    path: Arc::from(label.as_path()),
                    source: e.into(),
                })
            }
            e => open_err(e),
        })?;
        let st = rustix::fs::fstat(&fd).map_err(open_err)?;
        if FileType::from_raw_mode(st.st_mode) != FileType::RegularFile {
            let path = Arc::from(label.as_path());
            return Err(Error::File(vecio::Error::NotRegular { path }));
        }
        let access = crate::image_lock::Access::of(self.opts.read_only, self.force_share);
        let description = rustix::io::fcntl_dupfd_cloexec(&fd, 0).map_err(open_err)?;
        let description = std::fs::File::from(description);
        let lock = crate::image_lock::lock_open(description, &label, access)?;
        // from_fd clears O_NONBLOCK, which only kept the open from waiting on a FIFO.
        let file = vecio::File::from_fd(fd, &label, vecio::RwFlags::empty())?;
        if !self.any_format {
            crate::image_format::refuse_container(&file, &label)?;
        }
        let opts = ExportOptions {
            name: name.to_owned(),
            description: match name == self.opts.name {
                true => self.opts.description.clone(),
                false => String::new(),
            },
            ..self.opts.clone()
        };
        let export = Arc::new(Export::from_file(file, opts)?);
        tracing::info!(path = %label.display(), size = export.size(), "export opened");
        Ok(Entry {
            export,
            _lock: lock,
            dev: st.st_dev,
            ino: st.st_ino,
        })
    }
}

/// `openat2(dir, name, RESOLVE_BENEATH | RESOLVE_NO_SYMLINKS | RESOLVE_NO_MAGICLINKS)`; on a
/// kernel without openat2 (`ENOSYS`, before 5.6), `openat` with the `O_NOFOLLOW` in `flags`
/// (`name` has no `/`, so only a last-component link could lead out, and that is refused).
fn open_beneath(dir: &OwnedFd, name: &str, flags: OFlags) -> rustix::io::Result<OwnedFd> {
    let resolve = ResolveFlags::BENEATH | ResolveFlags::NO_SYMLINKS | ResolveFlags::NO_MAGICLINKS;
    match rustix::fs::openat2(dir, name, flags, Mode::empty(), resolve) {
        Err(rustix::io::Errno::NOSYS) => rustix::fs::openat(dir, name, flags, Mode::empty()),
        r => r,
    }
}

/// Moves `name`'s open export, if any, to the retired list.
fn retire(open: &mut Open, name: &str) {
    if let Some(e) = open.current.remove(name) {
        tracing::info!(export = name, "file removed or replaced: export retired");
        open.retired.push(e.export);
    }
}

/// Flushes and closes retired exports no connection uses any more.
fn prune(retired: &mut Vec<Arc<Export>>) {
    retired.retain(|e| {
        if Arc::strong_count(e) > 1 {
            return true;
        }
        if !e.is_read_only() {
            if let Err(err) = e.flush() {
                let path = e.file().display_path();
                tracing::warn!(path = %path.display(), "flush of a retired export: {err}");
            }
        }
        false
    });
}

#[cfg(test)]
mod tests;
