//! `vecio bench all`: every experiment in turn under one progress display, each one's tables
//! printed as it ends, everything gathered into one [`AllResults`]. An experiment that cannot
//! run (a missing tool) or fails is recorded as not measured, with the reason, and the run goes
//! on.
//!
//! `--quick` presets make the whole run a smoke test of under three minutes on two cores:
//! small files, half-second measurements, two repetitions where a spread matters most.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{bail, Result};

use crate::experiments::callcost::{self, CallcostOptions};
use crate::experiments::fuse::{self, FuseOptions};
use crate::experiments::loopdev::{self, LoopOptions};
use crate::experiments::nowait::{self, NowaitOptions};
use crate::experiments::results::{AllResults, Elapsed, NotMeasured, FORMAT};
use crate::experiments::tokio_reads::{self, TokioOptions};
use crate::experiments::writev::{self, WritevOptions};
use crate::harness::overall::{self, Overall, Step};
use crate::harness::setup::Setup;

/// Options of `vecio bench all`.
#[derive(Debug, Clone, Default)]
pub struct AllOptions {
    /// The quick presets.
    pub quick: bool,
    /// Directory for scratch files (default: the current directory).
    pub dir: Option<PathBuf>,
    /// Leave fio out (the writev rows beside fio, and the loop experiment, whose client it is).
    pub no_fio: bool,
    /// Do not count instructions with callgrind.
    pub no_callgrind: bool,
    /// Seconds per measurement, overriding the preset.
    pub runtime: Option<Duration>,
    /// Bytes of each scratch file, overriding the preset (the nowait medium file gets a quarter).
    pub size: Option<u64>,
    /// Repetitions, overriding the preset.
    pub repeat: Option<u32>,
}

/// The experiments, in the order they run.
pub const EXPERIMENTS: [(&str, &str); 6] = [
    ("writev", "seed 000"),
    ("nowait", "seed 002"),
    ("tokio", "seed 002"),
    ("callcost", "seed 003"),
    ("loop", "seed 001"),
    ("fuse", "seed 004"),
];

/// Each experiment's options, from the presets and the overrides.
#[derive(Debug, Clone)]
pub struct Plan {
    /// readv/writev.
    pub writev: WritevOptions,
    /// RWF_NOWAIT fast reads.
    pub nowait: NowaitOptions,
    /// seed 002's reads from tokio tasks: tokio::fs against vecio-tokio.
    pub tokio: TokioOptions,
    /// single-buffer call cost.
    pub callcost: CallcostOptions,
    /// loop device over NBD.
    pub loop_dev: LoopOptions,
    /// FUSE scatter-gather direct I/O.
    pub fuse: FuseOptions,
}

impl Plan {
    /// The plan for `opts`.
    pub fn new(opts: &AllOptions) -> Plan {
        let q = opts.quick;
        let secs = |quick: f64, full: f64| {
            opts.runtime
                .unwrap_or(Duration::from_secs_f64(if q { quick } else { full }))
        };
        let repeat = |quick: u32, full: u32| opts.repeat.unwrap_or(if q { quick } else { full });
        let size = |quick: u64, full: u64| opts.size.unwrap_or(if q { quick } else { full });
        // The mostly cached file: a quarter of --size.
        let medium = || {
            opts.size
                .map_or(if q { 64 << 20 } else { 256 << 20 }, |s| s / 4)
        };
        Plan {
            writev: WritevOptions {
                dir: opts.dir.clone(),
                fio: !opts.no_fio,
                size: size(256 << 20, 1 << 30),
                runtime: secs(0.5, 5.0),
                repeat: repeat(2, 3),
                ..WritevOptions::default()
            },
            nowait: NowaitOptions {
                dir: opts.dir.clone(),
                medium: medium(),
                large: size(256 << 20, 2 << 30),
                runtime: secs(0.5, 5.0),
                repeat: repeat(2, 3),
                ..NowaitOptions::default()
            },
            tokio: TokioOptions {
                dir: opts.dir.clone(),
                medium: medium(),
                large: size(256 << 20, 1 << 30),
                runtime: secs(0.5, 3.0),
                repeat: repeat(1, 3),
                ..TokioOptions::default()
            },
            callcost: CallcostOptions {
                dir: opts.dir.clone(),
                runtime: secs(0.2, 1.0).min(Duration::from_secs(1)),
                repeat: repeat(3, 5),
                callgrind: !opts.no_callgrind,
            },
            loop_dev: LoopOptions {
                dir: opts.dir.clone(),
                size: size(256 << 20, 1 << 30),
                runtime: secs(0.7, 5.0),
                repeat: repeat(1, 3),
                ..LoopOptions::default()
            },
            fuse: FuseOptions {
                dir: opts.dir.clone(),
                size: size(64 << 20, 256 << 20),
                runtime: secs(0.5, 5.0),
                repeat: repeat(2, 3),
                ..FuseOptions::default()
            },
        }
    }

