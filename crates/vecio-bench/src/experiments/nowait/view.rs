//! Seed 002, preadv2 and RWF_NOWAIT fast reads: its entry, section, targets, summary rows and
//! figures.

use super::{Cell as NowaitCell, Config, Latency, Nowait, NowaitReport, Workload};
use crate::experiment::chart::{BarGroup, BarValue, Bars, Chart, Line, Lines, XTicks};
use crate::experiment::section::{at_least, at_most, div, Plot, Verdict};
use crate::experiment::seed::claim;
use crate::experiment::table::{change_num, num, Cell, DataTable};
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
        let extra = vec![(
            "workload".to_string(),
            format!(
                "16 KiB buffered reads, {} in flight, pool of {} threads; f1 {} MiB mostly cached, \
                 f2 and f3 {} MiB; {:.1} s x {} per cell",
                n.depth,
                n.threads,
                n.medium >> 20,
                n.large >> 20,
                n.runtime_s,
                n.repeat
            ),
        )];
        s.setup = lines(setup, &n.meta, extra, &[]);
        s.tables.push(raw(n));
        s.tables.push(cells(n));
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
            return vec![SummaryRow::missing(
                seed,
                "f1 reads under 2 µs: fast read",
                "%",
                "70.6",
            )];
        };
        let fast = Config::FastTracked;
        let pct = |v: Option<f64>| num(v.map(|v| v * 100.0), 1);
        let mut out = Vec::new();
        for (w, figure) in [
            (Workload::F1Cached, "70.6"),
            (Workload::F3Sequential, "64.0"),
        ] {
            let v = lat(n, w, fast).map(|l| l.under_2us);
            // vecio's own io_uring engine is no peer; no other program runs this workload.
            out.push(SummaryRow::own(
                seed,
                format!(
                    "{} reads under 2 µs: fast read",
                    w.name().split(':').next().unwrap_or("")
                ),
                "%",
                figure.into(),
                pct(v),
                None,
            ));
        }
        out.extend(latency_rows(n, seed));
        out
    }

    /// nowait's figures: MB/s and mean latency per workload and configuration.
    fn metrics(&self) -> Vec<Metric> {
        let n = self;
        let mut out = Vec::new();
        for w in &n.workloads {
            for c in &w.cells {
                let name = format!("{} / {}", w.name, c.config.name());
                out.push(Metric::of(
                    Nowait::KEY,
                    format!("{name} MB/s"),
                    &c.mb_s,
                    true,
                ));
                // Mean latency at a fixed depth moves with throughput (Little's law): it
                // shares the cell's spread.
                out.push(Metric {
                    name: format!("{name} mean µs"),
                    value: c.latency.mean_us,
                    higher_is_better: false,
                    ..Metric::of(Nowait::KEY, String::new(), &c.mb_s, true)
                });
            }
        }
        out
    }
}

/// The seed's total bandwidth after / before fast reads (177339 / 174669 KB/s).
const SEED_BANDWIDTH: f64 = 177_339.0 / 174_669.0;

fn raw(n: &NowaitReport) -> DataTable {
    let mut t = DataTable::new(
        "The floor: raw preadv2 on f1, one call at a time, µs",
        &["call", "p50", "p99", "under 2 µs"],
    );
    let l = &n.raw_preadv2;
    t.rows.push(vec![
        Cell::text("preadv2, 16 KiB"),
        Cell::json(l.p50_us, 1, "/nowait/raw_preadv2/p50_us".into()),
        Cell::json(l.p99_us, 1, "/nowait/raw_preadv2/p99_us".into()),
        Cell::share(l.under_2us, "/nowait/raw_preadv2/under_2us".into()),
    ]);
    t
}

fn cells(n: &NowaitReport) -> DataTable {
    let mut t = DataTable::new(
        "Per workload and configuration: MB/s (median ± relative std dev); latency in µs over \
         every request of every repetition",
        &[
            "workload",
            "config",
            "MB/s",
            "mean",
            "p50",
            "p99",
            "p99.9",
            "under 2 µs",
            "fast reads tried",
            "offloaded",
        ],
    );
    for (wi, w) in n.workloads.iter().enumerate() {
        for (ci, c) in w.cells.iter().enumerate() {
            let base = format!("/nowait/workloads/{wi}/cells/{ci}");
            let lat = |field: &str, v: f64| Cell::json(v, 1, format!("{base}/latency/{field}"));
            let l = &c.latency;
            t.rows.push(vec![
                Cell::text(&w.name),
                Cell::text(c.config.name()),
                Cell::summary(&c.mb_s, 1, format!("{base}/mb_s")),
                lat("mean_us", l.mean_us),
                lat("p50_us", l.p50_us),
                lat("p99_us", l.p99_us),
                lat("p999_us", l.p999_us),
                Cell::share(l.under_2us, format!("{base}/latency/under_2us")),
                Cell::json(
                    c.fast_read.attempts as f64,
                    0,
                    format!("{base}/fast_read/attempts"),
                ),
                Cell::json(
                    c.fast_read.offloads as f64,
                    0,
                    format!("{base}/fast_read/offloads"),
                ),
            ]);
        }
    }
    t
}

