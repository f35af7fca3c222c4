//! `vecio bench tokio --http`: vecio-tokio's example server through vecio_tokio::fs against
//! tower-http's ServeDir, loaded by wrk (docs/tokio.md, "In a real service").

mod server;
mod tree;
pub mod view;
mod wrk;

use std::path::Path;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};
use vecio_host::pagecache;

use crate::experiment::options::{parse_count, parse_size, Common};
use crate::experiment::Env;
use crate::harness::cleanup::ScratchDir;
use crate::harness::progress::Phase;
pub use server::{SERVERS, SERVE_ENV};
pub use tree::Workload;

/// The HTTP options of `vecio bench tokio`.
#[derive(Args, Debug, Clone)]
pub struct HttpOptions {
    /// Also load vecio-tokio's example static file server with wrk, through vecio_tokio::fs
    /// against tower-http's ServeDir (tokio::fs): small cached files, large cached files,
    /// uncached files.
    #[arg(long)]
    pub http: bool,
    /// wrk's connections (it runs one thread).
    #[arg(long, default_value_t = 32, value_parser = parse_count)]
    pub http_connections: usize,
    /// Worker threads of each server's tokio runtime (wrk's thread takes the other CPU of a
    /// two-CPU machine).
    #[arg(long, default_value_t = 1, value_parser = parse_count)]
    pub http_workers: usize,
    /// Bytes of the uncached file set, in 256 KiB files (dropped from the page cache before
    /// each measurement).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub http_uncached: u64,
}

/// One server under one workload, over the repetitions (in the order they ran).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpCell {
    /// `small`, `large` or `uncached`.
    pub workload: String,
    /// `vecio` (vecio_tokio::fs) or `servedir` (tower-http's ServeDir, tokio::fs).
    pub server: String,
    /// Requests per second, per repetition.
    pub rps: Vec<f64>,
    /// Median latency (µs), per repetition.
    pub p50_us: Vec<f64>,
    /// 99th percentile latency (µs), per repetition.
    pub p99_us: Vec<f64>,
    /// MiB/s of responses, per repetition.
    pub mib_s: Vec<f64>,
    /// Responses with an error status, and socket errors and timeouts, over all repetitions.
    pub errors: u64,
}

/// Everything `--http` measured, and how.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct HttpReport {
    /// wrk's version line.
    pub wrk: String,
    /// wrk's threads (one).
    pub wrk_threads: u32,
    /// wrk's connections.
    pub connections: usize,
    /// Worker threads of each server's multi-threaded tokio runtime.
    pub workers: usize,
    /// Seconds per measurement (wrk takes whole seconds).
    pub seconds: u64,
    /// Repetitions.
    pub repeat: u32,
    /// The file sets.
    pub workloads: Vec<Workload>,
    /// Every server under every workload.
    pub cells: Vec<HttpCell>,
}

/// How long `--http` takes: six measurements per repetition, the tree's fill, the servers' start.
pub fn estimate(o: &HttpOptions, c: &Common) -> Duration {
    let secs = wrk::seconds(c.runtime) as f64 + 0.3;
    let fill = tree::bytes(o.http_uncached) as f64 / 400e6;
    Duration::from_secs_f64(6.0 * c.repeat as f64 * secs + fill + 1.0)
}

/// Makes the tree in a scratch directory, starts both servers, loads them in turn, stops them
/// and removes the tree.
pub fn run(o: &HttpOptions, c: &Common, env: &Env) -> Result<HttpReport> {
    let wrk_version = wrk::version().map_err(anyhow::Error::msg)?;
    let bin = server::locate(&env.exe)?;
    let parent = match &c.dir {
        Some(d) => d.clone(),
        None => std::env::current_dir()?,
    };
    crate::harness::scratch::ensure_free(&parent, tree::bytes(o.http_uncached))?;
    let scratch = ScratchDir::new_in("http", &parent)?;
    let root = scratch.path().join("root");
    std::fs::create_dir(&root).with_context(|| format!("creating {}", root.display()))?;
    let sets = tree::make(&root, o.http_uncached).context("making the served files")?;
    let servers = SERVERS
        .iter()
        .map(|via| server::start(&bin, &root, via, o.http_workers, scratch.path()))
        .collect::<Result<Vec<_>>>()?;
    let secs = wrk::seconds(c.runtime);
    let phase = Phase::timed(
        "bench tokio --http",
        Duration::from_secs(secs * 6 * u64::from(c.repeat)),
    );
    let mut cells = Vec::new();
    for set in &sets {
        let script = wrk::script(scratch.path(), &set.workload.name, &set.urls)?;
        let mut pair: Vec<HttpCell> = servers
            .iter()
            .map(|s| empty_cell(&set.workload.name, s.via))
            .collect();
        for rep in 0..c.repeat.max(1) {
            // vecio first in even repetitions, ServeDir first in odd ones.
            let order: [usize; 2] = if rep % 2 == 0 { [0, 1] } else { [1, 0] };
            for i in order {
                prepare_cache(&set.paths, set.workload.cached)?;
                let s = &servers[i];
                let run = |secs| {
                    wrk::run(s.addr, &script, o.http_connections, secs)
                        .with_context(|| format!("loading the {} server ({})", s.via, s.addr))
                };
                let mut load = run(secs)?;
                if load.requests == 0 {
                    // On a loaded machine (cold reads behind other I/O) a short run can end
                    // before any response does: once more, four times as long.
                    let longer = (secs * 4).max(4);
                    eprintln!(
                        "bench tokio --http: no request completed against the {} server in \
                         {secs} s; measuring again for {longer} s",
                        s.via
                    );
                    prepare_cache(&set.paths, set.workload.cached)?;
                    load = run(longer)?;
                }
                if load.requests == 0 {
                    bail!(
                        "wrk completed no request against the {} server ({}), in {secs} s and \
                         again in {} s",
                        s.via,
                        s.addr,
                        (secs * 4).max(4)
                    );
                }
                let cell = &mut pair[i];
                cell.rps.push(load.rps());
                cell.p50_us.push(load.p50_us);
                cell.p99_us.push(load.p99_us);
                cell.mib_s.push(load.mib_s());
                cell.errors += load.status + load.socket;
            }
        }
        cells.extend(pair);
    }
    phase.finish();
    for s in servers {
        if let Err(e) = s.process.stop() {
            eprintln!("bench tokio --http: {e:#}");
        }
    }
    Ok(HttpReport {
        wrk: wrk_version,
        wrk_threads: 1,
        connections: o.http_connections,
        workers: o.http_workers,
        seconds: secs,
        repeat: c.repeat,
        workloads: sets.into_iter().map(|s| s.workload).collect(),
        cells,
    })
}

fn empty_cell(workload: &str, server: &str) -> HttpCell {
    HttpCell {
        workload: workload.to_string(),
        server: server.to_string(),
        rps: Vec::new(),
        p50_us: Vec::new(),
        p99_us: Vec::new(),
        mib_s: Vec::new(),
        errors: 0,
    }
}

/// Warms every file of a cached set; writes back and drops every file of an uncached one.
fn prepare_cache(paths: &[std::path::PathBuf], cached: bool) -> Result<()> {
    for p in paths {
        if cached {
            pagecache::warm(p)?;
        } else {
            pagecache::flush_and_evict(Path::new(p))?;
        }
    }
    Ok(())
}
