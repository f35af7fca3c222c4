//! The FUSE experiment: seed 004 (`seeds/004_79c7fe0e9c79c24f.txt`) re-measured: 32 x 4 KiB
//! `preadv`/`pwritev` natively, through `vecio fuse` in several modes and the libfuse examples,
//! `O_DIRECT` and buffered (docs/results.md, "fuse").

mod goals;
pub mod hp;
pub mod subjects;
mod view;
pub mod workload;

use std::path::{Path, PathBuf};
use std::time::Duration;

use anyhow::{Context, Result};
use clap::Args;
use serde::{Deserialize, Serialize};

use crate::experiment::options::{parse_size, Common};
use crate::experiment::{Env, Experiment, Preset, Seed};
use crate::harness::meta::RunMeta;
use crate::harness::progress::Phase;
use crate::harness::scratch::fill_buffered;
use crate::harness::stats::{paired_median, Summary};
use goals::targets;
pub use goals::Goal;
use subjects::Subject;
use workload::Op;

/// Options of `vecio bench fuse`.
#[derive(Args, Debug, Clone)]
pub struct FuseOptions {
    /// Where (the source tree and the mount points), how long, how often.
    #[command(flatten)]
    pub common: Common,
    /// Bytes of the data file (k, M, G suffixes).
    #[arg(long, default_value = "256M", value_parser = parse_size)]
    pub size: u64,
    /// Do not build and measure the libfuse passthrough examples.
    #[arg(long)]
    pub no_libfuse: bool,
    /// Also measure libfuse's `passthrough_hp` (Debian's libfuse has no such example), with
    /// and without its passthrough: its binary, or a libfuse source tree, which the bench
    /// builds with meson once.
    #[arg(long = "libfuse-hp", value_name = "PATH")]
    pub passthrough_hp: Option<PathBuf>,
    /// Skip the buffered table (FUSE_PASSTHROUGH against the plain path).
    #[arg(long)]
    pub no_buffered: bool,
}

/// The experiment.
pub struct Fuse;

impl Experiment for Fuse {
    const KEY: &'static str = "fuse";
    const ABOUT: &'static str = "FUSE scatter-gather direct I/O (2012): 32 x 4 KiB O_DIRECT \
        preadv/pwritev through vecio fuse, its per-segment mode, the libfuse examples, and natively";
    const FIELDS: &'static [&'static str] = &["cells", "subjects", "max_pages_limit"];
    const SEED: &'static Seed = &view::SEED;
    type Options = FuseOptions;
    type Report = FuseReport;

    fn preset(o: &mut FuseOptions, p: &Preset) {
        o.common.dir = p.dir.clone();
        o.size = p.size(64 << 20, 256 << 20);
        o.common.runtime = p.runtime(0.5, 5.0);
        o.common.repeat = p.repeat(2, 3);
    }

    /// The working cells (the Debian libfuse examples refuse 4 of their 6 O_DIRECT cells with
    /// EINVAL at once), a mount and an unmount per subject, the one-time build of the libfuse
    /// examples (about 0.5 s of gcc here) and the fill.
    fn estimate(o: &FuseOptions) -> Duration {
        let libfuse = !o.no_libfuse
            && Path::new(subjects::LIBFUSE_EXAMPLES)
                .join("passthrough_ll.c")
                .exists();
        // native, vecio, per-segment and uring, each reading and writing; then the examples
        // and the buffered table.
        let (libfuse, buffered) = (
            f64::from(u8::from(libfuse)),
            f64::from(u8::from(!o.no_buffered)),
        );
        let cells = 8.0 + 2.0 * libfuse + 8.0 * buffered;
        let subjects = 4.0 + 3.0 * libfuse + buffered;
        let measure = cells * o.common.repeat as f64 * (o.common.runtime.as_secs_f64() + 0.02);
        Duration::from_secs_f64(measure + subjects * 0.1 + libfuse + o.size as f64 / 400e6)
    }

    fn cannot_run(_o: &FuseOptions) -> Option<String> {
        cannot_run()
    }

    fn run(opts: &FuseOptions, env: &Env) -> Result<FuseReport> {
        run(opts, &env.vecio)
    }
}

