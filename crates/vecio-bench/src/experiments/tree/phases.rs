//! The phases of a tree's life, each timed (extract, cold walk, read all, remove), and the
//! server's CPU time read from `/proc` around them.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// A phase of the tree's life.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum Phase {
    /// `tar -x` of the tarball into an empty directory.
    #[default]
    Extract,
    /// Caches dropped (not timed), then `lstat` of every entry, directory by directory.
    ColdWalk,
    /// Every regular file read to its end.
    Read,
    /// `rm -rf` of the extracted tree.
    Remove,
}

/// Every phase, in the order a tree lives them.
pub const PHASES: [Phase; 4] = [Phase::Extract, Phase::ColdWalk, Phase::Read, Phase::Remove];

impl Phase {
    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Phase::Extract => "extract",
            Phase::ColdWalk => "cold walk",
            Phase::Read => "read all",
            Phase::Remove => "remove",
        }
    }
}

/// Runs `phase` on the tree at `dir` (extracted from `tarball`); its seconds. Every phase
/// starts after a `sync` (not timed), so no phase pays for the previous one's dirty pages or
/// access times (a native `rm -rf` right after the reads took 0.3 to 8 s without it); the cold
/// walk drops the caches first when `drop` is set. The extraction, when `drop` is set, starts
/// after a cache drop too, then reads the tarball back into the page cache (neither timed): on
/// an ext4 without a journal (this machine's) the kernel will not reuse an inode deleted in the
/// last 60 s (300 s while its inode-table block is dirty) and checks each candidate in the
/// cached inode table (`recently_deleted`, fs/ext4/ialloc.c), so an extraction right after the
/// previous subject's `rm -rf` paid for that subject's deletions: a native `tar -x` of 7,080
/// files took 0.8 to 1.3 s after a removal and 0.13 s with the inode table dropped
/// (2026-11-27, perf: `find_get_block_common` under `recently_deleted`). The drop writes the
/// table back and evicts it, so each subject's extraction starts alike.
pub fn run(phase: Phase, tarball: &Path, dir: &Path, drop: bool) -> Result<f64> {
    let starts_cold = drop && matches!(phase, Phase::ColdWalk | Phase::Extract);
    if starts_cold {
        drop_caches()?;
    } else {
        rustix::fs::sync();
    }
    if phase == Phase::Extract {
        warm(tarball)?;
    }
    let t0 = Instant::now();
    match phase {
        Phase::Extract => {
            std::fs::create_dir(dir).with_context(|| dir.display().to_string())?;
            super::generate::extract(tarball, dir)?;
        }
        Phase::ColdWalk => walk(dir, &mut |_, _| Ok(()))?,
        Phase::Read => {
            let mut buf = vec![0u8; 1 << 20];
            walk(dir, &mut |p, m| read_file(p, m, &mut buf))?;
        }
        Phase::Remove => remove(dir)?,
    }
    Ok(t0.elapsed().as_secs_f64())
}

/// Reads `file` to its end, so it is in the page cache.
fn warm(file: &Path) -> Result<()> {
    let mut f = std::fs::File::open(file).with_context(|| file.display().to_string())?;
    std::io::copy(&mut f, &mut std::io::sink()).with_context(|| file.display().to_string())?;
    Ok(())
}

/// `sync; echo 3 > /proc/sys/vm/drop_caches`: clean pages, dentries and inodes leave every
/// cache, FUSE's included.
pub fn drop_caches() -> Result<()> {
    rustix::fs::sync();
    std::fs::write("/proc/sys/vm/drop_caches", "3\n")
        .context("cannot drop the caches (/proc/sys/vm/drop_caches)")
}

/// What the walk learns of an entry from its `lstat`.
pub(super) struct Entry {
    pub(super) is_dir: bool,
    pub(super) is_file: bool,
    pub(super) len: u64,
}

/// Calls `each` on every entry under `dir` with its `lstat`, directories before what they hold.
/// The `lstat` is `newfstatat`, as `find` and `du` call it: std's `symlink_metadata` calls
/// `statx` for every field, birth time included, which `READDIRPLUS` entries do not carry, so
/// FUSE would send a `STATX` for each entry that neither tool asks for.
pub(super) fn walk(dir: &Path, each: &mut dyn FnMut(&Path, &Entry) -> Result<()>) -> Result<()> {
    use rustix::fs::FileType;
    let mut stack: Vec<PathBuf> = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).with_context(|| d.display().to_string())? {
            let p = e?.path();
            let st = rustix::fs::lstat(&p).with_context(|| p.display().to_string())?;
            let kind = FileType::from_raw_mode(st.st_mode);
            let entry = Entry {
                is_dir: kind == FileType::Directory,
                is_file: kind == FileType::RegularFile,
                len: st.st_size as u64,
            };
            each(&p, &entry)?;
            if entry.is_dir {
                stack.push(p);
            }
        }
    }
    Ok(())
}

