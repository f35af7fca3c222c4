//! Helpers shared by the CLI's integration tests: run the `vecio` binary as a user would, in a
//! scratch directory on the target's file system (not tmpfs).

#![allow(dead_code)]

use std::path::Path;
use std::process::{Command, Output};

/// Runs `vecio ARGS` in `dir`, progress bars off, and returns what it printed.
pub fn vecio(dir: &Path, args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args(args)
        .current_dir(dir)
        .env("VECIO_NO_PROGRESS", "1")
        .output()
        .expect("running vecio")
}

/// A scratch directory named `PREFIX...` under the target directory.
pub fn scratch_dir(prefix: &str) -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix(prefix)
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// Mount points under `dir`.
pub fn mounts_under(dir: &Path) -> Vec<String> {
    let info = std::fs::read_to_string("/proc/self/mountinfo").unwrap_or_default();
    let want = dir.to_string_lossy().into_owned();
    info.lines()
        .filter_map(|l| l.split(' ').nth(4))
        .filter(|m| m.starts_with(&want))
        .map(String::from)
        .collect()
}

/// Processes whose command line names something under `dir` (fio, vecio fuse, ...).
pub fn processes_using(dir: &Path) -> Vec<String> {
    let want = dir.to_string_lossy().into_owned();
    let mut found = Vec::new();
    for e in std::fs::read_dir("/proc").into_iter().flatten().flatten() {
        let Ok(cmd) = std::fs::read(e.path().join("cmdline")) else {
            continue;
        };
        let cmd = String::from_utf8_lossy(&cmd).replace('\0', " ");
        if cmd.contains(&want) {
            found.push(format!("{}: {cmd}", e.file_name().to_string_lossy()));
        }
    }
    found
}