/// One measured cell: a subject, an operation, direct or buffered.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Cell {
    /// Subject name.
    pub subject: String,
    /// `preadv` or `pwritev`.
    pub op: Op,
    /// `O_DIRECT` or buffered.
    pub direct: bool,
    /// MB/s over the repetitions (absent when the cell failed).
    pub mb_s: Option<Summary>,
    /// MB/s of each repetition.
    pub samples: Vec<f64>,
    /// The error that stopped the cell (for example EINVAL from a server that cannot do
    /// O_DIRECT writes).
    pub error: Option<String>,
}

/// Everything `vecio bench fuse` measured.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct FuseReport {
    /// Machine and file system.
    pub meta: RunMeta,
    /// Bytes of the data file.
    pub size: u64,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// The kernel's largest pages per FUSE request.
    pub max_pages_limit: u16,
    /// libfuse version used, or why the examples were not measured.
    pub libfuse: std::result::Result<String, String>,
    /// The subjects, in table order.
    pub subjects: Vec<Subject>,
    /// Every cell.
    pub cells: Vec<Cell>,
    /// Targets.
    pub targets: Vec<Goal>,
}

/// The seed's figures (MB/s): before and after packing.
pub const SEED_WRITEV: (f64, f64) = (107.0, 480.0);
/// The seed's readv figures (MB/s).
pub const SEED_READV: (f64, f64) = (114.0, 569.0);

/// Name of the packed vecio subject.
pub const VECIO: &str = "vecio fuse";
/// Name of the per-segment vecio subject.
pub const VECIO_PER_SEGMENT: &str = "vecio fuse --max-pages 1";
/// Name of the native subject.
pub const NATIVE: &str = "native";
/// Name of the FUSE-over-io_uring vecio subject (measured before io_uring was the default; kept
/// for reports of those runs).
pub const VECIO_URING: &str = "vecio fuse --uring";
/// Name of `vecio fuse` on `/dev/fuse` (no FUSE over io_uring) as a subject.
pub const VECIO_DEV: &str = "vecio fuse --no-uring";
/// Name of the passthrough vecio subject.
pub const VECIO_PASSTHROUGH: &str = "vecio fuse --passthrough";
/// Name of the vecio subject that hands `O_DIRECT` opens to the kernel too.
pub const VECIO_PASSTHROUGH_DIRECT: &str = "vecio fuse --passthrough-direct";
/// Name of the vecio subject served without its sandbox (namespaces, capabilities, seccomp):
/// the default subject's peer for the sandbox's cost.
pub const VECIO_NO_SANDBOX: &str = "vecio fuse --sandbox none";

fn subjects(libfuse: &[(String, PathBuf)], buffered: bool) -> Vec<Subject> {
    let vecio = Subject::vecio;
    let mut v = vec![
        Subject::native(NATIVE),
        vecio(VECIO, &[]),
        vecio(
            VECIO_NO_SANDBOX,
            &["--sandbox", "none", "--seccomp", "none"],
        ),
        vecio(VECIO_PER_SEGMENT, &["--max-pages", "1"]),
        vecio(VECIO_DEV, &["--no-uring"]),
        vecio(
            VECIO_PASSTHROUGH_DIRECT,
            &["--passthrough", "--passthrough-direct"],
        ),
    ];
    for (ex, _) in libfuse {
        v.push(Subject::libfuse(format!("libfuse {ex}"), ex));
    }
    if buffered {
        v.push(vecio(VECIO_PASSTHROUGH, &["--passthrough"]));
    }
    v
}

impl FuseReport {
    /// The cell of `subject`, `op`, direct or not.
    pub fn cell(&self, subject: &str, op: Op, direct: bool) -> Option<&Cell> {
        cell(&self.cells, subject, op, direct)
    }
}

