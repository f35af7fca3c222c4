//! `Export`: the backing file (or block device) of one export, opened once and shared by
//! every connection to it, with what the handshake tells clients about it.
//!
//! One [`vecio::File`] serves every connection (through an `Arc`), so a flush (`fdatasync`)
//! on any connection covers writes completed on all of them, and an FUA write (`RWF_DSYNC`)
//! is durable for everyone when it is acknowledged: that is what makes
//! `NBD_FLAG_CAN_MULTI_CONN` true, and it is advertised for that reason.

use std::os::fd::AsFd;
use std::path::Path;
use std::str::FromStr;
use std::sync::Arc;

use vecio::{AlignedBuf, Direct, File};

use crate::error::{Error, Result};
use crate::holes::HoleHint;
use crate::proto::{Framing, TransmissionFlags};

/// Largest payload of one read or write request (32 MiB, the protocol's portable maximum).
pub const MAX_PAYLOAD: u32 = 32 << 20;
/// The smallest request size and alignment clients are told about: vecio serves any
/// alignment (bounce buffers for reads, read-modify-write for writes).
pub const MIN_BLOCK: u32 = 1;
/// The preferred block size for files without a larger direct-I/O alignment.
pub const PREFERRED_BLOCK: u32 = 4096;
/// Bytes of the zero buffer used when a file system cannot zero a range by itself.
const ZERO_CHUNK: usize = 1 << 20;

/// How the backing file is cached (the names are qemu-nbd's `--cache` values).
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Cache {
    /// Direct I/O (`O_DIRECT`): no page cache; the open fails where the file system refuses it.
    #[default]
    None,
    /// Buffered I/O through the page cache.
    Writeback,
}

impl Cache {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Cache::None => "none",
            Cache::Writeback => "writeback",
        }
    }
}

impl FromStr for Cache {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "none" => Ok(Cache::None),
            "writeback" => Ok(Cache::Writeback),
            _ => Err(format!("unknown cache mode {s:?} (none, writeback)")),
        }
    }
}

/// How to open an [`Export`].
#[derive(Clone, Debug, Default)]
pub struct ExportOptions {
    /// The export's name (clients may also ask for "", the default export).
    pub name: String,
    /// A description shown to clients (`NBD_INFO_DESCRIPTION`, `NBD_OPT_LIST`).
    pub description: String,
    /// Serve reads only (the file is opened read-only; writes get `NBD_EPERM`).
    pub read_only: bool,
    /// Direct or buffered I/O.
    pub cache: Cache,
}

/// Refuses a name or description the protocol cannot carry (over 4096 bytes, or with NUL).
fn check_strings(opts: &ExportOptions) -> Result<()> {
    if opts.name.len() > crate::proto::MAX_STRING || opts.name.contains('\0') {
        return Err(Error::Config("export name too long or contains NUL".into()));
    }
    if opts.description.len() > crate::proto::MAX_STRING || opts.description.contains('\0') {
        return Err(Error::Config("description too long or contains NUL".into()));
    }
    Ok(())
}

/// The exported file and what clients are told about it.
pub struct Export {
    file: Arc<File>,
    size: u64,
    opts: ExportOptions,
    preferred: u32,
    zeros: AlignedBuf,
    holes: HoleHint,
}

impl std::fmt::Debug for Export {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Export")
            .field("file", &self.file)
            .field("size", &self.size)
            .field("opts", &self.opts)
            .finish()
    }
}

impl Export {
    /// Opens `path` (a regular file or block device) for export: `O_DIRECT` for
    /// [`Cache::None`], read-only when asked.
    pub fn open(path: impl AsRef<Path>, opts: ExportOptions) -> Result<Self> {
        check_strings(&opts)?;
        let direct = match opts.cache {
            Cache::None => Direct::On,
            Cache::Writeback => Direct::Off,
        };
        let file = File::options()
            .read(true)
            .write(!opts.read_only)
            .direct(direct)
            .open(path.as_ref())?;
        Self::from_file(file, opts)
    }

    /// Exports a file the caller opened (as [`ExportDir`](crate::ExportDir) does, beneath its
    /// directory). The file's direct mode and access are taken as they are; `opts.cache` is
    /// only reported, and `opts.read_only` must match a file opened without write access.
    pub fn from_file(file: File, opts: ExportOptions) -> Result<Self> {
        check_strings(&opts)?;
        if !opts.read_only && !file.is_writable() {
            return Err(Error::Config(format!(
                "{}: opened read-only for a writable export",
                file.display_path().display()
            )));
        }
        let size = file.size().map_err(|source| Error::Size {
            path: file.display_path(),
            source,
        })?;
        let align = file.dio_align();
        let preferred = if file.is_direct() {
            PREFERRED_BLOCK.max(align.offset).next_power_of_two()
        } else {
            PREFERRED_BLOCK
        };
        let holes = HoleHint::new(file.as_fd());
        Ok(Export {
            holes,
            file: Arc::new(file),
            size,
            opts,
            preferred: preferred.min(MAX_PAYLOAD),
            zeros: AlignedBuf::new(ZERO_CHUNK, (align.mem as usize).max(vecio::PAGE_SIZE)),
        })
    }

