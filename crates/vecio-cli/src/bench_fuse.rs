//! `vecio bench fuse`: the seed-004 table (32 x 4 KiB O_DIRECT preadv/pwritev through FUSE).

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use vecio_bench::experiments::fuse::{self, FuseOptions};

use crate::size::{parse_seconds, parse_size};

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
    #[arg(long, default_value = "5", value_parser = parse_seconds)]
    pub runtime: std::time::Duration,
    /// Repetitions (the spread in the tables comes from these).
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..))]
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
        runtime: a.runtime,
        repeat: a.repeat,
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
