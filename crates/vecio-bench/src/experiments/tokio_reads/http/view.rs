//! What the report shows of `--http`: a table of both servers under each workload, the set-up
//! line (what wrk and the servers ran with), and the targets, judged on the median of the
//! per-repetition ratios.

use super::{HttpCell, HttpReport, Workload};
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
pub fn setup(r: &HttpReport) -> (&'static str, String) {
    let set = |w: &Workload| {
        let cache = if w.cached {
            "warmed before each measurement"
        } else {
            "dropped from the page cache before each measurement"
        };
        let mib = w.bytes >> 20;
        format!("{} ({} files, {mib} MiB, {cache})", w.name, w.files)
    };
    let sets: Vec<String> = r.workloads.iter().map(set).collect();
    let text = format!(
        "{}: -t{} -c{} -d{}s, paths at random from the set; servers: vecio-tokio's example \
         (crates/vecio-tokio/examples/serve) --via vecio and --via servedir, each a multi-thread \
         tokio runtime with {} worker(s) (plus vecio-tokio's driver thread, or tokio's blocking \
         pool) on 127.0.0.1; order alternating per repetition, x {}; {}",
        r.wrk,
        r.wrk_threads,
        r.connections,
        r.seconds,
        r.workers,
        r.repeat,
        sets.join("; ")
    );
    ("http", text)
}

/// Both servers under each workload: medians of the repetitions, and vecio's ratios.
pub fn table(r: &HttpReport) -> DataTable {
    let title = "In a real service: vecio-tokio's example static file server through \
                 vecio_tokio::fs against tower-http's ServeDir (tokio::fs), loaded by wrk; medians \
                 of the repetitions, ratios the median of the per-repetition ratios";
    let ms = |v: &[f64]| Cell::maybe(median(v).map(|x| x / 1000.0), 2);
    let vecio = |c: &HttpCell| c.server == "vecio";
    let vs_servedir = |c: &HttpCell| ratios(r, &c.workload);
    DataTable::over(title, "", &r.cells)
        .col("files", |_, c| &c.workload)
        .col("server", |_, c| {
            if vecio(c) {
                "vecio_tokio::fs"
            } else {
                "ServeDir"
            }
        })
        .col("requests/s", |_, c| Cell::maybe(median(&c.rps), 0))
        .col("p50 ms", |_, c| ms(&c.p50_us))
        .col("p99 ms", |_, c| ms(&c.p99_us))
        .col("MiB/s", |_, c| Cell::maybe(median(&c.mib_s), 0))
        .col("errors", |_, c| {
            Cell::derived(c.errors as f64, c.errors.to_string())
        })
        .col("req/s vs ServeDir", |_, c| {
            Cell::ratio(vs_servedir(c).0.filter(|_| vecio(c)))
        })
        .col("p99 vs ServeDir", |_, c| {
            Cell::ratio(vs_servedir(c).1.filter(|_| vecio(c)))
        })
        .done()
}

/// Issue 23's targets: on small cached files at least 1.3x ServeDir's requests/s with a p99
/// no worse; at least 0.95x its requests/s on every workload; no failed request.
pub fn targets(r: &HttpReport) -> Vec<Target> {
    let (rps, p99) = ratios(r, "small");
    let text = format!(
        "tokio --http: small cached files, requests/s at least {SMALL_RPS}x ServeDir's: {}",
        shown(rps)
    );
    let mut out = vec![Target::new(text, rps.is_some_and(|x| x >= SMALL_RPS))];
    let text = format!(
        "tokio --http: small cached files, p99 at most {SMALL_P99}x ServeDir's: {}",
        shown(p99)
    );
    out.push(Target::new(text, p99.is_some_and(|x| x <= SMALL_P99)));
    for w in &r.workloads {
        let (rps, _) = ratios(r, &w.name);
        let text = format!(
            "tokio --http: {} files, requests/s at least {FLOOR_RPS}x ServeDir's: {}",
            w.name,
            shown(rps)
        );
        out.push(Target::new(text, rps.is_some_and(|x| x >= FLOOR_RPS)));
    }
    let errors: u64 = r.cells.iter().map(|c| c.errors).sum();
    let text = format!("tokio --http: every request answered 2xx/3xx: {errors} errors");
    out.push(Target::new(text, errors == 0));
    out
}

fn shown(r: Option<f64>) -> String {
    r.map_or("not measured".into(), |x| format!("{x:.2}x"))
}
