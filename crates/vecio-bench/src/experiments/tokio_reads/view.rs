//! Seed 002's reads from tokio tasks: its entry, section, targets, summary rows and figures.

use super::http::view as http_view;
use super::run::PATHS;
use super::{io_uring_path, Cell, Tokio, TokioReport};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_least, at_most, div, Plot};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, Cell as TableCell, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, Target, View};
use crate::experiments::nowait;
use crate::harness::setup::{lines, Setup};
use crate::harness::stats::{paired_median, Summary};

/// Seed 002 once more, as an async service meets it today.
pub(super) const SEED: Seed = Seed {
    title: "preadv2 and RWF_NONBLOCK (2015) from tokio tasks: cached reads inline, not through \
            spawn_blocking",
    method: "16 KiB reads by 32 tokio tasks over a mostly cached file, a large file opened \
             O_DIRECT, and the 73/18/9 mix: tokio::fs (every read through spawn_blocking, the \
             thread pool the seed's before queues to), vecio-tokio (cached reads inline with \
             RWF_NOWAIT, the rest through io_uring), and tokio-uring.",
    claims: &[
        claim(
            "f1: ~73% rand read over mostly cached data (zipf med-size dataset)",
            "the workload",
        ),
        claim("after: f1: lat (usec) : 2=70.63%", "70.6% under 2 µs"),
        claim(
            "we were able to reduce average response time by 20 to 30%",
            "-20% to -30%",
        ),
    ],
    ..nowait::SEED
};

impl View for TokioReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let r = self;
        if let Some(meta) = &r.meta {
            let runtime = if r.current_thread {
                "current-thread"
            } else {
                "multi-thread"
            };
            let mut extra = vec![(
                "workload".to_string(),
                format!(
                    "16 KiB reads, {} tasks, {runtime} runtime; cached file {} MiB, O_DIRECT file {} \
                     MiB; {:.1} s x {} per cell",
                    r.tasks,
                    r.medium >> 20,
                    r.large >> 20,
                    r.runtime_s,
                    r.repeat
                ),
            )];
            extra.push((
                "paths".to_string(),
                format!(
                    "{} is tokio::fs on tokio's own io_uring driver (tokio_unstable, a helper \
                     process): each read a seek (blocking pool) and a read (io_uring); fio: \
                     io_uring engine, randread, 16 KiB, iodepth {}, O_DIRECT, on the same file",
                    io_uring_path::PATH,
                    r.tasks
                ),
            ));
            if let Some(h) = &r.http {
                extra.push(http_view::setup(h));
            }
            s.setup = lines(setup, meta, extra, &[]);
        }
        s.tables.push(table(r));
        if let Some(h) = &r.http {
            s.tables.push(http_view::table(h));
        }
        for c in r.cells.iter().filter(|c| c.note.is_some()) {
            s.notes.push(format!(
                "{} / {}: not measured: {}",
                c.scenario,
                c.path,
                c.note.as_deref().unwrap_or("")
            ));
        }
        if let Some(why) = r.fio.as_ref().and_then(|f| f.error.as_ref()) {
            s.notes.push(format!("fio: not measured: {why}"));
        }
        s.plots.push(Plot::new(
            "s002-tokio",
            "MiB/s per file and path, from tokio tasks",
            "Bars: median MiB/s, whiskers: lowest and highest repetition.",
            Chart::Bars(bars(r)),
        ));
        s.targets = targets(r);
        if let Some(h) = &r.http {
            s.targets.extend(http_view::targets(h));
        }
    }

    /// The seed's results beside vecio-tokio's, tokio::fs the other program (the mix's latency is
    /// in the section, beside nowait's in the summary). The O_DIRECT row is in MB/s, the summary's
    /// unit, where the section's table says MiB/s.
    fn summary(r: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "002";
        let Some(r) = r else {
            return vec![SummaryRow::missing(
                seed,
                "tokio cached p50: vecio-tokio/tokio::fs",
                "x",
                "-",
            )];
        };
        let get = |sc| cell(r, sc, "tokio::fs").zip(cell(r, sc, "vecio-tokio"));
        let mut out = Vec::new();
        if let Some((a, b)) = get("cached") {
            let ratio = div(Some(b.p50_us), Some(a.p50_us));
            out.push(SummaryRow::own(
                seed,
                format!(
                    "tokio cached p50: vecio-tokio {:.1} µs/tokio::fs {:.1} µs",
                    b.p50_us, a.p50_us
                ),
                "x",
                "-".into(),
                num(ratio, 2),
                at_most(ratio, 0.2, "x"),
            ));
        }
        if let Some((a, b)) = get("direct") {
            let ratio = div(Some(median(b)), Some(median(a)));
            out.push(SummaryRow {
                seed,
                result: "tokio O_DIRECT: vecio-tokio vs tokio::fs".into(),
                unit: "MB/s",
                seed_figure: "-".into(),
                vecio: format!("{:.1}", median(b) * MB_PER_MIB),
                peer: format!("{:.1} tokio::fs", median(a) * MB_PER_MIB),
                ratio,
                target: at_least(ratio, 1.5, "x"),
            });
        }
        out
    }

    /// Its figures: MiB/s (the repetitions' spread) and mean latency per file and path.
    fn metrics(&self) -> Vec<Metric> {
        let r = self;
        let mut out = Vec::new();
        for c in &r.cells {
            let Some(mib) = Summary::of(&c.mib_s) else {
                continue;
            };
            let name = format!("{} / {}", c.scenario, c.path);
            out.push(Metric::of(Tokio::KEY, format!("{name} MiB/s"), &mib, true));
            // Mean latency at a fixed number of tasks moves with throughput: it shares the spread.
            out.push(Metric {
                name: format!("{name} mean µs"),
                value: c.mean_us,
                higher_is_better: false,
                ..Metric::of(Tokio::KEY, String::new(), &mib, true)
            });
        }
        out
    }
}

