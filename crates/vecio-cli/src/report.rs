//! `vecio bench all`, `vecio bench compare` and `vecio bench report`: every experiment with one
//! summary, the HTML/Markdown/JSON report, and run-to-run comparison.

use std::path::PathBuf;

use anyhow::{bail, Context, Result};
use clap::Args;
use vecio_bench::experiments::all::{self, AllOptions};
use vecio_bench::experiments::results::AllResults;
use vecio_bench::report::{self, compare as cmp};

use crate::cli::AllArgs;

/// Options of `vecio bench compare`.
#[derive(Args, Debug, Clone)]
pub struct CompareArgs {
    /// The earlier run: a `results.json`, a `bench all --json` file or one experiment's --json.
    pub a: PathBuf,
    /// The later run, of the same kinds.
    pub b: PathBuf,
}

/// Options of `vecio bench report`.
#[derive(Args, Debug, Clone)]
pub struct ReportArgs {
    /// A recorded `results.json` (or `bench all --json` file).
    pub results: PathBuf,
    /// Directory to write `index.html`, `report.md`, `results.json` and `plots/` into.
    #[arg(long, short)]
    pub out: PathBuf,
}

/// Runs every experiment, prints the summary, writes the JSON and the report. Exits 1 when an
/// experiment failed (one left out for a missing tool is not a failure).
pub fn bench_all(a: AllArgs) -> Result<()> {
    let opts = AllOptions {
        quick: a.quick,
        dir: a.dir,
        no_fio: a.no_fio,
        no_callgrind: a.no_callgrind,
        runtime: a.runtime,
        size: a.size,
        repeat: a.repeat,
    };
    let exe = std::env::current_exe().context("finding the vecio binary")?;
    let results = all::run(&opts, &exe);
    print!(
        "{}",
        report::summary::render(&results, &report::summary_rows(&results))
    );
    if let Some(p) = &a.json {
        results.save(p)?;
        eprintln!("figures written to {}", p.display());
    }
    if let Some(dir) = &a.report {
        let files = report::write(dir, &results)?;
        eprintln!(
            "report written to {} ({} plots; also {} and {})",
            files.html.display(),
            files.plots,
            files.markdown.display(),
            files.json.display()
        );
    }
    let failed: Vec<String> = results
        .not_measured
        .iter()
        .filter(|n| n.failed)
        .map(|n| format!("{}: {}", n.experiment, n.reason))
        .collect();
    if !failed.is_empty() {
        bail!("experiments failed: {}", failed.join("; "));
    }
    Ok(())
}

/// Prints B/A for every figure two runs share, changes beyond the noise flagged.
pub fn compare(a: CompareArgs) -> Result<()> {
    let (ra, rb) = (cmp::load(&a.a)?, cmp::load(&a.b)?);
    let (changes, only) = cmp::compare(&cmp::metrics(&ra), &cmp::metrics(&rb));
    if changes.is_empty() {
        bail!(
            "{} and {} share no figure to compare",
            a.a.display(),
            a.b.display()
        );
    }
    print!(
        "{}",
        cmp::render(
            &a.a.display().to_string(),
            &a.b.display().to_string(),
            &changes,
            &only
        )
    );
    Ok(())
}

/// Renders the report of a recorded run and prints its summary.
pub fn render(a: ReportArgs) -> Result<()> {
    let results = AllResults::load(&a.results)?;
    let files = report::write(&a.out, &results)?;
    print!(
        "{}",
        report::summary::render(&results, &report::summary_rows(&results))
    );
    println!(
        "{} ({} plots), {}, {}",
        files.html.display(),
        files.plots,
        files.markdown.display(),
        files.json.display()
    );
    Ok(())
}
