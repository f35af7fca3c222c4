//! `vecio info PATH`: what vecio learns about a file, a directory or a block device, found by
//! asking the kernel rather than by knowing what it should say: the filesystem and mount, the
//! direct-I/O alignment (`statx(STATX_DIOALIGN)`, `BLKSSZGET`), whether `O_DIRECT`,
//! `RWF_NOWAIT` (read and write), `RWF_DSYNC`, `RWF_DONTCACHE` and io_uring work (each tried
//! with one real call), how much of it is in the page cache (`mincore(2)`), and the block queue
//! settings behind it (`/sys/block/DEV/queue`).
//!
//! Nothing here writes to the file asked about. Read probes run on it; write probes run on a
//! temporary file beside it (same filesystem, same kernel code), or, for a directory, inside it.
//! A block device's write probes rewrite its first block with its own bytes, and only when the
//! caller asks ([`InfoOptions::write_device`]) and the device is not in use (`O_EXCL`).

mod access;
mod device;
pub mod fuse;
pub mod kernel;
mod probes;
mod residency;
mod text;

use std::os::unix::fs::FileTypeExt;
use std::path::{Path, PathBuf};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

pub use device::DeviceInfo;
pub use probes::Capabilities;
pub use residency::resident_bytes;
pub use text::render;

/// What `vecio info` may do.
#[derive(Debug, Clone, Copy, Default)]
pub struct InfoOptions {
    /// Probe writes on a block device by rewriting its first logical block with its own data
    /// (only when the device can be opened exclusively: not mounted, not held).
    pub write_device: bool,
}

/// What a path is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Kind {
    /// A regular file.
    Regular,
    /// A block device.
    Block,
    /// A directory: the probes run on a temporary file inside it.
    Directory,
}

/// The direct-I/O alignment of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Alignment {
    /// Buffer addresses must be multiples of this (`stx_dio_mem_align`).
    pub mem: u32,
    /// Offsets and lengths must be multiples of this (`stx_dio_offset_align`).
    pub offset: u32,
    /// Where the numbers came from: `statx`, `BLKSSZGET` or `default`.
    pub source: String,
}

/// The mount holding a path.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct MountPoint {
    /// Where it is mounted.
    pub point: String,
    /// What is mounted there (`/dev/vda1`, `tmpfs`, ...).
    pub source: String,
    /// The filesystem type as mountinfo names it.
    pub fs_type: String,
}

/// How much of a file is in the page cache.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Residency {
    /// Bytes resident.
    pub resident: u64,
    /// Bytes of the file (or device).
    pub total: u64,
}

/// Everything `vecio info` reports about one path.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FileInfo {
    /// The path asked about.
    pub path: String,
    /// What it is.
    pub kind: Kind,
    /// Its size in bytes (a device's capacity; 0 for a directory).
    pub size: u64,
    /// The filesystem holding it (`statfs(2)`), `None` for a block device.
    pub fs: Option<String>,
    /// The mount holding it, `None` for a block device.
    pub mount: Option<MountPoint>,
    /// Direct-I/O alignment, as vecio's `File` learns it at open; `None` when it could not
    /// open the file, or when the kernel refuses `O_DIRECT` on it (then there is none).
    pub dio_align: Option<Alignment>,
    /// Why the path cannot be opened for reading (the errno and the permission lacking);
    /// `None` when it opens.
    #[serde(default)]
    pub access: Option<String>,
    /// What the kernel did with each flag and interface.
    pub capabilities: Capabilities,
    /// Where the read and write probes ran.
    pub probed_on: ProbedOn,
    /// Page-cache residency (`None` for a directory).
    pub page_cache: Option<Residency>,
    /// The block device behind it and its queue settings (`None` on tmpfs, overlay, NFS...).
    pub device: Option<DeviceInfo>,
    /// Who else holds it under qemu's image locks, and how vecio nbd and vecio ublk would
    /// serve it (`vecio_nbd::image_lock::holders`); `None` for a directory, or where the file
    /// takes no byte-range locks.
    #[serde(default)]
    pub image_locks: Option<String>,
}