/// Runs the experiment; `exe` is the `vecio` binary (for `vecio fuse`).
pub fn run(opts: &FuseOptions, exe: &Path) -> Result<FuseReport> {
    anyhow::ensure!(
        rustix::process::geteuid().is_root(),
        "the FUSE experiment mounts file systems: run it as root"
    );
    let dir = opts.common.scratch_parent()?;
    crate::harness::scratch::ensure_free(&dir, opts.size)?;
    let hp_binary = match &opts.passthrough_hp {
        Some(p) => Some(hp::passthrough_hp("--libfuse-hp", p)?),
        None => None,
    };
    let tmp = crate::harness::cleanup::ScratchDir::new_in("fuse", &dir)?;
    let src = tmp.path().join("src");
    std::fs::create_dir(&src)?;
    let file_name = "data";
    fill_buffered(&src.join(file_name), opts.size).context("preparing the data file")?;
    let (libfuse_bins, libfuse) = libfuse_peers(opts, hp_binary);
    let subjects = subjects(&libfuse_bins, !opts.no_buffered);
    let file = |_| file_name.to_string();
    let mounted = subjects::mount_all(&subjects, exe, &libfuse_bins, &src, file, tmp.path())?;
    let mut cells = empty_cells(&subjects, !opts.no_buffered);
    // Every cell measured `repeat` times through its subject's mount; a cell whose calls fail
    // keeps the error and is not measured again.
    let (runtime, repeat) = (opts.common.runtime, opts.common.repeat);
    let phase = Phase::timed("bench fuse", runtime * (cells.len() as u32 * repeat));
    for _ in 0..repeat {
        for cell in cells.iter_mut().filter(|c| c.error.is_none()) {
            let i = subjects.iter().position(|s| s.name == cell.subject);
            let file = &mounted[i.unwrap_or(0)].file;
            match workload::measure(file, cell.op, cell.direct, opts.size, runtime) {
                Ok(mb) => cell.samples.push(mb),
                Err(e) => cell.error = Some(errno_name(&e)),
            }
        }
    }
    phase.finish();
    subjects::stop_all(mounted, "bench fuse");
    for c in cells.iter_mut() {
        c.mb_s = Summary::of(&c.samples);
    }
    let targets = targets(&cells);
    Ok(FuseReport {
        meta: RunMeta::collect(&src.join(file_name)),
        size: opts.size,
        runtime_s: opts.common.runtime.as_secs_f64(),
        repeat: opts.common.repeat,
        max_pages_limit: max_pages_limit(),
        libfuse,
        subjects,
        cells,
        targets,
    })
}

/// The libfuse examples to measure (name, binary), built in a cache directory, and libfuse's
/// version or why they are not measured; `--passthrough-hp`'s binary added twice (with and
/// without passthrough).
fn libfuse_peers(
    opts: &FuseOptions,
    passthrough_hp: Option<PathBuf>,
) -> (Vec<(String, PathBuf)>, std::result::Result<String, String>) {
    let version = crate::harness::setup::libfuse_version();
    let cache = std::env::temp_dir().join(format!(
        "vecio-libfuse-examples-{}",
        version.clone().unwrap_or_default()
    ));
    let built = match opts.no_libfuse {
        true => Err("not asked for (--no-libfuse)".to_string()),
        false => subjects::build_libfuse_examples(&cache),
    };
    let libfuse = built
        .as_ref()
        .map(|_| version.unwrap_or_else(|| "unknown".into()));
    let libfuse = libfuse.map_err(Clone::clone);
    let mut bins = built.unwrap_or_default();
    if let Some(hp) = passthrough_hp {
        bins.push((subjects::HP_PASSTHROUGH.into(), hp.clone()));
        bins.push((subjects::HP_NO_PASSTHROUGH.into(), hp));
    }
    (bins, libfuse)
}

/// One cell per measured (subject, O_DIRECT or buffered) and operation, nothing measured yet:
/// every subject but the buffered-only passthrough O_DIRECT, then the buffered ones.
fn empty_cells(subjects: &[Subject], buffered: bool) -> Vec<Cell> {
    let plain = [NATIVE, VECIO, VECIO_DEV, VECIO_PASSTHROUGH];
    let direct = subjects.iter().filter(|s| s.name != VECIO_PASSTHROUGH);
    let plain = subjects
        .iter()
        .filter(|s| buffered && plain.contains(&s.name.as_str()));
    let cell = |(s, direct): (&Subject, bool), op| Cell {
        subject: s.name.clone(),
        op,
        direct,
        mb_s: None,
        samples: Vec::new(),
        error: None,
    };
    let planned = direct.map(|s| (s, true)).chain(plain.map(|s| (s, false)));
    planned
        .flat_map(|p| [cell(p, Op::Readv), cell(p, Op::Writev)])
        .collect()
}

/// The cell of `subject`, `op`, direct or not.
pub fn cell<'a>(cells: &'a [Cell], subject: &str, op: Op, direct: bool) -> Option<&'a Cell> {
    cells
        .iter()
        .find(|c| c.subject == subject && c.op == op && c.direct == direct)
}