    /// How long each experiment should take here, in [`EXPERIMENTS`] order (the overheads
    /// per step were measured on a 2-core virtual machine, quick run of 2026-11-22).
    pub fn estimates(&self) -> [Duration; 6] {
        let fill = |bytes: u64| bytes as f64 / 400e6;
        let w = &self.writev;
        let fio = if w.fio { 2 } else { 0 };
        let wsteps = (6 * (w.engines.len() + fio) * w.repeat as usize) as f64;
        let writev = wsteps * w.runtime.as_secs_f64() + wsteps * 0.1 + fill(w.size);
        let n = &self.nowait;
        let nsteps = (16 * n.repeat + 1) as f64;
        let nowait = nsteps * (n.runtime.as_secs_f64() + 0.05) + fill(n.medium + 2 * n.large);
        let t = &self.tokio;
        let tokio =
            (6 * t.repeat) as f64 * (t.runtime.as_secs_f64() + 0.3) + fill(t.medium + t.large);
        let c = &self.callcost;
        let grind = if c.callgrind && crate::experiments::callcost::valgrind_version().is_some() {
            10.0
        } else {
            0.0
        };
        let callcost = 10.0 * c.repeat as f64 * c.runtime.as_secs_f64() * 2.2 + grind;
        let l = &self.loop_dev;
        let lsteps = (l.repeat * 5 * 4) as f64;
        let loop_s = lsteps * (l.runtime.as_secs_f64() + 0.25)
            + 3.0
            + fill(l.size)
            + loopdev::tls::estimate(l).as_secs_f64();
        let fuse = fuse_estimate(&self.fuse, fill);
        let d = Duration::from_secs_f64;
        [
            d(writev),
            d(nowait),
            d(tokio),
            d(callcost),
            d(loop_s),
            d(fuse),
        ]
    }
}

/// Seconds the FUSE experiment should take: its working cells (the Debian libfuse examples
/// refuse 4 of their 6 O_DIRECT cells with EINVAL at once), a mount and an unmount per subject,
/// and the one-time build of the libfuse examples (about 0.5 s of gcc here).
fn fuse_estimate(f: &FuseOptions, fill: impl Fn(u64) -> f64) -> f64 {
    let libfuse = f.libfuse
        && Path::new(fuse::subjects::LIBFUSE_EXAMPLES)
            .join("passthrough_ll.c")
            .exists();
    // native, vecio, per-segment and uring, each reading and writing.
    let mut cells = 4.0 * 2.0;
    let mut subjects = 4.0;
    if libfuse {
        cells += 2.0;
        subjects += 3.0;
    }
    if f.buffered {
        cells += 4.0 * 2.0;
        subjects += 1.0;
    }
    let measure = cells * f.repeat as f64 * (f.runtime.as_secs_f64() + 0.02);
    measure + subjects * 0.1 + if libfuse { 1.0 } else { 0.0 } + fill(f.size)
}

