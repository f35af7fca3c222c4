//! `vecio bench tokio`: seed 002's reads from tokio tasks, through tokio::fs, vecio-tokio,
//! tokio-uring and tokio's own io_uring driver, fio beside them; `--http` in a real service
//! (docs/tokio.md, "Measured").

use std::time::Duration;

use anyhow::Result;
use clap::Args;

use crate::experiment::options::{parse_count, parse_size, Common};
use crate::experiment::{Env, Experiment, Preset, Seed};

pub mod http;
pub mod io_uring_path;
mod run;
mod view;
pub use run::{run, Cell, FioCell, TokioReport};

/// Bytes per read.
pub const READ: usize = 16 * 1024;

/// Options of `vecio bench tokio`.
#[derive(Args, Debug, Clone)]
pub struct TokioOptions {
    /// Where, how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// Size of the cached file.
    #[arg(long, default_value = "64M", value_parser = parse_size)]
    pub medium: u64,
    /// Size of the large (uncached, O_DIRECT) file.
    #[arg(long = "size", default_value = "1G", value_parser = parse_size)]
    pub large: u64,
    /// Tasks in flight.
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub tasks: usize,
    /// Run the tokio::fs and vecio-tokio paths on a current-thread runtime instead of the
    /// multi-threaded one (tokio-uring always runs its own single thread).
    #[arg(long)]
    pub current_thread: bool,
    /// Do not run fio's io_uring engine on the O_DIRECT file (the device's ceiling).
    #[arg(long)]
    pub no_fio: bool,
    /// The HTTP measurement (`--http` and its settings).
    #[command(flatten)]
    pub http: http::HttpOptions,
}

/// The experiment.
pub struct Tokio;

impl Experiment for Tokio {
    const KEY: &'static str = "tokio";
    const ABOUT: &'static str =
        "tokio::fs (spawn_blocking) against vecio-tokio: cached, O_DIRECT, \
                                 73/18/9 mix (seed 002)";
    const FIELDS: &'static [&'static str] = &["cells"];
    const SEED: &'static Seed = &view::SEED;
    type Options = TokioOptions;
    type Report = TokioReport;

    fn command(cmd: clap::Command) -> clap::Command {
        cmd.mut_arg("runtime", |a| a.default_value("3"))
    }

    fn preset(o: &mut TokioOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.medium = p.medium();
        o.large = p.size(256 << 20, 1 << 30);
        o.common.runtime = p.runtime(0.5, 3.0);
        o.common.repeat = p.repeat(1, 3);
        o.no_fio = p.no_fio;
        o.http.http = p.http;
    }

    /// Four paths by three files plus fio, 0.3 s of set-up each per repetition, the fill of
    /// the two files, and the HTTP measurement when asked for.
    fn estimate(o: &TokioOptions) -> Duration {
        let cells = (13 * o.common.repeat) as f64 * (o.common.runtime.as_secs_f64() + 0.3);
        let fill = (o.medium + o.large) as f64 / 400e6;
        let http = o.http.http.then(|| http::estimate(&o.http, &o.common));
        Duration::from_secs_f64(cells + fill) + http.unwrap_or_default()
    }

    fn run(opts: &TokioOptions, env: &Env) -> Result<TokioReport> {
        run(opts, env)
    }
}