fn bars(n: &NowaitReport) -> Bars {
    let groups = n
        .workloads
        .iter()
        .map(|w| {
            let pool = w
                .cells
                .iter()
                .find(|c| c.config == Config::PoolOnly)
                .map(|c| c.mb_s.median);
            BarGroup {
                label: w.name.split(':').next().unwrap_or(&w.name).to_string(),
                values: Config::ALL
                    .iter()
                    .map(|&k| {
                        let c = w.cells.iter().find(|c| c.config == k)?;
                        let fast = matches!(k, Config::FastAlways | Config::FastTracked);
                        let mark = fast.then(|| pool.map(|p| p * SEED_BANDWIDTH)).flatten();
                        Some(BarValue::of(&c.mb_s).marked(mark))
                    })
                    .collect(),
            }
        })
        .collect();
    Bars {
        title: format!(
            "16 KiB buffered reads, {} in flight: MB/s (seed 002)",
            n.depth
        ),
        y_label: "MB/s".into(),
        series: Config::ALL.iter().map(|c| c.name().to_string()).collect(),
        groups,
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
    let lines = cells
        .iter()
        .filter(|c| !c.latency.percentiles.is_empty())
        .map(|c| Line {
            name: c.config.name().to_string(),
            points: c
                .latency
                .percentiles
                .iter()
                .map(|p| (nines(p.q), p.us.max(0.01)))
                .collect(),
        })
        .collect();
    Lines {
        title: name.to_string(),
        x_label: "percentile".into(),
        y_label: "µs".into(),
        lines,
        log_y: true,
        x_ticks: XTicks::Nines,
    }
}

fn cell(n: &NowaitReport, w: Workload, c: Config) -> Option<&NowaitCell> {
    n.workloads
        .iter()
        .find(|x| x.workload == w)?
        .cells
        .iter()
        .find(|x| x.config == c)
}

fn lat(n: &NowaitReport, w: Workload, c: Config) -> Option<&Latency> {
    cell(n, w, c).map(|x| &x.latency)
}

/// The latency and bandwidth rows: fast read's p50 against raw preadv2, the mix's mean latency
/// against the pool, and uncached bandwidth against the pool.
fn latency_rows(n: &NowaitReport, seed: &'static str) -> Vec<SummaryRow> {
    let (fast, pool) = (Config::FastTracked, Config::PoolOnly);
    let mut out = Vec::new();
    let raw = n.raw_preadv2.p50_us;
    let p50 = |c| lat(n, Workload::F1Cached, c).map(|l| l.p50_us);
    let vs_raw = div(p50(fast), Some(raw));
    out.push(SummaryRow::own(
        seed,
        format!(
            "f1 p50: fast read {:.1} µs/raw preadv2 {raw:.1} µs (seed: ~2 µs)",
            p50(fast).unwrap_or(0.0)
        ),
        "x",
        "-".into(),
        num(vs_raw, 2),
        at_most(vs_raw, 1.3, "x raw"),
    ));
    let mean = |c| lat(n, Workload::Mix, c).map(|l| l.mean_us);
    let drop = |c| div(mean(c), mean(pool)).map(|x| 1.0 - x);
    out.push(SummaryRow::own(
        seed,
        "mix mean latency: fast read vs pool".into(),
        "% change",
        "-20..-30".into(),
        drop(fast).map_or("-".into(), |d| change_num(-d)),
        drop(fast).map(|d| Verdict {
            want: ">= 20% lower".into(),
            met: d >= 0.2,
        }),
    ));
    let mb = |c| cell(n, Workload::F2Uncached, c).map(|x| x.mb_s.median);
    let v = div(mb(fast), mb(pool));
    out.push(SummaryRow::own(
        seed,
        "f2 uncached MB/s: fast read/pool (seed: total)".into(),
        "x",
        format!("{SEED_BANDWIDTH:.2}"),
        num(v, 2),
        at_least(v, 0.97, "x"),
    ));
    out
}

/// The targets, checked against a report.
pub(super) fn targets(r: &NowaitReport) -> Vec<Target> {
    let mut out = Vec::new();
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::F1Cached, Config::FastTracked),
        cell(r, Workload::F1Cached, Config::PoolOnly),
    ) {
        let raw = r.raw_preadv2.p50_us;
        let vs_raw = fast.latency.p50_us / raw;
        out.push(Target {
            text: format!("cached reads, fast read p50 {:.1} µs = {vs_raw:.2}x raw preadv2 ({raw:.1} µs) (want <= 1.3x)", fast.latency.p50_us),
            met: vs_raw <= 1.3,
        });
        let vs_pool = fast.latency.p50_us / pool.latency.p50_us;
        out.push(Target {
            text: format!("cached reads, fast read p50 = {vs_pool:.2}x pool-only p50 {:.1} µs (want <= 0.20x)", pool.latency.p50_us),
            met: vs_pool <= 0.2,
        });
    }
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::Mix, Config::FastTracked),
        cell(r, Workload::Mix, Config::PoolOnly),
    ) {
        let drop = 1.0 - fast.latency.mean_us / pool.latency.mean_us;
        out.push(Target {
            text: format!(
                "seed mix, mean latency {:.0} µs vs pool only {:.0} µs: {:.0}% lower (want >= 20%)",
                fast.latency.mean_us,
                pool.latency.mean_us,
                drop * 100.0
            ),
            met: drop >= 0.2,
        });
    }
    if let (Some(fast), Some(pool)) = (
        cell(r, Workload::F2Uncached, Config::FastTracked),
        cell(r, Workload::F2Uncached, Config::PoolOnly),
    ) {
        let ratio = fast.mb_s.median / pool.mb_s.median;
        out.push(Target {
            text: format!(
                "uncached only, tracked {:.1} MB/s = {ratio:.3}x pool only (want >= 0.97x)",
                fast.mb_s.median
            ),
            met: ratio >= 0.97,
        });
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
