//! What the report shows of `--http`: a table of both servers under each workload, the set-up
//! line (what wrk and the servers ran with), and the targets, judged on the median of the
//! per-repetition ratios.

use super::{HttpCell, HttpReport};
use crate::experiment::table::{Cell, DataTable};
use crate::experiment::Target;
use crate::harness::stats::{median, paired_median};

/// At least this many requests/s, vecio over ServeDir, on small cached files.
pub const SMALL_RPS: f64 = 1.3;
/// At most this p99, vecio over ServeDir, on small cached files.
pub const SMALL_P99: f64 = 1.0;
/// At least this many requests/s, vecio over ServeDir, on every workload.
pub const FLOOR_RPS: f64 = 0.95;

fn cell<'a>(r: &'a HttpReport, workload: &str, server: &str) -> Option<&'a HttpCell> {
    r.cells
        .iter()
        .find(|c| c.workload == workload && c.server == server)
}

/// vecio's over ServeDir's requests/s and p99 under `workload`: medians of the
/// per-repetition ratios.
pub fn ratios(r: &HttpReport, workload: &str) -> (Option<f64>, Option<f64>) {
    match (cell(r, workload, "vecio"), cell(r, workload, "servedir")) {
        (Some(v), Some(s)) => (
            paired_median(&v.rps, &s.rps),
            paired_median(&v.p99_us, &s.p99_us),
        ),
        _ => (None, None),
    }
}

/// How it ran, for the set-up lines.
pub fn setup(r: &HttpReport) -> (String, String) {
    let sets: Vec<String> = r
        .workloads
        .iter()
        .map(|w| {
            format!(
                "{} ({} files, {} MiB, {})",
                w.name,
                w.files,
                w.bytes >> 20,
                if w.cached {
                    "warmed before each measurement"
                } else {
                    "dropped from the page cache before each measurement"
                }
            )
        })
        .collect();
    (
        "http".to_string(),
        format!(
            "{}: -t{} -c{} -d{}s, paths at random from the set; servers: vecio-tokio's example \
             (crates/vecio-tokio/examples/serve) --via vecio and --via servedir, each a \
             multi-thread tokio runtime with {} worker(s) (plus vecio-tokio's driver thread, or \
             tokio's blocking pool) on 127.0.0.1; order alternating per repetition, x {}; {}",
            r.wrk,
            r.wrk_threads,
            r.connections,
            r.seconds,
            r.workers,
            r.repeat,
            sets.join("; ")
        ),
    )
}

/// Both servers under each workload: medians of the repetitions, and vecio's ratios.
pub fn table(r: &HttpReport) -> DataTable {
    let mut t = DataTable::new(
        "In a real service: vecio-tokio's example static file server through vecio_tokio::fs \
         against tower-http's ServeDir (tokio::fs), loaded by wrk; medians of the repetitions, \
         ratios the median of the per-repetition ratios",
        &[
            "files",
            "server",
            "requests/s",
            "p50 ms",
            "p99 ms",
            "MiB/s",
            "errors",
            "req/s vs ServeDir",
            "p99 vs ServeDir",
        ],
    );
    for c in &r.cells {
        let med = |v: &[f64]| median(v);
        let ms = |v: &[f64]| median(v).map(|x| x / 1000.0);
        let (rps, p99) = if c.server == "vecio" {
            ratios(r, &c.workload)
        } else {
            (None, None)
        };
        let name = if c.server == "vecio" {
            "vecio_tokio::fs"
        } else {
            "ServeDir"
        };
        t.rows.push(vec![
            Cell::text(c.workload.clone()),
            Cell::text(name),
            Cell::maybe(med(&c.rps), 0),
            Cell::maybe(ms(&c.p50_us), 2),
            Cell::maybe(ms(&c.p99_us), 2),
            Cell::maybe(med(&c.mib_s), 0),
            Cell::derived(c.errors as f64, c.errors.to_string()),
            Cell::ratio(rps),
            Cell::ratio(p99),
        ]);
    }
    t
}

/// Issue 23's targets: on small cached files at least 1.3x ServeDir's requests/s with a p99
/// no worse; at least 0.95x its requests/s on every workload; no failed request.
pub fn targets(r: &HttpReport) -> Vec<Target> {
    let mut out = Vec::new();
    let (rps, p99) = ratios(r, "small");
    out.push(Target {
        text: format!(
            "tokio --http: small cached files, requests/s at least {SMALL_RPS}x ServeDir's: {}",
            shown(rps)
        ),
        met: rps.is_some_and(|x| x >= SMALL_RPS),
    });
    out.push(Target {
        text: format!(
            "tokio --http: small cached files, p99 at most {SMALL_P99}x ServeDir's: {}",
            shown(p99)
        ),
        met: p99.is_some_and(|x| x <= SMALL_P99),
    });
    for w in &r.workloads {
        let (rps, _) = ratios(r, &w.name);
        out.push(Target {
            text: format!(
                "tokio --http: {} files, requests/s at least {FLOOR_RPS}x ServeDir's: {}",
                w.name,
                shown(rps)
            ),
            met: rps.is_some_and(|x| x >= FLOOR_RPS),
        });
    }
    let errors: u64 = r.cells.iter().map(|c| c.errors).sum();
    out.push(Target {
        text: format!("tokio --http: every request answered 2xx/3xx: {errors} errors"),
        met: errors == 0,
    });
    out
}

fn shown(r: Option<f64>) -> String {
    r.map_or("not measured".into(), |x| format!("{x:.2}x"))
}
