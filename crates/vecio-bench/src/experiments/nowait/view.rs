//! Seed 002, preadv2 and RWF_NOWAIT fast reads: its entry, section, targets, summary rows and
//! figures.

use super::Config::{self, FastAlways, FastTracked, PoolOnly};
use super::Workload::{self, F1Cached, F2Uncached, F3Sequential, Mix};
use super::{Cell as NowaitCell, Latency, Nowait, NowaitReport, WorkloadFigures};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart, Line, Lines, XTicks};
use crate::experiment::section::{at_least, at_most, div, Plot, Verdict};
use crate::experiment::seed::claim;
use crate::experiment::table::{change_num, num, At, DataTable};
use crate::experiment::{Experiment, Metric, Section, Seed, SummaryRow, Target, View};
use crate::harness::setup::{lines, Setup};

/// Seed 002, as the event-loop experiment re-measures it (the tokio experiment starts from it).
pub const SEED: Seed = Seed {
    id: "002",
    title: "preadv2/pwritev2 and RWF_NONBLOCK (2015): cached reads served inline, not queued",
    file: "002_830b7ce2b4df9caf.txt",
    date: "2015-05 (v7, on 4.1-rc3)",
    author: "Milosz Tanski, linux-api: \"preadv2/pwritev2 and RWF_NONBLOCK\"",
    headline: "cached reads tried without blocking before a thread pool: 70% of \
                   mostly-cached random reads at ~2 µs; real workload 20-30% lower response time",
    method: "16 KiB buffered reads kept 32 in flight by one event loop over three files (f1 \
                 Zipf over a mostly cached file, f2 uniform over an uncached one, f3 sequential) \
                 and their 73/18/9 mix: a thread pool alone (the seed's before), fast read always \
                 tried, fast read tracked per file, and io_uring.",
    claims: &[
        claim(
            "f1: ~73% rand read over mostly cached data (zipf med-size dataset)",
            "the workload",
        ),
        claim("after: f1: lat (usec) : 2=70.63%", "70.6% under 2 µs"),
        claim("after: f3: lat (usec) : 2=64.04%", "64.0% under 2 µs"),
        claim(
            "total: READ: aggrb=174669KB/s -> aggrb=177339KB/s",
            "bandwidth 1.02x",
        ),
        claim(
            "we were able to reduce average response time by 20 to 30%",
            "-20% to -30%",
        ),
    ],
};

impl View for NowaitReport {
    fn section(&self, setup: Option<&Setup>, s: &mut Section) {
        let n = self;
        let workload = format!(
            "16 KiB buffered reads, {} in flight, pool of {} threads; f1 {} MiB mostly cached, \
             f2 and f3 {} MiB; {:.1} s x {} per cell",
            n.depth,
            n.threads,
            n.medium >> 20,
            n.large >> 20,
            n.runtime_s,
            n.repeat
        );
        s.setup = lines(setup, &n.meta, vec![("workload", workload)], &[]);
        s.tables = vec![raw(n), cells(n)];
        s.plots.push(Plot::new(
            "s002-throughput",
            "MB/s per workload and configuration",
            "Bars: median MB/s, whiskers: lowest and highest repetition. Dark dashes: pool only \
             times the seed's bandwidth ratio (1.02x: fast reads left bandwidth as it was).",
            Chart::Bars(bars(n)),
        ));
        for (wi, w) in n.workloads.iter().enumerate() {
            s.plots.push(Plot::new(
                format!("s002-latency-{wi}"),
                format!("Latency percentiles: {}", w.name),
                "Latency of every request from issue to completion, by percentile (log scale); the \
                 rightmost point is the slowest request.",
                Chart::Lines(curves(w.name.as_str(), &w.cells)),
            ));
        }
        s.targets = targets(n);
    }

