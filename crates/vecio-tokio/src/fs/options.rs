//! [`OpenOptions`]: `tokio::fs::OpenOptions`'s builder, opening a [`File`] served by vecio.

use std::io;
use std::os::fd::OwnedFd;
use std::path::Path;

use rustix::fs::{Mode, OFlags, ResolveFlags, CWD};
use vecio::{Direct, RwFlags};

use super::File;
use crate::Driver;

/// Options for opening a [`File`], as `tokio::fs::OpenOptions` (and `std`'s): nothing set at
/// first; say `read`, `write` or `append`. Files are buffered (the page cache), as with
/// tokio, unless [`direct`](Self::direct) says otherwise.
///
/// ```
/// # #[tokio::main(flavor = "current_thread")]
/// # async fn main() -> std::io::Result<()> {
/// # let dir = tempfile::tempdir()?;
/// use vecio_tokio::fs::OpenOptions;
/// let file = OpenOptions::new().write(true).create(true).open(dir.path().join("log")).await?;
/// # drop(file); Ok(()) }
/// ```
#[derive(Clone, Debug)]
pub struct OpenOptions {
    read: bool,
    write: bool,
    append: bool,
    truncate: bool,
    create: bool,
    create_new: bool,
    mode: u32,
    custom_flags: i32,
    direct: Direct,
    flags: RwFlags,
    driver: Option<Driver>,
}

impl Default for OpenOptions {
    fn default() -> Self {
        Self::new()
    }
}

impl OpenOptions {
    /// Nothing set: no access, no creation, mode `0o666` before the umask, buffered.
    pub fn new() -> Self {
        OpenOptions {
            read: false,
            write: false,
            append: false,
            truncate: false,
            create: false,
            create_new: false,
            mode: 0o666,
            custom_flags: 0,
            direct: Direct::Off,
            flags: RwFlags::empty(),
            driver: None,
        }
    }

    /// Open for reading.
    pub fn read(&mut self, read: bool) -> &mut Self {
        self.read = read;
        self
    }

    /// Open for writing.
    pub fn write(&mut self, write: bool) -> &mut Self {
        self.write = write;
        self
    }

    /// Open for appending: every write goes to the end of the file.
    pub fn append(&mut self, append: bool) -> &mut Self {
        self.append = append;
        self
    }

    /// Truncate the file to zero length at open; needs `write`.
    pub fn truncate(&mut self, truncate: bool) -> &mut Self {
        self.truncate = truncate;
        self
    }

    /// Create the file if it does not exist; needs `write` or `append`.
    pub fn create(&mut self, create: bool) -> &mut Self {
        self.create = create;
        self
    }

    /// Create the file, failing if it exists; needs `write` or `append`.
    pub fn create_new(&mut self, create_new: bool) -> &mut Self {
        self.create_new = create_new;
        self
    }

    /// Permission bits of a created file, before the umask (default `0o666`).
    pub fn mode(&mut self, mode: u32) -> &mut Self {
        self.mode = mode;
        self
    }

    /// Extra `open(2)` flags (`O_NOATIME`, ...); the access mode bits are ignored.
    pub fn custom_flags(&mut self, flags: i32) -> &mut Self {
        self.custom_flags = flags;
        self
    }

    /// vecio's own: direct I/O (`O_DIRECT`). [`Direct::Auto`] uses it where the file system
    /// allows it; any offset, length and buffer still work. Default: [`Direct::Off`], as
    /// tokio::fs.
    pub fn direct(&mut self, direct: Direct) -> &mut Self {
        self.direct = direct;
        self
    }

    /// vecio's own: flags added to every read and write (`RWF_DSYNC` instead of `O_DSYNC`, ...).
    pub fn flags(&mut self, flags: RwFlags) -> &mut Self {
        self.flags = flags;
        self
    }

    /// vecio's own: the driver (engine and thread) serving the file; default
    /// [`Driver::shared`].
    pub fn driver(&mut self, driver: Driver) -> &mut Self {
        self.driver = Some(driver);
        self
    }

    fn to_vecio(&self) -> vecio::OpenOptions {
        vecio::File::options()
            .read(self.read)
            .write(self.write)
            .append(self.append)
            .truncate(self.truncate)
            .create(self.create)
            .create_new(self.create_new)
            .mode(self.mode)
            .custom_flags(self.custom_flags)
            .direct(self.direct)
            .flags(self.flags)
    }

    /// Opens `path`. A plain read-only buffered open whose path the kernel can resolve from
    /// its caches alone (`openat2` with `RESOLVE_CACHED`) is done on the calling task; any
    /// other open runs on tokio's blocking pool, as tokio::fs does.
    pub async fn open(&self, path: impl AsRef<Path>) -> io::Result<File> {
        let driver = match &self.driver {
            Some(d) => d.clone(),
            None => Driver::shared()?,
        };
        let path = path.as_ref();
        if let Some(fd) = self.open_cached(path) {
            let file = vecio::File::from_fd(fd, path, self.flags).map_err(io::Error::from)?;
            return Ok(File::new(file, driver, self.append));
        }
        let (opts, owned) = (self.to_vecio(), path.to_owned());
        let file = tokio::task::spawn_blocking(move || opts.open(owned))
            .await
            .map_err(io::Error::other)?
            .map_err(io::Error::from)?;
        Ok(File::new(file, driver, self.append))
    }

    /// The descriptor of a read-only, buffered, non-creating open resolved from the caches
    /// alone; `None` when that does not apply or the kernel would have to wait.
    fn open_cached(&self, path: &Path) -> Option<OwnedFd> {
        let plain = self.read
            && !(self.write || self.append || self.truncate || self.create || self.create_new)
            && self.direct == Direct::Off
            && self.custom_flags == 0;
        if !plain {
            return None;
        }
        let flags = OFlags::RDONLY | OFlags::CLOEXEC | OFlags::NONBLOCK;
        let fd = rustix::fs::openat2(CWD, path, flags, Mode::empty(), ResolveFlags::CACHED).ok()?;
        // O_NONBLOCK so that a FIFO cannot hang the open; a regular file ignores it, and
        // `vecio::File::from_fd` refuses anything else.
        Some(fd)
    }
}
