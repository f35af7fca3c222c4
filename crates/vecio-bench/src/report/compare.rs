//! `vecio bench compare A.json B.json`: every figure two runs share, B over A, with changes
//! flagged where they exceed the run-to-run noise each file measured.
//!
//! Each figure's noise is its relative spread (standard deviation over mean of the
//! repetitions) in its own file. A figure measured once borrows the median spread of its
//! experiment's repeated figures in that file; with none, the change is not judged. A change is
//! flagged when `|B/A - 1|` exceeds twice the combined spread `sqrt(sa² + sb²)` (and 1%).
//! Instruction counts (callgrind) are counted once; their noise is [`INSTRUCTION_SPREAD`].

use std::path::Path;

use anyhow::{bail, Context, Result};
use serde_json::Value;

use crate::experiments::callcost::CallcostReport;
use crate::experiments::nowait::NowaitReport;
use crate::experiments::results::AllResults;
use crate::experiments::writev::WritevReport;
use crate::harness::stats::{median, Summary};
use vecio_host::table::Table;

/// The relative spread given to callgrind's instruction counts: single-threaded variants repeat
/// exactly, the thread-pool ones vary by about 1% between runs.
pub const INSTRUCTION_SPREAD: f64 = 0.005;

/// One figure of a run.
#[derive(Debug, Clone, PartialEq)]
pub struct Metric {
    /// Its experiment (`writev`, `loop`, ...).
    pub experiment: &'static str,
    /// Its name, the same in every run: `random writev / uring MB/s`.
    pub name: String,
    /// The figure (the median of the repetitions).
    pub value: f64,
    /// Relative spread of the repetitions; `None` when measured once.
    pub spread: Option<f64>,
    /// Whether more is better (throughput) or worse (latency, cost).
    pub higher_is_better: bool,
}

fn from_summary(
    experiment: &'static str,
    name: String,
    s: &Summary,
    higher_is_better: bool,
) -> Metric {
    Metric {
        experiment,
        name,
        value: s.median,
        spread: (s.n > 1).then(|| s.relative_spread()),
        higher_is_better,
    }
}

/// Every figure of `r` that compare looks at.
pub fn metrics(r: &AllResults) -> Vec<Metric> {
    let mut out = Vec::new();
    if let Some(w) = &r.writev {
        writev_metrics(w, &mut out);
    }
    if let Some(n) = &r.nowait {
        nowait_metrics(n, &mut out);
    }
    if let Some(c) = &r.callcost {
        callcost_metrics(c, &mut out);
    }
    if let Some(l) = &r.loop_dev {
        for c in &l.cells {
            let unit = if c.job.in_iops() { "IOPS" } else { "MB/s" };
            let name = format!("{} / {} {unit}", c.job.name(), c.name);
            out.push(from_summary("loop", name, c.figure(), true));
        }
        for c in &l.tls.cells {
            let unit = if c.job.in_iops() { "IOPS" } else { "MB/s" };
            let how = if c.tls { "TLS" } else { "plain" };
            let name = format!("{} / {} {how} {unit}", c.job.name(), c.name);
            out.push(from_summary("loop", name, c.figure(), true));
        }
    }
    if let Some(f) = &r.fuse {
        for c in &f.cells {
            // A failed cell (EINVAL from a libfuse example) has no figure to compare.
            if let Some(s) = &c.mb_s {
                let how = if c.direct { "O_DIRECT" } else { "buffered" };
                let name = format!("{} / {} {how} MB/s", c.subject, c.op.name());
                out.push(from_summary("fuse", name, s, true));
            }
        }
    }
    out
}

/// writev's figures: MB/s per row and engine, and fio's.
fn writev_metrics(w: &WritevReport, out: &mut Vec<Metric>) {
    for row in &w.rows {
        for e in &row.engines {
            let name = format!("{} / {} MB/s", row.name, e.engine);
            out.push(from_summary("writev", name, &e.mb_s, true));
        }
        for (job, f) in [("fio 4k", &row.fio_4k), ("fio 32k", &row.fio_32k)] {
            if let Some(f) = f {
                let name = format!("{} / {job} MB/s", row.name);
                out.push(from_summary("writev", name, &f.mb_s, true));
            }
        }
    }
}

