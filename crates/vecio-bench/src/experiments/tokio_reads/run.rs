//! Measuring one cell: `tasks` tokio tasks each reading 16 KiB at a time for `runtime`.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use vecio::{AlignedBuf, Direct, EngineKind};

use super::{TokioOptions, READ};
use crate::harness::meta::RunMeta;
use crate::harness::scratch::ScratchFile;
use vecio_host::pagecache;

/// One measured cell (scenario x path), its median run and the spread over runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// cached, direct or mix.
    pub scenario: String,
    /// tokio::fs, vecio-tokio or tokio-uring.
    pub path: String,
    /// MiB/s per run.
    pub mib_s: Vec<f64>,
    /// p50 / p99 / p99.9 / mean latency (µs) of the median run.
    pub p50_us: f64,
    /// 99th percentile (µs).
    pub p99_us: f64,
    /// 99.9th percentile (µs).
    pub p999_us: f64,
    /// Mean latency (µs).
    pub mean_us: f64,
}

/// Every cell of a run, and how it ran (absent from runs recorded before they were kept).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct TokioReport {
    /// The run's set-up.
    #[serde(default)]
    pub meta: Option<RunMeta>,
    /// Size of the cached file.
    #[serde(default)]
    pub medium: u64,
    /// Size of the large file.
    #[serde(default)]
    pub large: u64,
    /// Seconds per measurement.
    #[serde(default)]
    pub runtime_s: f64,
    /// Repetitions.
    #[serde(default)]
    pub repeat: u32,
    /// Tasks in flight.
    #[serde(default)]
    pub tasks: usize,
    /// tokio::fs and vecio-tokio ran on a current-thread runtime.
    #[serde(default)]
    pub current_thread: bool,
    /// Cells.
    pub cells: Vec<Cell>,
}

/// Files of a run: the cached file, the large file.
pub(super) struct Files {
    pub(super) medium: ScratchFile,
    pub(super) large: ScratchFile,
}

/// Which file and offset request `i` of task `t` reads in `scenario`.
fn pick(scenario: &str, rng: &mut SmallRng, seq: &mut u64, f: &Files) -> (bool, u64) {
    let blocks = |len: u64| (len / READ as u64).max(1);
    let r = match scenario {
        "cached" => 0,
        "direct" => 80,
        _ => rng.gen_range(0..100),
    };
    if r < 73 {
        (
            false,
            rng.gen_range(0..blocks(f.medium.len())) * READ as u64,
        )
    } else if r < 91 {
        (true, rng.gen_range(0..blocks(f.large.len())) * READ as u64)
    } else {
        *seq = (*seq + READ as u64) % (blocks(f.large.len()) * READ as u64);
        (true, *seq)
    }
}

/// Latencies (ns) and bytes of one task.
pub(super) type TaskOut = (Vec<u64>, u64);

/// One task's reads: each picked as `scenario` says (`large` file or not, and the offset),
/// timed around `read(large, offset, buf)`, which hands the buffer back (`None` ends the task).
pub(super) async fn read_loop<B, R, F>(
    scenario: &'static str,
    files: &Files,
    seed: u64,
    until: Instant,
    mut buf: B,
    mut read: R,
) -> TaskOut
where
    R: FnMut(bool, u64, B) -> F,
    F: std::future::Future<Output = Option<(std::io::Result<usize>, B)>>,
{
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seq = seed * (64 << 20);
    let (mut lat, mut bytes) = (Vec::new(), 0u64);
    while Instant::now() < until {
        let (large, off) = pick(scenario, &mut rng, &mut seq, files);
        let t = Instant::now();
        let Some((n, b)) = read(large, off, buf).await else {
            break;
        };
        buf = b;
        lat.push(t.elapsed().as_nanos() as u64);
        bytes += n.unwrap_or(0) as u64;
    }
    (lat, bytes)
}

async fn task_tokio_fs(
    scenario: &'static str,
    files: Arc<(Files, std::fs::File, std::fs::File)>,
    seed: u64,
    until: Instant,
) -> TaskOut {
    let buf = AlignedBuf::page_aligned(READ);
    let read = |large: bool, off: u64, mut buf: AlignedBuf| {
        let f = files.clone();
        async move {
            tokio::task::spawn_blocking(move || {
                let file = if large { &f.2 } else { &f.1 };
                (file.read_at(&mut buf, off), buf)
            })
            .await
            .ok()
        }
    };
    read_loop(scenario, &files.0, seed, until, buf, read).await
}

async fn task_vecio(
    scenario: &'static str,
    files: Arc<(Files, vecio_tokio::File, vecio_tokio::File)>,
    seed: u64,
    until: Instant,
) -> TaskOut {
    let shared = &*files;
    let read = |large: bool, off: u64, buf: AlignedBuf| async move {
        let file = if large { &shared.2 } else { &shared.1 };
        Some(file.read_at(buf, off).await)
    };
    read_loop(
        scenario,
        &files.0,
        seed,
        until,
        AlignedBuf::page_aligned(READ),
        read,
    )
    .await
}