    /// Whether the file may have holes worth a `SEEK_DATA` walk (see `holes.rs`).
    pub(crate) fn holes(&self) -> &HoleHint {
        &self.holes
    }

    /// The backing file.
    pub fn file(&self) -> &Arc<File> {
        &self.file
    }

    /// Size of the export in bytes (the file's size at open).
    pub fn size(&self) -> u64 {
        self.size
    }

    /// The export's name.
    pub fn name(&self) -> &str {
        &self.opts.name
    }

    /// The export's description.
    pub fn description(&self) -> &str {
        &self.opts.description
    }

    /// True when writes are refused.
    pub fn is_read_only(&self) -> bool {
        self.opts.read_only
    }

    /// The cache mode.
    pub fn cache(&self) -> Cache {
        self.opts.cache
    }

    /// True when a client asking for `name` means this export: its own name, or "" (the
    /// default export; this server has one export).
    pub fn answers_to(&self, name: &str) -> bool {
        name.is_empty() || name == self.opts.name
    }

    /// Block sizes told to clients: minimum, preferred, maximum payload.
    pub fn block_sizes(&self) -> (u32, u32, u32) {
        (MIN_BLOCK, self.preferred, MAX_PAYLOAD)
    }

    /// The transmission flags for a client that negotiated `framing`: `SEND_DF` with
    /// structured replies or extended headers, `BLOCK_STATUS_PAYLOAD` with extended headers.
    pub fn flags(&self, framing: Framing) -> TransmissionFlags {
        let mut f = TransmissionFlags::HAS_FLAGS
            | TransmissionFlags::SEND_FLUSH
            | TransmissionFlags::SEND_FUA
            | TransmissionFlags::SEND_CACHE
            | TransmissionFlags::CAN_MULTI_CONN;
        if self.opts.read_only {
            f |= TransmissionFlags::READ_ONLY;
        } else {
            f |= TransmissionFlags::SEND_TRIM
                | TransmissionFlags::SEND_WRITE_ZEROES
                | TransmissionFlags::SEND_FAST_ZERO;
        }
        if framing.chunks() {
            f |= TransmissionFlags::SEND_DF;
        }
        if framing == Framing::Extended {
            f |= TransmissionFlags::BLOCK_STATUS_PAYLOAD;
        }
        f
    }

    /// True when a request at `offset` of `len` bytes goes to the kernel as it is (buffered
    /// file, or aligned to the direct-I/O offset alignment); false when vecio serves it by
    /// bounce buffer or read-modify-write.
    pub fn is_aligned(&self, offset: u64, len: u64) -> bool {
        if !self.file.is_direct() {
            return true;
        }
        self.file.dio_align().allows(offset, len)
    }

    /// Memory alignment for request buffers (at least a page).
    pub(crate) fn buf_align(&self) -> usize {
        (self.file.dio_align().mem as usize).max(vecio::PAGE_SIZE)
    }

    /// A page-aligned buffer of zeroes.
    pub(crate) fn zeros(&self) -> &[u8] {
        &self.zeros
    }

    /// Flushes written data to stable storage (`fdatasync(2)`).
    pub fn flush(&self) -> std::io::Result<()> {
        self.file.sync_data()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn export(read_only: bool, cache: Cache) -> (tempfile::TempDir, Export) {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path().join("img");
        std::fs::write(&p, vec![0u8; 1 << 20]).unwrap();
        let e = Export::open(
            &p,
            ExportOptions {
                name: "x".into(),
                read_only,
                cache,
                ..Default::default()
            },
        )
        .unwrap();
        (dir, e)
    }

    #[test]
    fn flags_follow_the_options() {
        let (_d, e) = export(false, Cache::None);
        assert_eq!(e.size(), 1 << 20);
        let f = e.flags(Framing::Simple);
        assert!(f.contains(TransmissionFlags::SEND_WRITE_ZEROES | TransmissionFlags::SEND_TRIM));
        assert!(!f.contains(TransmissionFlags::SEND_DF));
        assert!(e
            .flags(Framing::Structured)
            .contains(TransmissionFlags::SEND_DF));
        assert!(!e
            .flags(Framing::Structured)
            .contains(TransmissionFlags::BLOCK_STATUS_PAYLOAD));
        assert!(e
            .flags(Framing::Extended)
            .contains(TransmissionFlags::SEND_DF | TransmissionFlags::BLOCK_STATUS_PAYLOAD));
        assert!(e.file().is_direct());
        let (_d, e) = export(true, Cache::Writeback);
        let f = e.flags(Framing::Structured);
        assert!(f.contains(TransmissionFlags::READ_ONLY));
        assert!(!f.contains(TransmissionFlags::SEND_TRIM));
        assert!(!f.contains(TransmissionFlags::SEND_FAST_ZERO));
        assert!(!e.file().is_direct());
        assert!(e.is_aligned(1, 3));
    }

    #[test]
    fn names_and_block_sizes() {
        let (_d, e) = export(false, Cache::None);
        assert!(e.answers_to("") && e.answers_to("x") && !e.answers_to("y"));
        let (min, pref, max) = e.block_sizes();
        assert_eq!((min, max), (1, 32 << 20));
        assert!(pref.is_power_of_two() && pref >= 4096);
        assert!(!e.is_aligned(1, 512));
        assert!(e.is_aligned(4096, 4096));
    }
}