/// nowait's figures: MB/s and mean latency per workload and configuration.
fn nowait_metrics(n: &NowaitReport, out: &mut Vec<Metric>) {
    for w in &n.workloads {
        for c in &w.cells {
            let name = format!("{} / {}", w.name, c.config.name());
            out.push(from_summary(
                "nowait",
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
                ..from_summary("nowait", String::new(), &c.mb_s, true)
            });
        }
    }
}

/// callcost's figures: ns per call and, when counted, instructions per variant.
fn callcost_metrics(c: &CallcostReport, out: &mut Vec<Metric>) {
    for v in &c.variants {
        out.push(from_summary(
            "callcost",
            format!("{} ns", v.name),
            &v.ns,
            false,
        ));
        if let Some(i) = v.instructions {
            out.push(Metric {
                experiment: "callcost",
                name: format!("{} instructions", v.name),
                value: i,
                spread: Some(INSTRUCTION_SPREAD),
                higher_is_better: false,
            });
        }
    }
}

/// Reads a results file: `bench all`'s (or a report's `results.json`), or one experiment's
/// `--json` output.
pub fn load(path: &Path) -> Result<AllResults> {
    let text =
        std::fs::read_to_string(path).with_context(|| format!("reading {}", path.display()))?;
    let v: Value =
        serde_json::from_str(&text).with_context(|| format!("parsing {}", path.display()))?;
    let has = |k: &str| v.get(k).is_some();
    let parse = || -> Result<AllResults> {
        Ok(if has("rows") && has("meta") {
            AllResults {
                writev: Some(serde_json::from_value(v.clone())?),
                ..AllResults::default()
            }
        } else if has("workloads") {
            AllResults {
                nowait: Some(serde_json::from_value(v.clone())?),
                ..AllResults::default()
            }
        } else if has("variants") {
            AllResults {
                callcost: Some(serde_json::from_value(v.clone())?),
                ..AllResults::default()
            }
        } else if has("cells") && has("servers") {
            AllResults {
                loop_dev: Some(serde_json::from_value(v.clone())?),
                ..AllResults::default()
            }
        } else if has("cells") && has("subjects") && has("max_pages_limit") {
            AllResults {
                fuse: Some(serde_json::from_value(v.clone())?),
                ..AllResults::default()
            }
        } else {
            serde_json::from_value(v.clone())?
        })
    };
    let r = parse().with_context(|| format!("{}: not a vecio results file", path.display()))?;
    if metrics(&r).is_empty() {
        bail!("{}: no figures vecio can compare", path.display());
    }
    Ok(r)
}

/// How a figure changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Within the noise.
    Same,
    /// Beyond the noise, for the better.
    Better,
    /// Beyond the noise, for the worse.
    Worse,
    /// No spread known in either file: not judged.
    Unknown,
}

/// One figure in both runs.
#[derive(Debug, Clone, PartialEq)]
pub struct Change {
    /// The figure in A.
    pub a: Metric,
    /// Its value in B.
    pub b: f64,
    /// B / A.
    pub ratio: f64,
    /// The relative change beyond which it is flagged, when known.
    pub noise: Option<f64>,
    /// The verdict.
    pub verdict: Verdict,
}

/// Median spread of each experiment's repeated figures.
fn fallback(ms: &[Metric], experiment: &str) -> Option<f64> {
    let s: Vec<f64> = ms
        .iter()
        .filter(|m| m.experiment == experiment)
        .filter_map(|m| m.spread)
        .collect();
    median(&s)
}

