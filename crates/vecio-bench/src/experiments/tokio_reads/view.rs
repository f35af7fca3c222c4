//! Seed 002's reads from tokio tasks: its entry, section, targets, summary rows and figures.

use super::http::view as http_view;
use super::run::PATHS;
use super::{io_uring_path, Cell, Tokio, TokioReport};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart};
use crate::experiment::section::{at_least, at_most, div, Plot};
use crate::experiment::seed::claim;
use crate::experiment::table::{num, At, Cell as TableCell, DataTable};
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
            let workload = format!(
                "16 KiB reads, {} tasks, {runtime} runtime; cached file {} MiB, O_DIRECT file {} \
                 MiB; {:.1} s x {} per cell",
                r.tasks,
                r.medium >> 20,
                r.large >> 20,
                r.runtime_s,
                r.repeat
            );
            let paths = format!(
                "{} is tokio::fs on tokio's own io_uring driver (tokio_unstable, a helper \
                 process): each read a seek (blocking pool) and a read (io_uring); fio: \
                 io_uring engine, randread, 16 KiB, iodepth {}, O_DIRECT, on the same file",
                io_uring_path::PATH,
                r.tasks
            );
            let mut extra = vec![("workload", workload), ("paths", paths)];
            extra.extend(r.http.as_ref().map(http_view::setup));
            s.setup = lines(setup, meta, extra, &[]);
        }
        s.tables.push(table(r));
        s.tables.extend(r.http.as_ref().map(http_view::table));
        for c in &r.cells {
            let note = |why| format!("{} / {}: not measured: {why}", c.scenario, c.path);
            s.notes.extend(c.note.as_ref().map(note));
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
        s.targets.extend(r.http.iter().flat_map(http_view::targets));
    }

    /// The seed's results beside vecio-tokio's, tokio::fs the other program (the mix's latency is
    /// in the section, beside nowait's in the summary). The O_DIRECT row is in MB/s, the summary's
    /// unit, where the section's table says MiB/s.
    fn summary(r: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "002";
        let Some(r) = r else {
            let result = "tokio cached p50: vecio-tokio/tokio::fs";
            return vec![SummaryRow::missing(seed, result, "x", "-")];
        };
        let mut out = Vec::new();
        if let Some((a, b)) = r.pair("cached") {
            let ratio = div(Some(b.p50_us), Some(a.p50_us));
            let result = format!(
                "tokio cached p50: vecio-tokio {:.1} µs/tokio::fs {:.1} µs",
                b.p50_us, a.p50_us
            );
            let target = at_most(ratio, 0.2, "x");
            let row = SummaryRow::own(seed, result, "x", "-".into(), num(ratio, 2), target);
            out.push(row);
        }
        if let Some((a, b)) = r.pair("direct") {
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
        let mut out = Vec::new();
        for c in &self.cells {
            let Some(mib) = Summary::of(&c.mib_s) else {
                continue;
            };
            let name = format!("{} / {}", c.scenario, c.path);
            let mib_s = Metric::of(Tokio::KEY, format!("{name} MiB/s"), &mib, true);
            // Mean latency at a fixed number of tasks moves with throughput: it shares the spread.
            let mean = Metric {
                name: format!("{name} mean µs"),
                value: c.mean_us,
                higher_is_better: false,
                ..mib_s.clone()
            };
            out.extend([mib_s, mean]);
        }
        out
    }
}

/// The cell's median MiB/s over its repetitions (0 when it has none).
fn median(c: &Cell) -> f64 {
    crate::harness::stats::median(&c.mib_s).unwrap_or(0.0)
}

impl TokioReport {
    fn cell(&self, scenario: &str, path: &str) -> Option<&Cell> {
        self.cells
            .iter()
            .find(|c| c.scenario == scenario && c.path == path)
    }

    /// tokio::fs's and vecio-tokio's cells of `scenario`, when both were measured.
    fn pair(&self, scenario: &str) -> Option<(&Cell, &Cell)> {
        self.cell(scenario, "tokio::fs")
            .zip(self.cell(scenario, "vecio-tokio"))
    }
}

