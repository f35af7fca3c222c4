//! Measuring the cells: `tasks` tokio tasks each reading 16 KiB at a time for `runtime`, per
//! file and path, repetition after repetition; fio beside the O_DIRECT file.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use vecio::{AlignedBuf, Direct, EngineKind};

use super::{io_uring_path, TokioOptions, READ};
use crate::experiment::Env;
use crate::harness::fio::{FioEngine, FioJob, FioRw};
use crate::harness::meta::RunMeta;
use crate::harness::scratch::ScratchFile;
use vecio_host::pagecache;

/// One measured cell (scenario x path), its median run and the spread over runs.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// cached, direct or mix.
    pub scenario: String,
    /// tokio::fs, vecio-tokio, tokio-uring or tokio::fs+io_uring.
    pub path: String,
    /// MiB/s per repetition, in the order they ran (paired with the other paths' and fio's).
    pub mib_s: Vec<f64>,
    /// p50 / p99 / p99.9 / mean latency (µs) of the median run.
    pub p50_us: f64,
    /// 99th percentile (µs).
    pub p99_us: f64,
    /// 99.9th percentile (µs).
    pub p999_us: f64,
    /// Mean latency (µs).
    pub mean_us: f64,
    /// Why the cell has no figures (a path that cannot run here, reads that failed).
    #[serde(default)]
    pub note: Option<String>,
}

/// fio's io_uring engine on the O_DIRECT file: the device's ceiling for the same reads.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FioCell {
    /// MiB/s per repetition, in the order they ran.
    pub mib_s: Vec<f64>,
    /// Block size (bytes).
    pub bs: u64,
    /// Requests in flight (`--iodepth`), the number of tasks of the other paths.
    pub iodepth: u32,
    /// Why fio has no figures.
    pub error: Option<String>,
}

/// What one measurement found.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Sample {
    /// MiB/s.
    pub(super) mib_s: f64,
    /// Median latency (µs).
    pub(super) p50_us: f64,
    /// 99th percentile (µs).
    pub(super) p99_us: f64,
    /// 99.9th percentile (µs).
    pub(super) p999_us: f64,
    /// Mean latency (µs).
    pub(super) mean_us: f64,
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
    /// fio on the O_DIRECT file (absent with `--no-fio` and in runs recorded before it came).
    #[serde(default)]
    pub fio: Option<FioCell>,
    /// The HTTP measurement (`--http`).
    #[serde(default)]
    pub http: Option<super::http::HttpReport>,
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
    let outs = rt.block_on(run_tasks(opts.tasks, |s| {
        task_tokio_fs(scenario, shared.clone(), s, until)
    }));
    Ok((outs, unshare(shared)?))
}

/// Spawns `tasks` tasks (seeds 1, 2, ...) and collects what each returned (a task that
/// panicked counts as one that read nothing).
async fn run_tasks<F, Fut>(tasks: usize, mut task: F) -> Vec<TaskOut>
where
    F: FnMut(u64) -> Fut,
    Fut: std::future::Future<Output = TaskOut> + Send + 'static,
{
    let hs: Vec<_> = (1..=tasks as u64).map(|s| tokio::spawn(task(s))).collect();
    let mut outs = Vec::new();
    for h in hs {
        outs.push(h.await.unwrap_or_default());
    }
    outs
}

/// The files back from the tasks, which have all ended.
fn unshare<A, B>(shared: Arc<(Files, A, B)>) -> Result<Files> {
    Ok(Arc::try_unwrap(shared)
        .ok()
        .context("files still shared")?
        .0)
}

/// One measurement through one of the in-process paths.
fn measure(
    rt: &tokio::runtime::Runtime,
    scenario: &'static str,
    path: &'static str,
    files: Files,
    opts: &TokioOptions,
) -> Result<(Sample, Files)> {
    let until = Instant::now() + opts.common.runtime;
    let start = Instant::now();
    let (outs, files) = if path == "tokio-uring" {
        super::uring_path::measure(scenario, files, opts, until)?
    } else if path == "tokio::fs" {
        measure_tokio_fs(rt, scenario, files, opts, until)?
    } else {
        measure_vecio(rt, scenario, files, opts, until)?
    };
    let secs = start.elapsed().as_secs_f64();
    let bytes: u64 = outs.iter().map(|o| o.1).sum();
    let mut lat: Vec<u64> = outs.into_iter().flat_map(|o| o.0).collect();
    lat.sort_unstable();
    let mean = lat.iter().sum::<u64>() as f64 / lat.len().max(1) as f64 / 1000.0;
    let sample = Sample {
        mib_s: bytes as f64 / secs / (1 << 20) as f64,
        p50_us: pct(&lat, 0.5),
        p99_us: pct(&lat, 0.99),
        p999_us: pct(&lat, 0.999),
        mean_us: mean,
    };
    Ok((sample, files))
}

/// The vecio-tokio path: its own driver over io_uring, the large file O_DIRECT.
fn measure_vecio(
    rt: &tokio::runtime::Runtime,
    scenario: &'static str,
    files: Files,
    opts: &TokioOptions,
    until: Instant,
) -> Result<(Vec<TaskOut>, Files)> {
    rt.block_on(async {
        let driver = vecio_tokio::Driver::new(EngineKind::Uring.build()?)?;
        let cached = vecio::File::options().read(true).direct(Direct::Off);
        let direct = vecio::File::options().read(true).direct(Direct::On);
        let m = driver.open(files.medium.path(), cached).await?;
        let l = driver.open(files.large.path(), direct).await?;
        let shared = Arc::new((files, m, l));
        let outs = run_tasks(opts.tasks, |s| {
            task_vecio(scenario, shared.clone(), s, until)
        })
        .await;
        anyhow::Ok((outs, unshare(shared)?))
    })
}

