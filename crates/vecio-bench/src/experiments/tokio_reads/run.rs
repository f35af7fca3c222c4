//! Measuring the cells: `tasks` tokio tasks each reading 16 KiB at a time for `runtime`, per
//! file and path, repetition after repetition; fio beside the O_DIRECT file. tokio-uring's
//! tasks run on its own single-threaded runtime over one ring.

use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::Path;
use std::rc::Rc;
use std::sync::Arc;
use std::time::Instant;

use anyhow::{Context, Result};
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};
use tokio::runtime::Runtime;
use tokio::task::JoinHandle;
use tokio_uring::buf::{IoBuf, IoBufMut};
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

/// What one measurement found: MiB/s, and the latencies in µs.
#[derive(Debug, Clone, Copy, Default, Deserialize)]
pub(super) struct Sample {
    pub(super) mib_s: f64,
    pub(super) p50_us: f64,
    pub(super) p99_us: f64,
    pub(super) p999_us: f64,
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
    let read = READ as u64;
    let blocks = |len: u64| (len / read).max(1);
    let r = match scenario {
        "cached" => 0,
        "direct" => 80,
        _ => rng.gen_range(0..100),
    };
    if r < 73 {
        (false, rng.gen_range(0..blocks(f.medium.len())) * read)
    } else if r < 91 {
        (true, rng.gen_range(0..blocks(f.large.len())) * read)
    } else {
        *seq = (*seq + read) % (blocks(f.large.len()) * read);
        (true, *seq)
    }
}

/// Latencies (ns) and bytes of one task.
type TaskOut = (Vec<u64>, u64);

/// The tasks' outcomes and the run's files, handed back.
type Outs = Result<(Vec<TaskOut>, Files)>;