/// Opens the large file: O_DIRECT for `direct` and the mix's large reads (as the seed).
fn std_open(path: &std::path::Path, direct: bool) -> Result<std::fs::File> {
    let mut o = std::fs::OpenOptions::new();
    o.read(true);
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    Ok(o.open(path)?)
}

/// The tokio::fs-style path: every read through `spawn_blocking`.
fn measure_tokio_fs(
    rt: &tokio::runtime::Runtime,
    scenario: &'static str,
    files: Files,
    opts: &TokioOptions,
    until: Instant,
) -> Result<(Vec<TaskOut>, Files)> {
    let m = std_open(files.medium.path(), false)?;
    let l = std_open(files.large.path(), true)?;
    let shared = Arc::new((files, m, l));
    let outs = rt.block_on(async {
        let hs: Vec<_> = (0..opts.tasks as u64)
            .map(|s| tokio::spawn(task_tokio_fs(scenario, shared.clone(), s + 1, until)))
            .collect();
        let mut outs = Vec::new();
        for h in hs {
            outs.push(h.await.unwrap_or_default());
        }
        outs
    });
    let files = Arc::try_unwrap(shared)
        .ok()
        .context("files still shared")?
        .0;
    Ok((outs, files))
}

/// One measurement: (MiB/s, sorted latencies in ns).
fn measure(
    rt: &tokio::runtime::Runtime,
    scenario: &'static str,
    path: &'static str,
    files: Files,
    opts: &TokioOptions,
) -> Result<(f64, Vec<u64>, Files)> {
    if scenario != "cached" {
        pagecache::evict(files.large.path())?;
    }
    let until = Instant::now() + opts.common.runtime;
    let start = Instant::now();
    let (outs, files) = if path == "tokio-uring" {
        super::uring_path::measure(scenario, files, opts, until)?
    } else if path == "tokio::fs" {
        measure_tokio_fs(rt, scenario, files, opts, until)?
    } else {
        let (outs, files) = rt.block_on(async {
            let driver = vecio_tokio::Driver::new(EngineKind::Uring.build()?)?;
            let cached = vecio::File::options().read(true).direct(Direct::Off);
            let direct = vecio::File::options().read(true).direct(Direct::On);
            let m = driver.open(files.medium.path(), cached).await?;
            let l = driver.open(files.large.path(), direct).await?;
            let shared = Arc::new((files, m, l));
            let hs: Vec<_> = (0..opts.tasks as u64)
                .map(|s| tokio::spawn(task_vecio(scenario, shared.clone(), s + 1, until)))
                .collect();
            let mut outs = Vec::new();
            for h in hs {
                outs.push(h.await.unwrap_or_default());
            }
            let files = Arc::try_unwrap(shared)
                .ok()
                .context("files still shared")?
                .0;
            anyhow::Ok((outs, files))
        })?;
        (outs, files)
    };
    let secs = start.elapsed().as_secs_f64();
    let bytes: u64 = outs.iter().map(|o| o.1).sum();
    let mut lat: Vec<u64> = outs.into_iter().flat_map(|o| o.0).collect();
    lat.sort_unstable();
    Ok((bytes as f64 / secs / (1 << 20) as f64, lat, files))
}

/// The three ways of reading: tokio::fs style, vecio-tokio, tokio-uring.
const PATHS: [&str; 3] = ["tokio::fs", "vecio-tokio", "tokio-uring"];

fn pct(lat: &[u64], p: f64) -> f64 {
    if lat.is_empty() {
        return 0.0;
    }
    let i = ((lat.len() as f64 * p) as usize).min(lat.len() - 1);
    lat[i] as f64 / 1000.0
}

/// Runs every cell `repeat` times.
pub fn run(opts: &TokioOptions) -> Result<TokioReport> {
    let rt = if opts.current_thread {
        tokio::runtime::Builder::new_current_thread()
    } else {
        tokio::runtime::Builder::new_multi_thread()
    }
    .enable_all()
    .build()?;
    let dir = opts.common.dir.as_deref();
    let mut files = Files {
        medium: ScratchFile::prepare(dir, None, opts.medium)?,
        large: ScratchFile::prepare(dir, None, opts.large)?,
    };
    let mut cells = Vec::new();
    for scenario in ["cached", "direct", "mix"] {
        for path in PATHS {
            let mut runs = Vec::new();
            for _ in 0..opts.common.repeat.max(1) {
                pagecache::warm(files.medium.path())?;
                let (bw, lat, f) = measure(&rt, scenario, path, files, opts)?;
                files = f;
                runs.push((bw, lat));
            }
            runs.sort_by(|a, b| a.0.total_cmp(&b.0));
            let mib_s = runs.iter().map(|r| r.0).collect();
            let lat = &runs[runs.len() / 2].1;
            let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64 / 1000.0;
            cells.push(Cell {
                scenario: scenario.to_string(),
                path: path.to_string(),
                mib_s,
                p50_us: pct(lat, 0.5),
                p99_us: pct(lat, 0.99),
                p999_us: pct(lat, 0.999),
                mean_us: mean,
            });
        }
    }
    Ok(TokioReport {
        meta: Some(RunMeta::collect(files.large.path())),
        medium: opts.medium,
        large: opts.large,
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        tasks: opts.tasks,
        current_thread: opts.current_thread,
        cells,
    })
}
