//! `vecio bench`: runs experiments, prints their tables, writes JSON.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result};
use serde::Serialize;
use vecio_bench::callcost::{self, CallcostOptions};
use vecio_bench::loopdev::{self, LoopOptions};
use vecio_bench::nowait::{self, NowaitOptions};
use vecio_bench::writev::{self, WritevOptions};

use crate::cli::{
    AllArgs, Bench, CallcostArgs, CallcostWorkerArgs, LoopArgs, NowaitArgs, WritevArgs,
};

/// Runs one `vecio bench` subcommand.
pub fn run(b: Bench) -> Result<()> {
    match b {
        Bench::Writev(a) => bench_writev(a),
        Bench::Nowait(a) => bench_nowait(a),
        Bench::Callcost(a) => bench_callcost(a),
        Bench::CallcostWorker(a) => callcost_worker(a),
        Bench::Loop(a) => bench_loop(a),
        Bench::All(a) => bench_all(a),
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

/// Everything `vecio bench all` measured.
#[derive(Serialize)]
struct AllReport {
    writev: writev::WritevReport,
    nowait: nowait::NowaitReport,
    callcost: callcost::CallcostReport,
    /// `None` when fio (the loop experiment's NBD client) is missing or `--no-fio` was given.
    #[serde(rename = "loop")]
    loop_dev: Option<loopdev::LoopReport>,
    missing: Vec<&'static str>,
}

fn bench_all(a: AllArgs) -> Result<()> {
    let mut opts = WritevOptions {
        dir: a.dir.clone(),
        fio: !a.no_fio,
        ..WritevOptions::default()
    };
    if a.quick {
        opts.size = 256 << 20;
        opts.runtime = Duration::from_secs(1);
        opts.repeat = 2;
    }
    let report = writev::run(&opts)?;
    print!("{}", writev::render(&report));
    let mut now = NowaitOptions {
        dir: a.dir.clone(),
        ..NowaitOptions::default()
    };
    if a.quick {
        now.medium = 64 << 20;
        now.large = 256 << 20;
        now.runtime = Duration::from_secs(1);
        now.repeat = 1;
    }
    let nowait_report = nowait::run(&now)?;
    println!();
    print!("{}", nowait::render(&nowait_report));
    let mut cc = CallcostOptions {
        dir: a.dir.clone(),
        ..CallcostOptions::default()
    };
    if a.quick {
        cc.runtime = Duration::from_millis(300);
        cc.repeat = 3;
    }
    let exe = std::env::current_exe().ok();
    let callcost_report = callcost::run(&cc, exe.as_deref())?;
    println!();
    print!("{}", callcost::render(&callcost_report));
    let loop_report = bench_all_loop(&a)?;
    let missing = vec!["fuse (seed 004)"];
    println!(
        "\nNot yet measured by this version of vecio: {}",
        missing.join(", ")
    );
    write_json(
        a.json.as_deref(),
        &AllReport {
            writev: report,
            nowait: nowait_report,
            callcost: callcost_report,
            loop_dev: loop_report,
            missing,
        },
    )
}

/// The loop experiment inside `bench all`: skipped, with a line saying why, without fio.
fn bench_all_loop(a: &AllArgs) -> Result<Option<loopdev::LoopReport>> {
    println!();
    let why = if a.no_fio {
        Some("--no-fio was given and fio is its NBD client".to_string())
    } else {
        loopdev::client_missing()
    };
    if let Some(why) = why {
        println!("loop device (seed 001) skipped: {why}");
        return Ok(None);
    }
    let mut opts = LoopOptions {
        dir: a.dir.clone(),
        ..LoopOptions::default()
    };
    if a.quick {
        opts.size = 256 << 20;
        opts.runtime = Duration::from_secs(1);
        opts.repeat = 1;
    }
    let exe = std::env::current_exe().context("finding the vecio binary")?;
    let report = loopdev::run(&opts, &exe)?;
    print!("{}", loopdev::render(&report));
    Ok(Some(report))
}
