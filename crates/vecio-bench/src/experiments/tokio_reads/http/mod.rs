//! `vecio bench tokio --http`: vecio-tokio's example server through vecio_tokio::fs against
//! tower-http's ServeDir, loaded by wrk (docs/tokio.md, "In a real service"). The example
//! server (`examples/serve`) runs as a process on a loopback port it picks, found beside the
//! bench or where `VECIO_SERVE` says. Both serve one tree in a scratch directory: many small
//! files (4-64 KiB) and a few large ones (8 MiB), both kept in the page cache, and a set of
//! 256 KiB files dropped from it before each measurement.

pub mod view;
mod wrk;

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use clap::Args;
use rand::rngs::SmallRng;
use rand::{Rng, RngCore, SeedableRng};
use serde::{Deserialize, Serialize};
use vecio_host::pagecache;

use crate::experiment::options::{parse_count, parse_size, Common};
use crate::experiment::Env;
use crate::harness::cleanup::ScratchDir;
use crate::harness::progress::Phase;
use crate::harness::server::ServerProcess;

/// Names the example server's binary when it is not beside the bench.
pub const SERVE_ENV: &str = "VECIO_SERVE";

/// The two servers: `--via` of the example, as the tables name them.
pub const SERVERS: [&str; 2] = ["vecio", "servedir"];

/// Small files, each 4 to 64 KiB.
const SMALL: (usize, u64, u64) = (1000, 4 << 10, 64 << 10);
/// Large files and the bytes of each.
const LARGE: (usize, u64) = (4, 8 << 20);
/// Bytes of each uncached file.
const UNCACHED_SIZE: u64 = 256 << 10;

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
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
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
    let fill = tree_bytes(o.http_uncached) as f64 / 400e6;
    Duration::from_secs_f64(6.0 * c.repeat as f64 * secs + fill + 1.0)
}

/// Makes the tree in a scratch directory, starts both servers, loads them in turn, stops them
/// and removes the tree.
pub fn run(o: &HttpOptions, c: &Common, env: &Env) -> Result<HttpReport> {
    let wrk_version = wrk::version().map_err(anyhow::Error::msg)?;
    let bin = locate(&env.exe)?;
    let parent = c.scratch_parent()?;
    crate::harness::scratch::ensure_free(&parent, tree_bytes(o.http_uncached))?;
    let scratch = ScratchDir::new_in("http", &parent)?;
    let root = scratch.path().join("root");
    std::fs::create_dir(&root).with_context(|| format!("creating {}", root.display()))?;
    let sets = make_tree(&root, o.http_uncached).context("making the served files")?;
    let servers = SERVERS
        .iter()
        .map(|via| start(&bin, &root, via, o.http_workers, scratch.path()))
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
            .map(|s| HttpCell {
                workload: set.workload.name.clone(),
                server: s.via.to_string(),
                ..HttpCell::default()
            })
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
                // On a loaded machine (cold reads behind other I/O) a short run can end before
                // any response does: once more, four times as long.
                let longer = (secs * 4).max(4);
                if load.requests == 0 {
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
                         again in {longer} s",
                        s.via,
                        s.addr
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

/// Warms every file of a cached set; writes back and drops every file of an uncached one.
fn prepare_cache(paths: &[PathBuf], cached: bool) -> Result<()> {
    for p in paths {
        if cached {
            pagecache::warm(p)?;
        } else {
            pagecache::flush_and_evict(p)?;
        }
    }
    Ok(())
}

/// The example's binary: `$VECIO_SERVE`, else `examples/serve` or `serve` beside `exe` (the
/// bench).
fn locate(exe: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(SERVE_ENV) {
        let p = PathBuf::from(p);
        anyhow::ensure!(p.is_file(), "{SERVE_ENV}={}: no such file", p.display());
        return Ok(p);
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("examples/serve"), dir.join("serve")]
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "vecio bench tokio --http serves files with vecio-tokio's example server, which \
                 is not built: no {} (build it with `cargo build --release -p vecio-tokio \
                 --example serve`, or name it with {SERVE_ENV}=PATH)",
                dir.join("examples/serve").display()
            )
        })
}

/// A started server (`vecio` or `servedir`), where it listens, and its process.
struct Running {
    via: &'static str,
    addr: SocketAddr,
    process: ServerProcess,
}

/// Starts `serve ROOT --addr 127.0.0.1:0 --via VIA --workers WORKERS`, its output in
/// `log_dir/serve-VIA.log`, and waits until it listens.
fn start(
    bin: &Path,
    root: &Path,
    via: &'static str,
    workers: usize,
    log_dir: &Path,
) -> Result<Running> {
    let mut cmd = Command::new(bin);
    cmd.arg(root)
        .args(["--addr", "127.0.0.1:0", "--via", via, "--workers"])
        .arg(workers.to_string());
    let log = log_dir.join(format!("serve-{via}.log"));
    let (process, addr) = ServerProcess::start_tcp(cmd, &log)
        .with_context(|| format!("starting the example server --via {via}"))?;
    Ok(Running { via, addr, process })
}

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

/// A workload's files: their URL paths (`/small/0001.bin`, ...) and their paths on disk.
struct Set {
    workload: Workload,
    urls: Vec<String>,
    paths: Vec<PathBuf>,
}

/// Bytes the tree takes with `uncached` bytes of uncached files (an upper bound).
fn tree_bytes(uncached: u64) -> u64 {
    SMALL.0 as u64 * SMALL.2 + LARGE.0 as u64 * LARGE.1 + uncached
}

/// Makes the three sets under `root`: `small/`, `large/`, `uncached/` (`uncached` bytes in
/// 256 KiB files, at least one), filled with pseudo-random bytes.
fn make_tree(root: &Path, uncached: u64) -> Result<Vec<Set>> {
    let mut rng = SmallRng::seed_from_u64(23);
    let mut sizes: Vec<u64> = (0..SMALL.0)
        .map(|_| rng.gen_range(SMALL.1..=SMALL.2))
        .collect();
    let small = make_set(root, "small", &sizes, true, &mut rng)?;
    sizes = vec![LARGE.1; LARGE.0];
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
    for (i, &size) in sizes.iter().enumerate() {
        let file = format!("{i:04}.bin");
        let path = dir.join(&file);
        let mut data = vec![0u8; size as usize];
        rng.fill_bytes(&mut data);
        std::fs::write(&path, data).with_context(|| format!("writing {}", path.display()))?;
        set.urls.push(format!("/{name}/{file}"));
        set.paths.push(path);
    }
    Ok(set)
}