    /// The seed's results beside vecio's (the peer: io_uring, the kernel's own async reads).
    fn summary(n: Option<&Self>) -> Vec<SummaryRow> {
        let seed = "002";
        let Some(n) = n else {
            let result = "f1 reads under 2 µs: fast read";
            return vec![SummaryRow::missing(seed, result, "%", "70.6")];
        };
        // vecio's own io_uring engine is no peer; no other program runs this workload.
        let row = |result, unit, seed_figure, v, target| {
            SummaryRow::own(seed, result, unit, seed_figure, v, target)
        };
        let mut out = Vec::new();
        for (w, figure) in [(F1Cached, "70.6"), (F3Sequential, "64.0")] {
            let v = lat(n, w, FastTracked).map(|l| l.under_2us * 100.0);
            let file = w.name().split(':').next().unwrap_or("");
            let result = format!("{file} reads under 2 µs: fast read");
            out.push(row(result, "%", figure.into(), num(v, 1), None));
        }
        // fast read's p50 against raw preadv2, the mix's mean latency against the pool, and
        // uncached bandwidth against the pool.
        let raw = n.raw_preadv2.p50_us;
        let p50 = lat(n, F1Cached, FastTracked).map(|l| l.p50_us);
        let (vs_raw, p50) = (div(p50, Some(raw)), p50.unwrap_or(0.0));
        let result = format!("f1 p50: fast read {p50:.1} µs/raw preadv2 {raw:.1} µs (seed: ~2 µs)");
        let target = at_most(vs_raw, 1.3, "x raw");
        out.push(row(result, "x", "-".into(), num(vs_raw, 2), target));
        let mean = |c| lat(n, Mix, c).map(|l| l.mean_us);
        let drop = div(mean(FastTracked), mean(PoolOnly)).map(|x| 1.0 - x);
        let result = "mix mean latency: fast read vs pool".into();
        let (want, v) = (
            ">= 20% lower".to_string(),
            drop.map_or("-".into(), |d| change_num(-d)),
        );
        let target = drop.map(|d| Verdict {
            want,
            met: d >= 0.2,
        });
        out.push(row(result, "% change", "-20..-30".into(), v, target));
        let mb = |c| cell(n, F2Uncached, c).map(|x| x.mb_s.median);
        let v = div(mb(FastTracked), mb(PoolOnly));
        let result = "f2 uncached MB/s: fast read/pool (seed: total)".into();
        let seed_figure = format!("{SEED_BANDWIDTH:.2}");
        let target = at_least(v, 0.97, "x");
        out.push(row(result, "x", seed_figure, num(v, 2), target));
        out
    }

    /// nowait's figures: MB/s and mean latency per workload and configuration.
    fn metrics(&self) -> Vec<Metric> {
        let mut out = Vec::new();
        for w in &self.workloads {
            for c in &w.cells {
                let name = format!("{} / {}", w.name, c.config.name());
                let mb_s = Metric::of(Nowait::KEY, format!("{name} MB/s"), &c.mb_s, true);
                // Mean latency at a fixed depth moves with throughput (Little's law): it
                // shares the cell's spread.
                let mean = Metric {
                    name: format!("{name} mean µs"),
                    value: c.latency.mean_us,
                    higher_is_better: false,
                    ..mb_s.clone()
                };
                out.extend([mb_s, mean]);
            }
        }
        out
    }
}

/// The seed's total bandwidth after / before fast reads (177339 / 174669 KB/s).
const SEED_BANDWIDTH: f64 = 177_339.0 / 174_669.0;

fn raw(n: &NowaitReport) -> DataTable {
    let title = "The floor: raw preadv2 on f1, one call at a time, µs";
    let rows = [("/nowait/raw_preadv2".to_string(), &n.raw_preadv2)];
    DataTable::at(title, rows)
        .col("call", |_, _| "preadv2, 16 KiB")
        .col("p50", |at, l| at.json(l.p50_us, 1, "p50_us"))
        .col("p99", |at, l| at.json(l.p99_us, 1, "p99_us"))
        .col("under 2 µs", |at, l| at.share(l.under_2us, "under_2us"))
        .done()
}

fn cells(n: &NowaitReport) -> DataTable {
    let title = "Per workload and configuration: MB/s (median ± relative std dev); latency in µs \
                 over every request of every repetition";
    let rows = n.workloads.iter().enumerate().flat_map(|(wi, w)| {
        let at = move |ci| format!("/nowait/workloads/{wi}/cells/{ci}");
        w.cells
            .iter()
            .enumerate()
            .map(move |(ci, c)| (at(ci), (w, c)))
    });
    let lat = |at: &At, f: &str, v: f64| at.json(v, 1, &format!("latency/{f}"));
    DataTable::at(title, rows)
        .col("workload", |_, (w, _)| &w.name)
        .col("config", |_, (_, c)| c.config.name())
        .col("MB/s", |at, (_, c)| at.summary(&c.mb_s, 1, "mb_s"))
        .col("mean", |at, (_, c)| lat(at, "mean_us", c.latency.mean_us))
        .col("p50", |at, (_, c)| lat(at, "p50_us", c.latency.p50_us))
        .col("p99", |at, (_, c)| lat(at, "p99_us", c.latency.p99_us))
        .col("p99.9", |at, (_, c)| lat(at, "p999_us", c.latency.p999_us))
        .col("under 2 µs", |at, (_, c)| {
            at.share(c.latency.under_2us, "latency/under_2us")
        })
        .col("fast reads tried", |at, (_, c)| {
            at.json(c.fast_read.attempts as f64, 0, "fast_read/attempts")
        })
        .col("offloaded", |at, (_, c)| {
            at.json(c.fast_read.offloads as f64, 0, "fast_read/offloads")
        })
        .done()
}