/// The same reads from tokio tasks: tokio::fs (spawn_blocking) against vecio-tokio.
fn table(r: &TokioReport) -> DataTable {
    let title = format!(
        "From an async service: 16 KiB reads by {} tokio tasks, tokio::fs (every read through \
         spawn_blocking) against vecio-tokio (cached reads inline with RWF_NOWAIT, the rest \
         through io_uring), tokio-uring and tokio::fs on tokio's io_uring driver; MiB/s median \
         of the repetitions, latency in µs of the median run; '-': not measured (see the notes)",
        r.tasks
    );
    // A cell without repetitions shows '-' in every figure.
    let lat = |at: &At, c: &Cell, v, field| (!c.mib_s.is_empty()).then(|| at.json(v, 1, field));
    let mut t = DataTable::over(title, "/tokio/cells", &r.cells)
        .col("file", |_, c| &c.scenario)
        .col("path", |_, c| &c.path)
        .col("MiB/s", |_, c| {
            let med = median(c);
            (!c.mib_s.is_empty()).then(|| TableCell::derived(med, format!("{med:.0}")))
        })
        .col("mean", |at, c| lat(at, c, c.mean_us, "mean_us"))
        .col("p50", |at, c| lat(at, c, c.p50_us, "p50_us"))
        .col("p99", |at, c| lat(at, c, c.p99_us, "p99_us"))
        .col("p99.9", |at, c| lat(at, c, c.p999_us, "p999_us"))
        .done();
    // fio's row follows the last path's O_DIRECT row.
    let last_direct = |c: &Cell| c.scenario == "direct" && c.path == PATHS[PATHS.len() - 1];
    if let (Some(f), Some(i)) = (&r.fio, r.cells.iter().position(last_direct)) {
        let mib = TableCell::maybe(crate::harness::stats::median(&f.mib_s), 0);
        let mut row = vec![
            TableCell::text("direct"),
            TableCell::text("fio io_uring"),
            mib,
        ];
        row.extend((0..4).map(|_| TableCell::text("-")));
        t.rows.insert(i + 1, row);
    }
    t
}

fn bars(r: &TokioReport) -> Bars {
    let group = |sc: &str| BarGroup {
        label: sc.to_string(),
        values: PATHS
            .iter()
            .map(|&p| Some(BarValue::of(&Summary::of(&r.cell(sc, p)?.mib_s)?)))
            .collect(),
    };
    Bars {
        title: "16 KiB reads from 32 tokio tasks: MiB/s (seed 002)".into(),
        y_label: "MiB/s".into(),
        series: PATHS.iter().map(|p| p.to_string()).collect(),
        groups: ["cached", "direct", "mix"].map(group).to_vec(),
        mark_label: String::new(),
    }
}

/// The targets of issue 11: cached p50 at most 1/5 of tokio::fs, direct bandwidth at least
/// 1.5x, the mix's mean latency at least 30% lower; and issue 23's: direct bandwidth at least
/// 0.9x fio's io_uring engine on the same file (the median of the per-repetition ratios).
fn targets(r: &TokioReport) -> Vec<Target> {
    let mut out = Vec::new();
    if let Some((a, b)) = r.pair("cached") {
        let x = b.p50_us / a.p50_us;
        let text = format!("tokio: cached p50 at most 1/5 of tokio::fs's: {x:.3}x");
        out.push(Target::new(text, x <= 0.2));
    }
    if let Some((a, b)) = r.pair("direct") {
        let x = median(b) / median(a);
        let text = format!("tokio: O_DIRECT bandwidth at least 1.5x tokio::fs's: {x:.2}x");
        out.push(Target::new(text, x >= 1.5));
    }
    if let Some((a, b)) = r.pair("mix") {
        let x = 1.0 - b.mean_us / a.mean_us;
        let text = format!(
            "tokio: the 73/18/9 mix's mean latency at least 30% below tokio::fs's: {:.0}% lower",
            x * 100.0
        );
        out.push(Target::new(text, x >= 0.3));
    }
    if let (Some(f), Some(b)) = (&r.fio, r.cell("direct", "vecio-tokio")) {
        let x = paired_median(&b.mib_s, &f.mib_s);
        let text = format!(
            "tokio: O_DIRECT bandwidth at least 0.9x fio's io_uring (16 KiB, iodepth {}): {}",
            f.iodepth,
            x.map_or("not measured".into(), |x| format!("{x:.2}x"))
        );
        out.push(Target::new(text, x.is_some_and(|x| x >= 0.9)));
    }
    out
}

/// MB/s (10^6 bytes/s, the summary's unit) of a figure in MiB/s.
const MB_PER_MIB: f64 = 1.048_576;