/// Where the probes ran.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ProbedOn {
    /// The file the read probes ran on.
    pub reads: String,
    /// The file the write probes ran on; `None` when they did not run (see the probes' detail).
    pub writes: Option<String>,
}

/// Probes `path` (a regular file, a directory or a block device).
pub fn probe(path: &Path, opts: &InfoOptions) -> Result<FileInfo> {
    let meta = std::fs::metadata(path).with_context(|| format!("{}", path.display()))?;
    let kind = kind_of(path, &meta)?;
    let on_fs = kind != Kind::Block;
    let fs = on_fs.then(|| vecio_host::fs::fs_name(path).ok()).flatten();
    let mount = on_fs.then(|| mount_point(path)).flatten();
    let device = device::of(path);
    // A directory is probed through a temporary file in it; the file is removed on drop.
    let probe_file = match kind {
        Kind::Directory => Some(probes::ProbeFile::create_in(path)?),
        _ => None,
    };
    let read_path: PathBuf = probe_file
        .as_ref()
        .map_or_else(|| path.to_path_buf(), |p| p.path().to_path_buf());
    let page_cache = match kind {
        Kind::Directory => None,
        _ => resident_bytes(path).ok(),
    };
    let dio_align = vecio::File::options()
        .read(true)
        .direct(vecio::Direct::Off)
        .open(&read_path)
        .ok()
        .map(|f| alignment(f.dio_align()));
    let (capabilities, writes) = probes::run(&read_path, kind, probe_file.as_ref(), opts);
    // An alignment vecio assumed is no alignment at all where the kernel refuses O_DIRECT.
    let dio_align = dio_align.filter(|_| capabilities.o_direct.outcome.accepted() != Some(false));
    let access = access::open_refusal(&read_path, &meta);
    Ok(FileInfo {
        path: path.display().to_string(),
        kind,
        size: match kind {
            Kind::Directory => 0,
            _ => page_cache
                .map(|r| r.total)
                .or_else(|| access::device_size(&meta))
                .unwrap_or(meta.len()),
        },
        fs,
        mount,
        dio_align,
        access,
        capabilities,
        probed_on: ProbedOn {
            reads: match kind {
                Kind::Directory => format!("a temporary file in {}", path.display()),
                _ => path.display().to_string(),
            },
            writes,
        },
        page_cache,
        device,
        image_locks: match kind {
            Kind::Directory => None,
            _ => vecio_nbd::image_lock::holders(path),
        },
    })
}

/// What `path` is, from its metadata; an error for anything vecio cannot probe.
fn kind_of(path: &Path, meta: &std::fs::Metadata) -> Result<Kind> {
    let ft = meta.file_type();
    Ok(if ft.is_file() {
        Kind::Regular
    } else if ft.is_block_device() {
        Kind::Block
    } else if ft.is_dir() {
        Kind::Directory
    } else {
        bail!(
            "{}: not a regular file, directory or block device",
            path.display()
        );
    })
}

/// The mount `path` is on (`/proc/self/mountinfo`).
fn mount_point(path: &Path) -> Option<MountPoint> {
    vecio_host::system::mount_of(path)
        .ok()
        .flatten()
        .map(|m| MountPoint {
            point: m.mount_point.display().to_string(),
            source: m.source,
            fs_type: m.fs_type,
        })
}

fn alignment(a: vecio::DioAlign) -> Alignment {
    Alignment {
        mem: a.mem,
        offset: a.offset,
        source: match a.source {
            vecio::file::AlignSource::Statx => "statx",
            vecio::file::AlignSource::BlockSize => "BLKSSZGET",
            vecio::file::AlignSource::Default => "default",
        }
        .to_string(),
    }
}