fn bars(n: &NowaitReport) -> Bars {
    let groups = n.workloads.iter().map(|w| {
        let pool = cell_of(w, PoolOnly).map(|c| c.mb_s.median);
        let values = Config::ALL.iter().map(|&k| {
            let fast = matches!(k, FastAlways | FastTracked);
            let mark = fast.then(|| pool.map(|p| p * SEED_BANDWIDTH)).flatten();
            Some(BarValue::of(&cell_of(w, k)?.mb_s).marked(mark))
        });
        BarGroup {
            label: w.name.split(':').next().unwrap_or(&w.name).to_string(),
            values: values.collect(),
        }
    });
    let depth = n.depth;
    Bars {
        title: format!("16 KiB buffered reads, {depth} in flight: MB/s (seed 002)"),
        y_label: "MB/s".into(),
        series: Config::ALL.iter().map(|c| c.name().to_string()).collect(),
        groups: groups.collect(),
        mark_label: "pool only x the seed's bandwidth ratio".into(),
    }
}

/// Percentile `q` as "nines": 0.9 is 1, 0.99 is 2; the maximum (1.0) is drawn at 4.5.
fn nines(q: f64) -> f64 {
    if q >= 1.0 {
        4.5
    } else {
        -(1.0 - q).log10()
    }
}

fn curves(name: &str, cells: &[NowaitCell]) -> Lines {
    let lines = cells.iter().filter(|c| !c.latency.percentiles.is_empty());
    let line = |c: &NowaitCell| Line {
        name: c.config.name().to_string(),
        points: c
            .latency
            .percentiles
            .iter()
            .map(|p| (nines(p.q), p.us.max(0.01)))
            .collect(),
    };
    Lines {
        title: name.to_string(),
        x_label: "percentile".into(),
        y_label: "µs".into(),
        lines: lines.map(line).collect(),
        log_y: true,
        x_ticks: XTicks::Nines,
    }
}

fn cell_of(w: &WorkloadFigures, c: Config) -> Option<&NowaitCell> {
    w.cells.iter().find(|x| x.config == c)
}

fn cell(n: &NowaitReport, w: Workload, c: Config) -> Option<&NowaitCell> {
    cell_of(n.workloads.iter().find(|x| x.workload == w)?, c)
}

fn lat(n: &NowaitReport, w: Workload, c: Config) -> Option<&Latency> {
    cell(n, w, c).map(|x| &x.latency)
}

/// The targets, checked against a report.
pub(super) fn targets(r: &NowaitReport) -> Vec<Target> {
    let mut out = Vec::new();
    let pair = |w| cell(r, w, FastTracked).zip(cell(r, w, PoolOnly));
    if let Some((fast, pool)) = pair(F1Cached) {
        let (p50, pool) = (fast.latency.p50_us, pool.latency.p50_us);
        let raw = r.raw_preadv2.p50_us;
        let (vs_raw, vs_pool) = (p50 / raw, p50 / pool);
        let text = format!(
            "cached reads, fast read p50 {p50:.1} µs = {vs_raw:.2}x raw preadv2 ({raw:.1} µs) \
             (want <= 1.3x)"
        );
        out.push(Target::new(text, vs_raw <= 1.3));
        let text = format!(
            "cached reads, fast read p50 = {vs_pool:.2}x pool-only p50 {pool:.1} µs (want <= 0.20x)"
        );
        out.push(Target::new(text, vs_pool <= 0.2));
    }
    if let Some((fast, pool)) = pair(Mix) {
        let (f, p) = (fast.latency.mean_us, pool.latency.mean_us);
        let drop = 1.0 - f / p;
        let text = format!(
            "seed mix, mean latency {f:.0} µs vs pool only {p:.0} µs: {:.0}% lower (want >= 20%)",
            drop * 100.0
        );
        out.push(Target::new(text, drop >= 0.2));
    }
    if let Some((fast, pool)) = pair(F2Uncached) {
        let (f, ratio) = (fast.mb_s.median, fast.mb_s.median / pool.mb_s.median);
        let text =
            format!("uncached only, tracked {f:.1} MB/s = {ratio:.3}x pool only (want >= 0.97x)");
        out.push(Target::new(text, ratio >= 0.97));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nines_axis() {
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
        assert_eq!(nines(1.0), 4.5);
    }
}