/// The four ways of reading: tokio::fs style, vecio-tokio, tokio-uring, tokio::fs on tokio's
/// io_uring driver.
pub(super) const PATHS: [&str; 4] = [
    "tokio::fs",
    "vecio-tokio",
    "tokio-uring",
    io_uring_path::PATH,
];

/// The three files: mostly cached, O_DIRECT, and the 73/18/9 mix of the two.
const SCENARIOS: [&str; 3] = ["cached", "direct", "mix"];

fn pct(lat: &[u64], p: f64) -> f64 {
    if lat.is_empty() {
        return 0.0;
    }
    let i = ((lat.len() as f64 * p) as usize).min(lat.len() - 1);
    lat[i] as f64 / 1000.0
}

/// A cell from its repetitions: MiB/s of each in order, latencies of the median one.
fn cell(scenario: &str, path: &str, runs: &[Sample], note: Option<String>) -> Cell {
    let mut by_bw: Vec<&Sample> = runs.iter().collect();
    by_bw.sort_by(|a, b| a.mib_s.total_cmp(&b.mib_s));
    let mid = by_bw
        .get(by_bw.len() / 2)
        .copied()
        .copied()
        .unwrap_or_default();
    Cell {
        scenario: scenario.to_string(),
        path: path.to_string(),
        mib_s: runs.iter().map(|r| r.mib_s).collect(),
        p50_us: mid.p50_us,
        p99_us: mid.p99_us,
        p999_us: mid.p999_us,
        mean_us: mid.mean_us,
        note,
    }
}

/// fio's io_uring engine: random 16 KiB reads of the large file, O_DIRECT, `tasks` in flight.
fn fio_job(large: &ScratchFile, opts: &TokioOptions) -> FioJob {
    let mut job = FioJob::new(large.path(), FioRw::RandRead, READ as u64, large.len());
    job.runtime_s = opts.common.runtime.as_secs_f64();
    job.ioengine = FioEngine::IoUring;
    job.iodepth = opts.tasks as u32;
    job.direct = true;
    job
}

/// One fio run on the O_DIRECT file, its MiB/s added to `fio`; after a failure, none.
fn fio_once(fio: &mut FioCell, large: &ScratchFile, opts: &TokioOptions) -> Result<()> {
    if fio.error.is_some() {
        return Ok(());
    }
    pagecache::evict(large.path())?;
    match fio_job(large, opts).run() {
        Ok(r) => fio.mib_s.push(r.read_mb_s * 1e6 / (1 << 20) as f64),
        Err(e) => fio.error = Some(format!("{e:#}")),
    }
    Ok(())
}

/// Runs every cell `repeat` times, the paths one after the other in each repetition (so the
/// ratios between them pair up), fio after them on the O_DIRECT file; then `--http`.
pub fn run(opts: &TokioOptions, env: &Env) -> Result<TokioReport> {
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
    let helper = io_uring_path::helper(&env.exe);
    let mut cells = Vec::new();
    let mut fio = (!opts.no_fio).then(|| FioCell {
        mib_s: Vec::new(),
        bs: READ as u64,
        iodepth: opts.tasks as u32,
        error: None,
    });
    for scenario in SCENARIOS {
        let mut runs: Vec<Vec<Sample>> = vec![Vec::new(); PATHS.len()];
        let mut notes: Vec<Option<String>> = vec![None; PATHS.len()];
        notes[3] = helper.as_ref().err().cloned();
        for _ in 0..opts.common.repeat.max(1) {
            for (i, path) in PATHS.into_iter().enumerate() {
                if notes[i].is_some() {
                    continue;
                }
                pagecache::warm(files.medium.path())?;
                if scenario != "cached" {
                    pagecache::evict(files.large.path())?;
                }
                match (path, &helper) {
                    // The helper's path: a failure is its row's note, not the run's end.
                    (io_uring_path::PATH, Ok(bin)) => {
                        match io_uring_path::measure(bin, scenario, &files, opts) {
                            Ok(s) => runs[i].push(s),
                            Err(why) => notes[i] = Some(why),
                        }
                    }
                    _ => {
                        let (sample, f) = measure(&rt, scenario, path, files, opts)?;
                        files = f;
                        runs[i].push(sample);
                    }
                }
            }
            if let Some(fio) = fio.as_mut().filter(|_| scenario == "direct") {
                fio_once(fio, &files.large, opts)?;
            }
        }
        for (i, path) in PATHS.into_iter().enumerate() {
            cells.push(cell(scenario, path, &runs[i], notes[i].take()));
        }
    }
    let http = if opts.http.http {
        Some(super::http::run(&opts.http, &opts.common, env)?)
    } else {
        None
    };
    Ok(TokioReport {
        meta: Some(RunMeta::collect(files.large.path())),
        medium: opts.medium,
        large: opts.large,
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        tasks: opts.tasks,
        current_thread: opts.current_thread,
        cells,
        fio,
        http,
    })
}
