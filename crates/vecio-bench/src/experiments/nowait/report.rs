//! The nowait experiment's report: its tables as text and its targets checked.

use super::*;

/// The report as text.
pub fn render(r: &NowaitReport) -> String {
    let m = &r.meta;
    let mut out = format!(
        "preadv2 + RWF_NOWAIT fast reads (seed 002): 16 KiB buffered reads, {} in flight, pool of {} threads\n\
         files on {} ({}); f1 {} MiB mostly cached, f2/f3 {} MiB; {:.1} s x {} per cell; {} UTC\n\
         latency in µs from issue to completion; MB/s = 10^6 bytes/s (median, ± relative std dev)\n\
         raw preadv2 on f1, one at a time: p50 {:.1} µs, p99 {:.1} µs\n",
        r.depth, r.threads, m.fs, m.device, r.medium >> 20, r.large >> 20, r.runtime_s, r.repeat, m.date_utc,
        r.raw_preadv2.p50_us, r.raw_preadv2.p99_us
    );
    for w in &r.workloads {
        out += &format!("\n{}\n", w.name);
        out += &workload_table(w);
    }
    out += "\nThe seed (fio, 16 KiB reads, ext4 on raid0): f1 70.6% of reads under 2 µs with fast read (none under 50 ms before);\n\
            f3 64% under 2 µs; total bandwidth unchanged (174.7 -> 177.3 MB/s); real workload mean response -20 to -30%.\n";
    out += "\nTargets\n";
    for t in targets(r) {
        out += &format!("  [{}] {}\n", if t.met { " ok " } else { "MISS" }, t.text);
    }
    out
}

/// One workload's table: MB/s, latency percentiles and fast-read counts per configuration.
fn workload_table(w: &WorkloadFigures) -> String {
    let mut t = Table::new([
        "config",
        "MB/s",
        "mean",
        "p50",
        "p90",
        "p99",
        "p99.9",
        "max",
        "<2µs",
        "<10µs",
        "tried",
        "hit",
        "offloaded",
    ]);
    for c in &w.cells {
        let l = &c.latency;
        let f = &c.fast_read;
        let hit = if f.attempts > 0 {
            format!(
                "{:.0}%",
                100.0 * (f.hits as f64 + f.partials as f64 * 0.5) / f.attempts as f64
            )
        } else {
            "-".into()
        };
        t.row([
            c.config.name().to_string(),
            if c.mb_s.n > 1 {
                format!(
                    "{:.1} ±{:.0}%",
                    c.mb_s.median,
                    c.mb_s.relative_spread() * 100.0
                )
            } else {
                format!("{:.1}", c.mb_s.median)
            },
            format!("{:.1}", l.mean_us),
            format!("{:.1}", l.p50_us),
            format!("{:.1}", l.p90_us),
            format!("{:.1}", l.p99_us),
            format!("{:.1}", l.p999_us),
            format!("{:.0}", l.max_us),
            format!("{:.0}%", l.under_2us * 100.0),
            format!("{:.0}%", l.under_10us * 100.0),
            f.attempts.to_string(),
            hit,
            f.offloads.to_string(),
        ]);
    }
    t.to_string()
}

use crate::harness::target::Target;

fn cell(r: &NowaitReport, w: Workload, c: Config) -> Option<&Cell> {
    r.workloads
        .iter()
        .find(|x| x.workload == w)?
        .cells
        .iter()
        .find(|x| x.config == c)
}

/// The targets, checked against a report.
pub fn targets(r: &NowaitReport) -> Vec<Target> {
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
