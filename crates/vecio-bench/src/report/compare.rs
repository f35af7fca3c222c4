//! `vecio bench compare A.json B.json`: every figure two runs share, B over A, changes flagged
//! beyond the noise each file measured (the rule: docs/report.md, "vecio bench compare").

use std::path::Path;

use anyhow::{bail, Result};
use vecio_host::table::Table;

use crate::experiment::{Entry, Metric};
use crate::harness::stats::median;
use crate::results::AllResults;

/// Every figure of `r` that compare looks at, experiment by experiment.
pub fn metrics(r: &AllResults, experiments: &[&dyn Entry]) -> Vec<Metric> {
    experiments
        .iter()
        .filter_map(|e| Some(e.metrics(r.report(e.key())?)))
        .flatten()
        .collect()
}

/// Reads a results file ([`AllResults::read`]) that has figures compare can use.
pub fn load(path: &Path, experiments: &[&dyn Entry]) -> Result<AllResults> {
    let (r, _) = AllResults::read(path, experiments)?;
    if metrics(&r, experiments).is_empty() {
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
            figure(c.a.value),
            figure(c.b),
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

/// A figure with three significant digits (one decimal at least): seconds of 0.341 and 0.300
/// stay apart, MB/s of 1421.3 keep their decimal.
fn figure(v: f64) -> String {
    let magnitude = if v == 0.0 {
        0
    } else {
        v.abs().log10().floor() as i32
    };
    let prec = (2 - magnitude).clamp(1, 6) as usize;
    format!("{v:.prec$}")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn figures_keep_three_significant_digits() {
        let shown: Vec<String> = [0.341, 0.3, 4.415, 12.0, 1421.34, 0.0, 0.00012]
            .map(figure)
            .into();
        assert_eq!(
            shown,
            ["0.341", "0.300", "4.42", "12.0", "1421.3", "0.00", "0.000120"]
        );
    }

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
