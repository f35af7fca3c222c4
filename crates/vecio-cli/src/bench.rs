//! `vecio bench`: runs experiments, prints their tables, writes JSON.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use vecio_bench::callcost::{self, CallcostOptions};
use vecio_bench::loopdev::{self, LoopOptions};
use vecio_bench::nowait::{self, NowaitOptions};
use vecio_bench::writev::{self, WritevOptions};

use crate::cli::{Bench, CallcostArgs, CallcostWorkerArgs, LoopArgs, NowaitArgs, WritevArgs};

/// Runs one `vecio bench` subcommand.
pub fn run(b: Bench) -> Result<()> {
    match b {
        Bench::Writev(a) => bench_writev(a),
        Bench::Nowait(a) => bench_nowait(a),
        Bench::Callcost(a) => bench_callcost(a),
        Bench::CallcostWorker(a) => callcost_worker(a),
        Bench::Loop(a) => bench_loop(a),
        Bench::Fuse(a) => crate::bench_fuse::run(a),
        Bench::All(a) => crate::report::bench_all(a),
        Bench::Compare(a) => crate::report::compare(a),
        Bench::Report(a) => crate::report::render(a),
    }
}

fn runtime(secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs)
        .ok()
        .filter(|d| !d.is_zero())
        .with_context(|| format!("--runtime {secs}: want a positive number of seconds"))
}

fn write_json<T: Serialize>(path: Option<&Path>, value: &T) -> Result<()> {
    if let Some(p) = path {
        let text = serde_json::to_string_pretty(value)?;
        std::fs::write(p, text).with_context(|| format!("writing {}", p.display()))?;
        eprintln!("figures written to {}", p.display());
    }
    Ok(())
}

fn bench_writev(a: WritevArgs) -> Result<()> {
    let opts = WritevOptions {
        file: a.common.file,
        dir: a.common.dir,
        size: a.size,
        runtime: runtime(a.common.runtime)?,
        repeat: a.common.repeat.max(1),
        read_only: a.read_only,
        fio: !a.common.no_fio,
        engines: a.engines,
    };
    let report = writev::run(&opts)?;
    print!("{}", writev::render(&report));
    write_json(a.common.json.as_deref(), &report)
}

fn bench_nowait(a: NowaitArgs) -> Result<()> {
    let opts = NowaitOptions {
        dir: a.dir,
        medium: a.medium,
        large: a.size,
        runtime: runtime(a.runtime)?,
        repeat: a.repeat.max(1),
        depth: a.depth.max(1),
        threads: a.threads.max(1),
    };
    let report = nowait::run(&opts)?;
    print!("{}", nowait::render(&report));
    write_json(a.json.as_deref(), &report)
}

fn bench_callcost(a: CallcostArgs) -> Result<()> {
    let opts = CallcostOptions {
        dir: a.dir,
        runtime: runtime(a.runtime)?,
        repeat: a.repeat.max(1),
        callgrind: !a.no_callgrind,
    };
    let exe = std::env::current_exe().ok();
    let report = callcost::run(&opts, exe.as_deref())?;
    print!("{}", callcost::render(&report));
    write_json(a.json.as_deref(), &report)
}

fn callcost_worker(a: CallcostWorkerArgs) -> Result<()> {
    let v = callcost::Variant::from_name(&a.variant)
        .with_context(|| format!("unknown variant {:?}", a.variant))?;
    callcost::run_calls(v, &a.file, a.calls)
}

fn bench_loop(a: LoopArgs) -> Result<()> {
    let opts = LoopOptions {
        file: a.file,
        dir: a.dir,
        size: a.size,
        runtime: runtime(a.runtime)?,
        repeat: a.repeat.max(1),
    };
    let exe = std::env::current_exe().context("finding the vecio binary")?;
    let report = loopdev::run(&opts, &exe)?;
    print!("{}", loopdev::render(&report));
    write_json(a.json.as_deref(), &report)
}