/// Reads the regular file `p` to its end (as `cat` would); anything else is skipped.
fn read_file(p: &Path, m: &Entry, buf: &mut [u8]) -> Result<()> {
    if !m.is_file {
        return Ok(());
    }
    let mut f = std::fs::File::open(p).with_context(|| p.display().to_string())?;
    let mut got = 0u64;
    while let n @ 1.. = f.read(buf).with_context(|| p.display().to_string())? {
        got += n as u64;
    }
    if got != m.len {
        bail!("{}: read {got} bytes of {}", p.display(), m.len);
    }
    Ok(())
}

/// `rm -rf --one-file-system DIR`.
fn remove(dir: &Path) -> Result<()> {
    let out = Command::new("rm")
        .args(["-rf", "--one-file-system"])
        .arg(dir)
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .output()
        .context("running rm")?;
    if !out.status.success() || dir.exists() {
        bail!(
            "rm -rf {} failed ({}): {}",
            dir.display(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok(())
}

/// CPU seconds (user + system) of process `pid` and every process below it, from
/// `/proc/PID/stat` and the `children` lists of its threads; 0 for a process gone. Each
/// process counts the children it has already waited for too (`cutime`, `cstime`), so the sum
/// does not fall when a child of the tree exits and is reaped between two readings.
pub fn tree_cpu_s(pid: u32) -> f64 {
    let tick = rustix::param::clock_ticks_per_second() as f64;
    let mut total = 0u64;
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        total += cpu_ticks(p).unwrap_or(0);
        let Ok(tasks) = std::fs::read_dir(format!("/proc/{p}/task")) else {
            continue;
        };
        for t in tasks.flatten() {
            let kids = std::fs::read_to_string(t.path().join("children")).unwrap_or_default();
            stack.extend(
                kids.split_whitespace()
                    .filter_map(|k| k.parse::<u32>().ok()),
            );
        }
    }
    total as f64 / tick
}

/// utime + stime + cutime + cstime of `pid` in clock ticks (fields 14 to 17 of
/// `/proc/PID/stat`, counted after the command name, which may hold spaces).
fn cpu_ticks(pid: u32) -> Option<u64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    let rest = &stat[stat.rfind(')')? + 2..];
    let f: Vec<&str> = rest.split(' ').collect();
    // `rest` starts at field 3 (state): utime is field 14, so index 11.
    (11..15).map(|i| f.get(i)?.parse::<u64>().ok()).sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A shell that runs a busy child until told to stop, then sleeps: the tree's CPU time
    /// grows while the child runs and stays counted (in the shell's cutime) after it ended.
    #[test]
    fn a_tree_counts_its_children_while_they_run_and_after() {
        let dir = tempfile::tempdir().expect("tempdir");
        let stop = dir.path().join("stop");
        let script = format!(
            "sh -c 'while [ ! -e {0} ]; do :; done'; sleep 30",
            stop.display()
        );
        let mut shell = Command::new("sh")
            .args(["-c", &script])
            .spawn()
            .expect("spawn sh");
        let pid = shell.id();
        let start = Instant::now();
        let mut running = 0.0;
        while running < 0.05 && start.elapsed().as_secs() < 30 {
            std::thread::sleep(std::time::Duration::from_millis(50));
            running = tree_cpu_s(pid);
        }
        std::fs::write(&stop, b"").expect("stop file");
        std::thread::sleep(std::time::Duration::from_millis(500));
        let after = tree_cpu_s(pid);
        let _ = shell.kill();
        let _ = shell.wait();
        assert!(running >= 0.05, "a busy child counted {running} s in 30 s");
        assert!(
            after >= running,
            "the tree's time fell from {running} to {after} s"
        );
        assert_eq!(tree_cpu_s(pid), 0.0, "a process gone counts nothing");
        assert_eq!(tree_cpu_s(u32::MAX), 0.0);
    }
}
