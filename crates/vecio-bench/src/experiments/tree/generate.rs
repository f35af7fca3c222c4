//! The tree the experiment extracts: a seeded, source-like one packed with `tar`, or the
//! user's tarball.

use std::path::Path;
use std::process::{Command, Stdio};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// The generator's seed: the same tree on every run.
const SEED: u64 = 0x2701_5eed_0f7e_e5a1;
/// Deepest directory level below the tree's root.
const MAX_DEPTH: usize = 8;
/// One file in this many is large (1 to 4 MiB); the rest are 1 to 16 KiB.
const LARGE_ONE_IN: u64 = 500;

/// What the tree holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TreeInfo {
    /// Where it comes from: `generated (seed ...)` or the user's tarball.
    pub source: String,
    /// Regular files.
    pub files: u64,
    /// Directories, its root included.
    pub dirs: u64,
    /// Bytes of its regular files.
    pub bytes: u64,
}

/// xorshift64*: small, fast and the same everywhere.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    /// A number in `lo..=hi`.
    fn range(&mut self, lo: u64, hi: u64) -> u64 {
        lo + self.next() % (hi - lo + 1)
    }
}

/// The generated tree's shape: each directory's parent (by index; the root is 0 and has
/// none) and depth, and each file's directory and size.
#[derive(Debug, PartialEq, Eq)]
pub struct Shape {
    /// `(parent, depth)` of each directory after the root.
    pub dirs: Vec<(usize, usize)>,
    /// `(directory, bytes)` of each file.
    pub files: Vec<(usize, u64)>,
}

/// The shape of a tree of `files` files in about `files * 3 / 20` directories (a kernel tree
/// has about one directory per 6.5 files), depth at most [`MAX_DEPTH`].
pub fn shape(files: u64) -> Shape {
    let mut rng = Rng(SEED);
    let ndirs = (files * 3 / 20).max(1) as usize;
    let mut depth = vec![0usize];
    let mut dirs = Vec::with_capacity(ndirs);
    while depth.len() < ndirs {
        // New directories go mostly under recent ones: deep chains as well as wide levels.
        let n = depth.len() as u64;
        let parent = if rng.next() % 2 == 0 {
            rng.range(n.saturating_sub(8), n - 1)
        } else {
            rng.range(0, n - 1)
        } as usize;
        if depth[parent] >= MAX_DEPTH {
            continue;
        }
        dirs.push((parent, depth[parent] + 1));
        depth.push(depth[parent] + 1);
    }
    let files = (0..files)
        .map(|_| {
            let dir = rng.range(0, ndirs as u64 - 1) as usize;
            let bytes = if rng.next() % LARGE_ONE_IN == 0 {
                rng.range(1 << 20, 4 << 20)
            } else {
                rng.range(1 << 10, 16 << 10)
            };
            (dir, bytes)
        })
        .collect();
    Shape { dirs, files }
}

/// Writes the tree of `files` files under `root` (created), returning what it holds.
pub fn write_tree(root: &Path, files: u64) -> Result<TreeInfo> {
    let s = shape(files);
    let mut paths = vec![root.to_path_buf()];
    std::fs::create_dir(root).with_context(|| root.display().to_string())?;
    for (i, &(parent, _)) in s.dirs.iter().enumerate() {
        let p = paths[parent].join(format!("dir{i}"));
        std::fs::create_dir(&p).with_context(|| p.display().to_string())?;
        paths.push(p);
    }
    let mut rng = Rng(SEED ^ 0xdada);
    let mut buf = vec![0u8; 4 << 20];
    for w in buf.chunks_exact_mut(8) {
        w.copy_from_slice(&rng.next().to_le_bytes());
    }
    let mut bytes = 0;
    for (i, &(dir, len)) in s.files.iter().enumerate() {
        let p = paths[dir].join(format!("file{i}.c"));
        let start = (rng.next() % 4096) as usize;
        let end = (start + len as usize).min(buf.len());
        let data = &buf[end - len as usize..end];
        std::fs::write(&p, data).with_context(|| p.display().to_string())?;
        bytes += len;
    }
    Ok(TreeInfo {
        source: format!("generated (seed {SEED:#x})"),
        files,
        dirs: paths.len() as u64,
        bytes,
    })
}

/// Packs the directory `dir` into `tarball` with `tar -c` (its entries at the archive's top).
pub fn pack(dir: &Path, tarball: &Path) -> Result<()> {
    tar("-c", tarball, dir, &["."])
}

/// Extracts `tarball` into the existing directory `dir` with `tar -x`.
pub fn extract(tarball: &Path, dir: &Path) -> Result<()> {
    tar("-x", tarball, dir, &[])
}

/// `tar OP -f TARBALL -C DIR ARGS`.
fn tar(op: &str, tarball: &Path, dir: &Path, args: &[&str]) -> Result<()> {
    let mut cmd = Command::new("tar");
    cmd.args([op, "-f"])
        .arg(tarball)
        .arg("-C")
        .arg(dir)
        .args(args);
    let out = cmd
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running tar")?;
    if !out.status.success() {
        bail!(
            "tar failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// Files, directories and bytes under `dir`, counted by a walk: what the user's tarball holds
/// once extracted.
pub fn count(dir: &Path, source: String) -> Result<TreeInfo> {
    let (files, dirs, bytes) = (0, 1, 0);
    let mut info = TreeInfo {
        source,
        files,
        dirs,
        bytes,
    };
    super::phases::walk(dir, &mut |_, e| {
        info.dirs += u64::from(e.is_dir);
        if e.is_file {
            info.files += 1;
            info.bytes += e.len;
        }
        Ok(())
    })?;
    Ok(info)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same shape every time, source-tree-like: about 1,500 directories for 10,000 files,
    /// no deeper than [`MAX_DEPTH`], most files small and a few large.
    #[test]
    fn the_shape_is_fixed_and_source_like() {
        let s = shape(10_000);
        assert_eq!(s, shape(10_000));
        assert_eq!(s.dirs.len() + 1, 1500);
        assert!(s.dirs.iter().all(|&(_, d)| (1..=MAX_DEPTH).contains(&d)));
        assert!(s.dirs.iter().any(|&(_, d)| d >= 6), "some depth");
        let small = s.files.iter().filter(|f| f.1 <= 16 << 10).count();
        let large = s.files.iter().filter(|f| f.1 >= 1 << 20).count();
        assert!(small > 9_900 && (5..60).contains(&large), "{small} {large}");
        assert_eq!(shape(300).files.len(), 300);
    }
}