/// One task's reads: each picked as `scenario` says (`large` file or not, and the offset),
/// timed around `read(large, offset, buf)`, which hands the buffer back (`None` ends the task).
async fn read_loop<B, R, F>(
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

/// What each task returned (a task that panicked counts as one that read nothing).
async fn join(handles: Vec<JoinHandle<TaskOut>>) -> Vec<TaskOut> {
    let mut outs = Vec::new();
    for h in handles {
        outs.push(h.await.unwrap_or_default());
    }
    outs
}

/// Opens the large file: O_DIRECT for `direct` and the mix's large reads (as the seed).
fn std_open(path: &Path, direct: bool) -> Result<std::fs::File> {
    let flags = if direct { libc::O_DIRECT } else { 0 };
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(flags)
        .open(path)?;
    Ok(file)
}

/// The tokio::fs-style path: every read through `spawn_blocking`, tasks seeded 1, 2, ...
fn tokio_fs(rt: &Runtime, scenario: &'static str, files: Files, o: &TokioOptions) -> Outs {
    let until = Instant::now() + o.common.runtime;
    let m = std_open(files.medium.path(), false)?;
    let l = std_open(files.large.path(), true)?;
    let shared = Arc::new((files, m, l));
    let _in_rt = rt.enter();
    let task = |seed| {
        let f = shared.clone();
        let read = move |large: bool, off: u64, mut buf: AlignedBuf| {
            let f = f.clone();
            let read = move || {
                (
                    (if large { &f.2 } else { &f.1 }).read_at(&mut buf, off),
                    buf,
                )
            };
            async move { tokio::task::spawn_blocking(read).await.ok() }
        };
        let buf = AlignedBuf::page_aligned(READ);
        let f = shared.clone();
        tokio::spawn(async move { read_loop(scenario, &f.0, seed, until, buf, read).await })
    };
    let outs = rt.block_on(join((1..=o.tasks as u64).map(task).collect()));
    let files = Arc::try_unwrap(shared)
        .ok()
        .context("files still shared")?
        .0;
    Ok((outs, files))
}

/// The vecio-tokio path: its own driver over io_uring, the large file O_DIRECT.
fn vecio_tokio(rt: &Runtime, scenario: &'static str, files: Files, o: &TokioOptions) -> Outs {
    let until = Instant::now() + o.common.runtime;
    rt.block_on(async {
        let driver = vecio_tokio::Driver::new(EngineKind::Uring.build()?)?;
        let cached = vecio::File::options().read(true).direct(Direct::Off);
        let direct = vecio::File::options().read(true).direct(Direct::On);
        let m = driver.open(files.medium.path(), cached).await?;
        let l = driver.open(files.large.path(), direct).await?;
        let shared = Arc::new((files, m, l));
        let task = |seed| {
            let f = shared.clone();
            tokio::spawn(async move {
                let s = &*f;
                let read = |large: bool, off: u64, buf: AlignedBuf| async move {
                    Some((if large { &s.2 } else { &s.1 }).read_at(buf, off).await)
                };
                let buf = AlignedBuf::page_aligned(READ);
                read_loop(scenario, &f.0, seed, until, buf, read).await
            })
        };
        let outs = join((1..=o.tasks as u64).map(task).collect()).await;
        let files = Arc::try_unwrap(shared)
            .ok()
            .context("files still shared")?
            .0;
        anyhow::Ok((outs, files))
    })
}

/// A page-aligned buffer tokio-uring can own (O_DIRECT needs the alignment a `Vec` lacks).
struct Aligned(AlignedBuf);

// SAFETY: the AlignedBuf's allocation never moves while the value lives, and every byte of it
// is initialised (AlignedBuf zeroes its memory), so the pointer and both lengths stay valid
// while tokio-uring owns the buffer.
unsafe impl IoBuf for Aligned {
    fn stable_ptr(&self) -> *const u8 {
        self.0.as_ptr()
    }

    fn bytes_init(&self) -> usize {
        self.0.len()
    }

    fn bytes_total(&self) -> usize {
        self.0.len()
    }
}

// SAFETY: as for IoBuf; the whole buffer is initialised, so set_init has nothing to record.
unsafe impl IoBufMut for Aligned {
    fn stable_mut_ptr(&mut self) -> *mut u8 {
        self.0.as_mut_ptr()
    }

    unsafe fn set_init(&mut self, _pos: usize) {}
}

/// The tokio-uring path: its tasks on its own single-threaded runtime over one ring.
fn tokio_uring(scenario: &'static str, files: Files, o: &TokioOptions) -> Outs {
    let until = Instant::now() + o.common.runtime;
    let open = |path: &Path, direct: bool| {
        let mut opts = tokio_uring::fs::OpenOptions::new();
        opts.read(true)
            .custom_flags(if direct { libc::O_DIRECT } else { 0 });
        let path = path.to_path_buf();
        async move {
            let f = opts.open(&path).await;
            f.with_context(|| format!("tokio-uring: open {}", path.display()))
        }
    };
    tokio_uring::start(async move {
        let m = open(files.medium.path(), false).await?;
        let l = open(files.large.path(), true).await?;
        let shared = Rc::new((files, m, l));
        let task = |seed| {
            let f = shared.clone();
            tokio_uring::spawn(async move {
                let s = &*f;
                let read = |large: bool, off: u64, buf: Aligned| async move {
                    Some((if large { &s.2 } else { &s.1 }).read_at(buf, off).await)
                };
                let buf = Aligned(AlignedBuf::page_aligned(READ));
                read_loop(scenario, &f.0, seed, until, buf, read).await
            })
        };
        let outs = join((1..=o.tasks as u64).map(task).collect()).await;
        let (files, m, l) = Rc::try_unwrap(shared).ok().context("files still shared")?;
        let _ = m.close().await;
        let _ = l.close().await;
        Ok((outs, files))
    })
}

/// One measurement through one of the in-process paths.
fn measure(
    rt: &Runtime,
    scenario: &'static str,
    path: &'static str,
    files: Files,
    opts: &TokioOptions,
) -> Result<(Sample, Files)> {
    let start = Instant::now();
    let (outs, files) = match path {
        "tokio-uring" => tokio_uring(scenario, files, opts)?,
        "tokio::fs" => tokio_fs(rt, scenario, files, opts)?,
        _ => vecio_tokio(rt, scenario, files, opts)?,
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
    let mut by_bw = runs.to_vec();
    by_bw.sort_by(|a, b| a.mib_s.total_cmp(&b.mib_s));
    let mid = by_bw.get(by_bw.len() / 2).copied().unwrap_or_default();
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

/// One run of fio's io_uring engine on the O_DIRECT file (random 16 KiB reads, `tasks` in
/// flight), its MiB/s added to `fio`; after a failure, none.
fn fio_once(fio: &mut FioCell, large: &ScratchFile, opts: &TokioOptions) -> Result<()> {
    if fio.error.is_some() {
        return Ok(());
    }
    pagecache::evict(large.path())?;
    let mut job = FioJob::new(large.path(), FioRw::RandRead, READ as u64, large.len());
    job.runtime_s = opts.common.runtime.as_secs_f64();
    job.ioengine = FioEngine::IoUring;
    job.iodepth = opts.tasks as u32;
    job.direct = true;
    match job.run() {
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
    let http = opts
        .http
        .http
        .then(|| super::http::run(&opts.http, &opts.common, env));
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
        http: http.transpose()?,
    })
}
