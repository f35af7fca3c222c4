//! The device's geometry from its backing file, and the ublk parameters
//! (`UBLK_PARAM_TYPE_BASIC`, `UBLK_PARAM_TYPE_DISCARD`) that carry it to the kernel.

use libublk::sys;
use vecio::File;

use crate::error::{Error, Result};

/// Largest discard or write-zeroes request, in 512-byte sectors: a request's bytes fit in 32
/// bits.
const MAX_DISCARD_SECTORS: u32 = u32::MAX >> 9;

/// The block device's shape, derived from its backing file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    /// Bytes: the file's size rounded down to the logical block size.
    pub size: u64,
    /// Logical block size: the file's direct-I/O offset alignment (512 when buffered), so
    /// every request the kernel sends can go to the file as it is, with no bounce and no
    /// read-modify-write.
    pub logical: u32,
    /// Physical block size: the file's preferred I/O size (`st_blksize`), at least the
    /// logical size, at most 64 KiB.
    pub physical: u32,
    /// Largest request in bytes.
    pub max_io: u32,
    /// The device takes no writes.
    pub read_only: bool,
}

impl Geometry {
    /// The geometry for `file`, with requests of up to `max_io` bytes.
    pub fn of(file: &File, max_io: u32, read_only: bool) -> Result<Self> {
        let path = file.display_path();
        let size = file.size().map_err(|e| Error::Size {
            path: path.clone(),
            reason: format!("cannot read the size: {e}"),
        })?;
        let logical = if file.is_direct() {
            file.dio_align().offset.max(512).next_power_of_two()
        } else {
            512
        };
        let blksize = rustix::fs::fstat(file)
            .map(|s| s.st_blksize as u32)
            .unwrap_or(4096);
        let physical = blksize.clamp(logical, 64 * 1024).next_power_of_two();
        let size = size / logical as u64 * logical as u64;
        if size == 0 {
            return Err(Error::Size {
                path,
                reason: format!("smaller than one {logical}-byte block"),
            });
        }
        Ok(Geometry {
            size,
            logical,
            physical,
            max_io,
            read_only,
        })
    }

    /// The ublk parameters for this geometry: basic limits with a volatile write cache and FUA
    /// (so the kernel sends FLUSH and FUA and the file's durability is the device's), and,
    /// when writable, discard and write-zeroes of whole physical blocks.
    pub fn params(&self) -> sys::ublk_params {
        let shift = |v: u32| v.trailing_zeros() as u8;
        let mut attrs = sys::UBLK_ATTR_VOLATILE_CACHE | sys::UBLK_ATTR_FUA;
        let mut types = sys::UBLK_PARAM_TYPE_BASIC;
        if self.read_only {
            attrs |= sys::UBLK_ATTR_READ_ONLY;
        } else {
            types |= sys::UBLK_PARAM_TYPE_DISCARD;
        }
        sys::ublk_params {
            len: std::mem::size_of::<sys::ublk_params>() as u32,
            types,
            basic: sys::ublk_param_basic {
                attrs,
                logical_bs_shift: shift(self.logical),
                physical_bs_shift: shift(self.physical),
                io_min_shift: shift(self.logical),
                io_opt_shift: shift(self.physical),
                max_sectors: self.max_io >> 9,
                dev_sectors: self.size >> 9,
                ..Default::default()
            },
            discard: sys::ublk_param_discard {
                discard_granularity: self.physical,
                max_discard_sectors: MAX_DISCARD_SECTORS,
                max_write_zeroes_sectors: MAX_DISCARD_SECTORS,
                max_discard_segments: 1,
                ..Default::default()
            },
            ..Default::default()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_file_rounds_down_to_whole_blocks_and_says_so_in_the_parameters() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 10 * 4096 + 100]).unwrap();
        let file = File::options().read(true).write(true).open(&path).unwrap();
        let g = Geometry::of(&file, 512 * 1024, false).unwrap();
        assert_eq!(g.logical, 512, "a buffered file takes 512-byte blocks");
        assert_eq!(g.size, 10 * 4096, "rounded down to whole blocks: {g:?}");
        let p = g.params();
        assert_eq!(p.basic.dev_sectors, g.size >> 9);
        assert_eq!(p.basic.logical_bs_shift, 9);
        assert_eq!(p.basic.max_sectors, 1024);
        assert_ne!(p.types & sys::UBLK_PARAM_TYPE_DISCARD, 0);
        assert_eq!(p.basic.attrs & sys::UBLK_ATTR_READ_ONLY, 0);
    }

    #[test]
    fn a_read_only_device_has_no_discard_and_says_read_only() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 8192]).unwrap();
        let file = File::options().read(true).open(&path).unwrap();
        let p = Geometry::of(&file, 65536, true).unwrap().params();
        assert_ne!(p.basic.attrs & sys::UBLK_ATTR_READ_ONLY, 0);
        assert_eq!(p.types & sys::UBLK_PARAM_TYPE_DISCARD, 0);
    }

    #[test]
    fn a_direct_file_takes_its_alignment_as_the_logical_block() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![0u8; 1 << 20]).unwrap();
        let Ok(file) = File::options()
            .read(true)
            .direct(vecio::Direct::On)
            .open(&path)
        else {
            eprintln!("skipped: the temporary directory's file system refuses O_DIRECT");
            return;
        };
        let g = Geometry::of(&file, 65536, true).unwrap();
        assert_eq!(g.logical, file.dio_align().offset.max(512));
        assert!(g.physical >= g.logical);
    }

    #[test]
    fn an_empty_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, b"").unwrap();
        let file = File::options().read(true).open(&path).unwrap();
        assert!(matches!(
            Geometry::of(&file, 65536, true),
            Err(Error::Size { .. })
        ));
    }
}