/// Runs every experiment; `exe` is the vecio binary (callcost's callgrind worker, the loop
/// experiment's `vecio nbd`). Failures are recorded in the results, never returned.
pub fn run(opts: &AllOptions, exe: &Path) -> AllResults {
    let plan = Plan::new(opts);
    let dir = opts.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let mut results = AllResults {
        format: FORMAT,
        quick: opts.quick,
        setup: Some(Setup::collect(&dir, exe)),
        ..AllResults::default()
    };
    let steps = EXPERIMENTS
        .iter()
        .zip(plan.estimates())
        .map(|((key, seed), estimate)| Step {
            label: format!("{key} ({seed})"),
            estimate,
        })
        .collect();
    let display = Overall::start(steps);
    for (i, (key, _)) in EXPERIMENTS.iter().enumerate() {
        display.begin(i);
        let t0 = Instant::now();
        let outcome = run_one(key, opts, &plan, exe, &mut results);
        display.end();
        results.elapsed.push(Elapsed {
            experiment: key.to_string(),
            seconds: t0.elapsed().as_secs_f64(),
        });
        let (reason, failed) = match outcome {
            Ok(Ran(text)) => {
                overall::print(&format!("{text}\n"));
                continue;
            }
            Ok(Skipped(why)) => (why, false),
            Err(e) => (format!("{e:#}").replace('\n', " "), true),
        };
        overall::print(&format!("{key}: not measured: {reason}\n\n"));
        results.not_measured.push(NotMeasured {
            experiment: key.to_string(),
            reason,
            failed,
        });
    }
    results
}

/// What became of one experiment that did not fail.
enum Outcome {
    /// It ran; its tables as text.
    Ran(String),
    /// It was left out, and why.
    Skipped(String),
}
use Outcome::{Ran, Skipped};

/// Runs experiment `key`, stores its report and returns its tables as text.
fn run_one(
    key: &str,
    opts: &AllOptions,
    plan: &Plan,
    exe: &Path,
    results: &mut AllResults,
) -> Result<Outcome> {
    match key {
        "writev" => {
            let r = writev::run(&plan.writev)?;
            let text = writev::render(&r);
            results.writev = Some(r);
            Ok(Ran(text))
        }
        "nowait" => {
            let r = nowait::run(&plan.nowait)?;
            let text = nowait::render(&r);
            results.nowait = Some(r);
            Ok(Ran(text))
        }
        "tokio" => {
            let r = tokio_reads::run(&plan.tokio)?;
            let text = tokio_reads::render(&r);
            results.tokio = Some(r);
            Ok(Ran(text))
        }
        "callcost" => {
            let r = callcost::run(&plan.callcost, Some(exe))?;
            let text = callcost::render(&r);
            results.callcost = Some(r);
            Ok(Ran(text))
        }
        "loop" => {
            let why = if opts.no_fio {
                Some("--no-fio was given and fio is its NBD client".to_string())
            } else {
                loopdev::client_missing()
            };
            if let Some(why) = why {
                return Ok(Skipped(why));
            }
            let r = loopdev::run(&plan.loop_dev, exe)?;
            let text = loopdev::render(&r);
            results.loop_dev = Some(r);
            Ok(Ran(text))
        }
        "fuse" => {
            if let Some(why) = fuse::cannot_run() {
                return Ok(Skipped(why));
            }
            let r = fuse::run(&plan.fuse, exe)?;
            let text = fuse::render(&r);
            results.fuse = Some(r);
            Ok(Ran(text))
        }
        other => bail!("unknown experiment {other}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quick_presets_and_overrides() {
        let quick = Plan::new(&AllOptions {
            quick: true,
            ..AllOptions::default()
        });
        assert_eq!(quick.writev.size, 256 << 20);
        assert!(quick.writev.repeat >= 2, "a spread needs two repetitions");
        let total: f64 = quick.estimates().iter().map(Duration::as_secs_f64).sum();
        assert!(total < 180.0, "quick run estimated at {total:.0} s");
        assert!(quick.fuse.repeat >= 2 && quick.fuse.size == 64 << 20);
        let tiny = Plan::new(&AllOptions {
            quick: true,
            size: Some(16 << 20),
            runtime: Some(Duration::from_millis(100)),
            repeat: Some(1),
            ..AllOptions::default()
        });
        assert_eq!((tiny.writev.size, tiny.nowait.medium), (16 << 20, 4 << 20));
        assert_eq!(tiny.loop_dev.runtime, Duration::from_millis(100));
        assert_eq!(tiny.callcost.repeat, 1);
        assert_eq!(
            (tiny.fuse.size, tiny.fuse.runtime, tiny.fuse.repeat),
            (16 << 20, Duration::from_millis(100), 1)
        );
        let full = Plan::new(&AllOptions::default());
        assert_eq!(full.writev.runtime, Duration::from_secs(5));
    }
}