/// Median of per-repetition ratios `a / b` (None when either failed).
pub fn ratio(a: Option<&Cell>, b: Option<&Cell>) -> Option<f64> {
    let (a, b) = (a?, b?);
    if a.error.is_some() || b.error.is_some() {
        return None;
    }
    paired_median(&a.samples, &b.samples)
}

/// A short name for an I/O error: `EINVAL` rather than "Invalid argument (os error 22)".
fn errno_name(e: &std::io::Error) -> String {
    let name = match e.raw_os_error() {
        Some(libc::EINVAL) => "EINVAL",
        Some(libc::EIO) => "EIO",
        Some(libc::ENOENT) => "ENOENT",
        Some(libc::EACCES) => "EACCES",
        Some(libc::EOPNOTSUPP) => "EOPNOTSUPP",
        Some(libc::ENOTCONN) => "ENOTCONN",
        Some(libc::ENOSPC) => "ENOSPC",
        _ => return e.to_string(),
    };
    name.to_string()
}

/// Why the experiment cannot run here, if it cannot.
pub fn cannot_run() -> Option<String> {
    if !rustix::process::geteuid().is_root() {
        return Some("it mounts file systems and needs root".into());
    }
    if !Path::new("/dev/fuse").exists() {
        return Some("/dev/fuse is missing".into());
    }
    None
}

/// The kernel's limit on pages per FUSE request (`/proc/sys/fs/fuse/max_pages_limit`, since
/// Linux 6.13); 256, the limit compiled into older kernels, when the file is missing.
fn max_pages_limit() -> u16 {
    std::fs::read_to_string("/proc/sys/fs/fuse/max_pages_limit")
        .ok()
        .and_then(|s| s.trim().parse::<u32>().ok())
        .map(|n| n.min(u32::from(u16::MAX)) as u16)
        .unwrap_or(256)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cell_of(subject: &str, op: Op, samples: &[f64], error: Option<&str>) -> Cell {
        Cell {
            subject: subject.into(),
            op,
            direct: true,
            mb_s: Summary::of(samples),
            samples: samples.to_vec(),
            error: error.map(String::from),
        }
    }

    /// Every example failing where vecio serves meets the peer target; the report (with the
    /// libfuse examples not measured) reads back from its JSON unchanged.
    #[test]
    fn targets_and_json_round_trip() -> anyhow::Result<()> {
        let mut cells = Vec::new();
        for op in [Op::Readv, Op::Writev] {
            cells.push(cell_of(VECIO, op, &[500.0, 520.0], None));
            cells.push(cell_of(VECIO_PER_SEGMENT, op, &[50.0, 52.0], None));
            cells.push(cell_of(NATIVE, op, &[700.0, 700.0], None));
            cells.push(cell_of("libfuse passthrough", op, &[], Some("EINVAL")));
        }
        let targets = targets(&cells);
        assert_eq!(targets.len(), 6);
        assert!(targets.iter().all(|t| t.met() == Some(true)), "{targets:?}");
        assert!(targets[1].only_vecio_works && targets[1].what.contains("EINVAL"));
        assert_eq!(targets[0].got, Some(10.0));
        let report = FuseReport {
            meta: RunMeta {
                date_utc: "2026-11-22 00:00:00".into(),
                command: "vecio bench fuse".into(),
                kernel: "6.18".into(),
                cpus: 2,
                file: "/x/data".into(),
                fs: "ext4".into(),
                device: "vda".into(),
                fio: None,
            },
            size: 16 << 20,
            runtime_s: 0.1,
            repeat: 2,
            max_pages_limit: 256,
            libfuse: Err("not asked for (--no-libfuse)".into()),
            subjects: subjects(&[], true),
            cells,
            targets,
        };
        let json = serde_json::to_value(&report)?;
        assert_eq!(json["libfuse"]["Err"], "not asked for (--no-libfuse)");
        assert_eq!(json["cells"][0]["op"], "Readv");
        let back: FuseReport = serde_json::from_value(json.clone())?;
        assert_eq!(serde_json::to_value(&back)?, json);
        assert_eq!(back.subjects[2].kind, report.subjects[2].kind);
        Ok(())
    }
}
