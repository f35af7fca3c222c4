//! The files the two servers serve: many small files (4-64 KiB) and a few large ones (8 MiB),
//! both kept in the page cache, and a set of 256 KiB files dropped from it before each
//! measurement. One tree, in a scratch directory, served by both.

use std::io::Write;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};

/// Small files.
pub const SMALL_COUNT: usize = 1000;
/// Smallest small file.
pub const SMALL_MIN: u64 = 4 << 10;
/// Largest small file.
pub const SMALL_MAX: u64 = 64 << 10;
/// Large files.
pub const LARGE_COUNT: usize = 4;
/// Bytes of each large file.
pub const LARGE_SIZE: u64 = 8 << 20;
/// Bytes of each uncached file.
pub const UNCACHED_SIZE: u64 = 256 << 10;

/// One workload: a set of files, cached or not.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Workload {
    /// `small`, `large` or `uncached`.
    pub name: String,
    /// Files in the set.
    pub files: usize,
    /// Bytes of the whole set.
    pub bytes: u64,
    /// Kept in the page cache (warmed before each measurement), or dropped from it
    /// (`POSIX_FADV_DONTNEED` on every file) before each measurement.
    pub cached: bool,
}

/// A workload's files: their URL paths and their paths on disk.
pub struct Set {
    /// What the report says of it.
    pub workload: Workload,
    /// `/small/0001.bin`, ...
    pub urls: Vec<String>,
    /// The same files on disk.
    pub paths: Vec<PathBuf>,
}

/// Bytes the tree takes with `uncached` bytes of uncached files (an upper bound).
pub fn bytes(uncached: u64) -> u64 {
    SMALL_COUNT as u64 * SMALL_MAX + LARGE_COUNT as u64 * LARGE_SIZE + uncached
}

/// Makes the three sets under `root`: `small/`, `large/`, `uncached/` (`uncached` bytes in
/// 256 KiB files, at least one), filled with pseudo-random bytes.
pub fn make(root: &Path, uncached: u64) -> Result<Vec<Set>> {
    let mut rng = SmallRng::seed_from_u64(23);
    let mut sizes: Vec<u64> = (0..SMALL_COUNT)
        .map(|_| rng.gen_range(SMALL_MIN..=SMALL_MAX))
        .collect();
    let small = make_set(root, "small", &sizes, true, &mut rng)?;
    sizes = vec![LARGE_SIZE; LARGE_COUNT];
    let large = make_set(root, "large", &sizes, true, &mut rng)?;
    let n = (uncached / UNCACHED_SIZE).max(1) as usize;
    sizes = vec![UNCACHED_SIZE; n];
    let cold = make_set(root, "uncached", &sizes, false, &mut rng)?;
    Ok(vec![small, large, cold])
}

fn make_set(
    root: &Path,
    name: &str,
    sizes: &[u64],
    cached: bool,
    rng: &mut SmallRng,
) -> Result<Set> {
    let dir = root.join(name);
    std::fs::create_dir(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut set = Set {
        workload: Workload {
            name: name.to_string(),
            files: sizes.len(),
            bytes: sizes.iter().sum(),
            cached,
        },
        urls: Vec::new(),
        paths: Vec::new(),
    };
    let mut chunk = vec![0u8; 1 << 20];
    for (i, &size) in sizes.iter().enumerate() {
        let file = format!("{i:04}.bin");
        let path = dir.join(&file);
        let mut f =
            std::fs::File::create(&path).with_context(|| format!("creating {}", path.display()))?;
        let mut left = size;
        while left > 0 {
            let n = left.min(chunk.len() as u64) as usize;
            rng.fill_bytes(&mut chunk[..n]);
            f.write_all(&chunk[..n])
                .with_context(|| format!("writing {}", path.display()))?;
            left -= n as u64;
        }
        set.urls.push(format!("/{name}/{file}"));
        set.paths.push(path);
    }
    Ok(set)
}