/// The cell's median MiB/s over its repetitions (0 when it has none).
fn median(c: &Cell) -> f64 {
    crate::harness::stats::median(&c.mib_s).unwrap_or(0.0)
}

fn cell<'a>(r: &'a TokioReport, scenario: &str, path: &str) -> Option<&'a Cell> {
    r.cells
        .iter()
        .find(|c| c.scenario == scenario && c.path == path)
}

/// The same reads from tokio tasks: tokio::fs (spawn_blocking) against vecio-tokio.
fn table(r: &TokioReport) -> DataTable {
    let mut t = DataTable::new(
        format!(
            "From an async service: 16 KiB reads by {} tokio tasks, tokio::fs (every read through \
             spawn_blocking) against vecio-tokio (cached reads inline with RWF_NOWAIT, the rest \
             through io_uring), tokio-uring and tokio::fs on tokio's io_uring driver; MiB/s \
             median of the repetitions, latency in µs of the median run; '-': not measured \
             (see the notes)",
            r.tasks
        ),
        &["file", "path", "MiB/s", "mean", "p50", "p99", "p99.9"],
    );
    let dashes = |scenario: &str, path: &str, mib: TableCell| {
        let mut row = vec![TableCell::text(scenario), TableCell::text(path), mib];
        row.extend((0..4).map(|_| TableCell::text("-")));
        row
    };
    for (i, c) in r.cells.iter().enumerate() {
        let at = |field: &str| format!("/tokio/cells/{i}/{field}");
        let med = median(c);
        t.rows.push(if c.mib_s.is_empty() {
            dashes(&c.scenario, &c.path, TableCell::text("-"))
        } else {
            vec![
                TableCell::text(c.scenario.clone()),
                TableCell::text(c.path.clone()),
                TableCell::derived(med, format!("{med:.0}")),
                TableCell::json(c.mean_us, 1, at("mean_us")),
                TableCell::json(c.p50_us, 1, at("p50_us")),
                TableCell::json(c.p99_us, 1, at("p99_us")),
                TableCell::json(c.p999_us, 1, at("p999_us")),
            ]
        });
        let last_direct = c.scenario == "direct" && c.path == PATHS[PATHS.len() - 1];
        if let Some(f) = r.fio.as_ref().filter(|_| last_direct) {
            let med = crate::harness::stats::median(&f.mib_s);
            t.rows
                .push(dashes("direct", "fio io_uring", TableCell::maybe(med, 0)));
        }
    }
    t
}

fn bars(r: &TokioReport) -> Bars {
    let groups = ["cached", "direct", "mix"]
        .iter()
        .map(|&sc| BarGroup {
            label: sc.to_string(),
            values: PATHS
                .iter()
                .map(|&p| Some(BarValue::of(&Summary::of(&cell(r, sc, p)?.mib_s)?)))
                .collect(),
        })
        .collect();
    Bars {
        title: "16 KiB reads from 32 tokio tasks: MiB/s (seed 002)".into(),
        y_label: "MiB/s".into(),
        series: PATHS.iter().map(|p| p.to_string()).collect(),
        groups,
        mark_label: String::new(),
    }
}

/// The targets of issue 11: cached p50 at most 1/5 of tokio::fs, direct bandwidth at least
/// 1.5x, the mix's mean latency at least 30% lower; and issue 23's: direct bandwidth at least
/// 0.9x fio's io_uring engine on the same file (the median of the per-repetition ratios).
fn targets(r: &TokioReport) -> Vec<Target> {
    let get = |sc, p| cell(r, sc, p);
    let med = median;
    let mut out = Vec::new();
    if let (Some(a), Some(b)) = (get("cached", "tokio::fs"), get("cached", "vecio-tokio")) {
        let x = b.p50_us / a.p50_us;
        out.push(Target {
            text: format!("tokio: cached p50 at most 1/5 of tokio::fs's: {x:.3}x"),
            met: x <= 0.2,
        });
    }
    if let (Some(a), Some(b)) = (get("direct", "tokio::fs"), get("direct", "vecio-tokio")) {
        let x = med(b) / med(a);
        out.push(Target {
            text: format!("tokio: O_DIRECT bandwidth at least 1.5x tokio::fs's: {x:.2}x"),
            met: x >= 1.5,
        });
    }
    if let (Some(a), Some(b)) = (get("mix", "tokio::fs"), get("mix", "vecio-tokio")) {
        let x = 1.0 - b.mean_us / a.mean_us;
        out.push(Target {
            text: format!(
                "tokio: the 73/18/9 mix's mean latency at least 30% below tokio::fs's: {:.0}% lower",
                x * 100.0
            ),
            met: x >= 0.3,
        });
    }
    if let (Some(f), Some(b)) = (&r.fio, get("direct", "vecio-tokio")) {
        let x = paired_median(&b.mib_s, &f.mib_s);
        out.push(Target {
            text: format!(
                "tokio: O_DIRECT bandwidth at least 0.9x fio's io_uring (16 KiB, iodepth {}): {}",
                f.iodepth,
                x.map_or("not measured".into(), |x| format!("{x:.2}x"))
            ),
            met: x.is_some_and(|x| x >= 0.9),
        });
    }
    out
}

/// MB/s (10^6 bytes/s, the summary's unit) of a figure in MiB/s.
const MB_PER_MIB: f64 = 1.048_576;
