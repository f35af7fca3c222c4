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
