//! `vecio bench fuse`: the seed-004 table (32 x 4 KiB O_DIRECT preadv/pwritev through FUSE).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use vecio_bench::fuse::{self, FuseOptions};

use crate::size::parse_size;

/// Options of `vecio bench fuse`.
#[derive(Args, Debug, Clone)]
pub struct FuseBenchArgs {
    /// Directory for the source tree and the mount points (default: the current directory;
    /// tmpfs is no good for direct I/O).
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Bytes of the data file (k, M, G suffixes).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub size: u64,
    /// Seconds per measurement.
    #[arg(long, default_value_t = 5.0)]
    pub runtime: f64,
    /// Repetitions (the spread in the tables comes from these).
    #[arg(long, default_value_t = 3)]
    pub repeat: u32,
    /// Do not build and measure the libfuse passthrough examples.
    #[arg(long)]
    pub no_libfuse: bool,
    /// Also measure this `passthrough_hp` binary (built from libfuse's sources; Debian's
    /// libfuse has no such example), with and without its passthrough.
    #[arg(long, value_name = "PATH")]
    pub libfuse_hp: Option<PathBuf>,
    /// Skip the buffered table (FUSE_PASSTHROUGH against the plain path).
    #[arg(long)]
    pub no_buffered: bool,
    /// Write every figure to this JSON file.
    #[arg(long)]
    pub json: Option<PathBuf>,
}

/// Runs `vecio bench fuse`.
pub fn run(a: FuseBenchArgs) -> Result<()> {
    let opts = FuseOptions {
        dir: a.dir,
        size: a.size,
        runtime: std::time::Duration::try_from_secs_f64(a.runtime)
            .ok()
            .filter(|d| !d.is_zero())
            .with_context(|| {
                format!("--runtime {}: want a positive number of seconds", a.runtime)
            })?,
        repeat: a.repeat.max(1),
        libfuse: !a.no_libfuse,
        buffered: !a.no_buffered,
        passthrough_hp: a.libfuse_hp,
    };
    let exe = std::env::current_exe().context("finding the vecio binary")?;
    let report = fuse::run(&opts, &exe)?;
    print!("{}", fuse::render(&report));
    if let Some(p) = &a.json {
        std::fs::write(p, serde_json::to_string_pretty(&report)?)
            .with_context(|| format!("writing {}", p.display()))?;
        eprintln!("figures written to {}", p.display());
    }
    Ok(())
}
