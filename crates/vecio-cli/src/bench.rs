//! `vecio bench ...`: runs `vecio-bench` with the same arguments, as git and cargo run their
//! subcommands, so this binary (the servers users deploy) links none of the bench. The bench
//! program is looked for beside `vecio`, then on `PATH`; it is told where `vecio` is (its
//! servers are what it measures), and `vecio` hands it its process: the same process id, exit
//! status and signals.

use std::ffi::OsString;
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::Command;

use anyhow::{Context, Result};
use clap::Args;

/// The bench program's name.
pub const PROGRAM: &str = "vecio-bench";

/// Everything after `vecio bench`, for `vecio-bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// An experiment (writev, nowait, tokio, callcost, loop, fuse), all, compare or report,
    /// and its options.
    #[arg(trailing_var_arg = true, allow_hyphen_values = true, num_args = 0..)]
    pub args: Vec<OsString>,
}

/// `vecio-bench` beside this program, else on `PATH`.
pub fn program() -> Option<PathBuf> {
    let beside = std::env::current_exe().ok()?.with_file_name(PROGRAM);
    if beside.is_file() {
        return Some(beside);
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|d| d.join(PROGRAM))
        .find(|p| p.is_file())
}

/// Replaces this process with `vecio-bench ARGS`; returns only if that cannot start.
pub fn run(a: BenchArgs) -> Result<()> {
    let bench = program().context(
        "vecio bench runs vecio-bench, found neither beside vecio nor on PATH (`cargo install \
         --path crates/vecio-cli` installs both)",
    )?;
    let me = std::env::current_exe().context("finding the vecio binary")?;
    let argv0 = std::env::args_os().next().unwrap_or_else(|| "vecio".into());
    let mut name = argv0;
    name.push(" bench");
    let err = Command::new(&bench)
        .arg0(name)
        .args(&a.args)
        .env("VECIO", &me)
        .exec();
    Err(err).with_context(|| format!("starting {}", bench.display()))
}
