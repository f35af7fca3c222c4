//! `vecio bench`: runs experiments, prints their tables, writes JSON.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use serde::Serialize;
use vecio_bench::experiments::callcost::{self, CallcostOptions};
use vecio_bench::experiments::loopdev::{self, LoopOptions};
use vecio_bench::experiments::nowait::{self, NowaitOptions};
use vecio_bench::experiments::writev::{self, WritevOptions};

use crate::cli::{Bench, CallcostArgs, CallcostWorkerArgs, LoopArgs, NowaitArgs, WritevArgs};

/// Runs one `vecio bench` subcommand. Whatever it puts on the machine (scratch files, mounts,
/// servers) is removed if it is stopped by SIGINT, SIGTERM or a panic.
pub fn run(b: Bench) -> Result<()> {
    if !matches!(
        b,
        Bench::Compare(_) | Bench::Report(_) | Bench::CallcostWorker(_)
    ) {
        crate::signals::clean_up_on_stop()?;
    }
    match b {
        Bench::Writev(a) => bench_writev(a),
        Bench::Nowait(a) => bench_nowait(a),
        Bench::Tokio(a) => bench_tokio(a),
        Bench::Callcost(a) => bench_callcost(a),
        Bench::CallcostWorker(a) => callcost_worker(a),
        Bench::Loop(a) => bench_loop(a),
        Bench::Fuse(a) => crate::bench_fuse::run(a),
        Bench::All(a) => crate::report::bench_all(a),
        Bench::Compare(a) => crate::report::compare(a),
        Bench::Report(a) => crate::report::render(a),
    }
}

/// Refuses a `--file` that does not exist unless `--create` was given: a typo in a device
/// name must not turn into a gigabyte-sized file beside it.
pub fn check_file(file: Option<&PathBuf>, create: bool) -> Result<()> {
    let Some(path) = file else {
        return Ok(());
    };
    match std::fs::symlink_metadata(path) {
        Ok(_) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound && !create => {
            Err(crate::cli::UsageError(format!(
                "--file {}: no such file; give --create to have vecio create it for this run \
                 (and remove it afterwards)",
                path.display()
            ))
            .into())
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(e).with_context(|| format!("--file {}", path.display())),
    }
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
    check_file(a.common.file.as_ref(), a.common.create)?;
    let opts = WritevOptions {
        file: a.common.file,
        dir: a.common.dir,
        size: a.size,
        runtime: a.common.runtime,
        repeat: a.common.repeat,
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
        runtime: a.runtime,
        repeat: a.repeat,
        depth: a.depth,
        threads: a.threads,
    };
    let report = nowait::run(&opts)?;
    print!("{}", nowait::render(&report));
    write_json(a.json.as_deref(), &report)
}

fn bench_tokio(a: crate::cli::TokioArgs) -> Result<()> {
    use vecio_bench::experiments::tokio_reads::{self, TokioOptions};
    let opts = TokioOptions {
        dir: a.dir,
        medium: a.medium,
        large: a.size,
        runtime: a.runtime,
        repeat: a.repeat,
        tasks: a.tasks,
        current_thread: a.current_thread,
    };
    let report = tokio_reads::run(&opts)?;
    print!("{}", tokio_reads::render(&report));
    write_json(a.json.as_deref(), &report)
}

fn bench_callcost(a: CallcostArgs) -> Result<()> {
    let opts = CallcostOptions {
        dir: a.dir,
        runtime: a.runtime,
        repeat: a.repeat,
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
    check_file(a.file.as_ref(), a.create)?;
    let opts = LoopOptions {
        file: a.file,
        dir: a.dir,
        size: a.size,
        runtime: a.runtime,
        repeat: a.repeat,
    };
    let exe = std::env::current_exe().context("finding the vecio binary")?;
    let report = loopdev::run(&opts, &exe)?;
    print!("{}", loopdev::render(&report));
    write_json(a.json.as_deref(), &report)
}