/// Compares every figure A and B share, in A's order; also returns the names found in only one.
pub fn compare(a: &[Metric], b: &[Metric]) -> (Vec<Change>, Vec<String>) {
    let mut out = Vec::new();
    for ma in a {
        let Some(mb) = b
            .iter()
            .find(|m| m.experiment == ma.experiment && m.name == ma.name)
        else {
            continue;
        };
        let sa = ma.spread.or_else(|| fallback(a, ma.experiment));
        let sb = mb.spread.or_else(|| fallback(b, mb.experiment));
        let ratio = if ma.value != 0.0 {
            mb.value / ma.value
        } else {
            f64::NAN
        };
        let noise = match (sa, sb) {
            (Some(x), Some(y)) => Some((2.0 * (x * x + y * y).sqrt()).max(0.01)),
            (Some(x), None) | (None, Some(x)) => Some((2.0 * x * 2f64.sqrt()).max(0.01)),
            (None, None) => None,
        };
        let verdict = match noise {
            _ if !ratio.is_finite() => Verdict::Unknown,
            None => Verdict::Unknown,
            Some(n) if (ratio - 1.0).abs() <= n => Verdict::Same,
            Some(_) if (ratio > 1.0) == ma.higher_is_better => Verdict::Better,
            Some(_) => Verdict::Worse,
        };
        out.push(Change {
            a: ma.clone(),
            b: mb.value,
            ratio,
            noise,
            verdict,
        });
    }
    let key = |m: &Metric| format!("{}: {}", m.experiment, m.name);
    let only: Vec<String> = a
        .iter()
        .filter(|m| !b.iter().any(|x| key(x) == key(m)))
        .chain(b.iter().filter(|m| !a.iter().any(|x| key(x) == key(m))))
        .map(key)
        .collect();
    (out, only)
}

/// The comparison as text.
pub fn render(a: &str, b: &str, changes: &[Change], only: &[String]) -> String {
    let mut out = format!(
        "A = {a}\nB = {b}\nB/A per figure; noise = 2 x the combined relative spread of the \
         repetitions (at least 1%); flagged: beyond it\n\n"
    );
    let mut t = Table::new(["experiment", "figure", "A", "B", "B/A", "noise", "change"]);
    for c in changes {
        t.row([
            c.a.experiment.to_string(),
            c.a.name.clone(),
            format!("{:.1}", c.a.value),
            format!("{:.1}", c.b),
            format!("{:.3}", c.ratio),
            c.noise
                .map_or("?".into(), |n| format!("±{:.0}%", n * 100.0)),
            match c.verdict {
                Verdict::Same => "".to_string(),
                Verdict::Better => "<< better".to_string(),
                Verdict::Worse => ">> WORSE".to_string(),
                Verdict::Unknown => "(measured once: not judged)".to_string(),
            },
        ]);
    }
    out += &t.to_string();
    let count = |v: Verdict| changes.iter().filter(|c| c.verdict == v).count();
    out += &format!(
        "\n{} figures: {} within the noise, {} better, {} worse, {} not judged\n",
        changes.len(),
        count(Verdict::Same),
        count(Verdict::Better),
        count(Verdict::Worse),
        count(Verdict::Unknown)
    );
    if !only.is_empty() {
        out += &format!("in one file only: {}\n", only.join("; "));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn m(name: &str, value: f64, spread: Option<f64>) -> Metric {
        Metric {
            experiment: "writev",
            name: name.into(),
            value,
            spread,
            higher_is_better: true,
        }
    }

    #[test]
    fn flags_only_changes_beyond_the_noise() {
        let a = [
            m("x", 100.0, Some(0.05)),
            m("y", 100.0, Some(0.01)),
            m("z", 1.0, None),
        ];
        let b = [
            m("x", 110.0, Some(0.05)),
            m("y", 90.0, Some(0.01)),
            m("w", 1.0, None),
        ];
        let (c, only) = compare(&a, &b);
        assert_eq!(c.len(), 2);
        // x: 10% up, noise 2 * sqrt(2) * 5% = 14%: within.
        assert_eq!(c[0].verdict, Verdict::Same);
        assert!((c[0].noise.unwrap_or(0.0) - 0.1414).abs() < 1e-3);
        // y: 10% down, noise 2.8%: worse.
        assert_eq!(c[1].verdict, Verdict::Worse);
        assert_eq!(only, ["writev: z", "writev: w"]);
        let text = render("a.json", "b.json", &c, &only);
        assert!(
            text.contains(">> WORSE") && text.contains("1 worse"),
            "{text}"
        );
    }

    #[test]
    fn single_measurements_borrow_their_experiments_spread() {
        let a = [m("x", 100.0, None), m("y", 100.0, Some(0.02))];
        let b = [m("x", 80.0, None), m("y", 100.0, Some(0.02))];
        let (c, _) = compare(&a, &b);
        assert_eq!(c[0].verdict, Verdict::Worse);
        let (c, _) = compare(&[m("x", 100.0, None)], &[m("x", 50.0, None)]);
        assert_eq!(c[0].verdict, Verdict::Unknown);
    }
}
