//! What an experiment gives the report: its section, its summary rows and the figures
//! `vecio bench compare` compares.

use serde::{Deserialize, Serialize};

use super::chart::Chart;
use super::seed::Seed;
use super::table::DataTable;
use crate::harness::stats::Summary;

/// A target of an experiment (what the seed's claim asks of vecio) and whether a run met it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// What the target asks and what was measured.
    pub text: String,
    /// Whether it was met.
    pub met: bool,
}

impl Target {
    /// A target: `text`, met or not.
    pub fn new(text: String, met: bool) -> Target {
        Target { text, met }
    }
}

/// The note of a section whose ratios pair the repetitions.
pub const PAIRED: &str =
    "Ratios are medians of per-repetition ratios (both sides measured back to back).";

/// A plot of a section.
#[derive(Debug, Clone, PartialEq)]
pub struct Plot {
    /// Its id, unique in the report (also its file name in `plots/`).
    pub id: String,
    /// Title.
    pub title: String,
    /// What to read in it.
    pub caption: String,
    /// What it draws.
    pub chart: Chart,
    /// The SVG document, once the report has drawn it.
    pub svg: String,
}

impl Plot {
    /// A plot not drawn yet.
    pub fn new(
        id: impl Into<String>,
        title: impl Into<String>,
        caption: impl Into<String>,
        chart: Chart,
    ) -> Plot {
        Plot {
            id: id.into(),
            title: title.into(),
            caption: caption.into(),
            chart,
            svg: String::new(),
        }
    }
}

/// One section of the report: one experiment and the seed document it re-measures.
#[derive(Debug, Clone)]
pub struct Section {
    /// The experiment's key.
    pub key: &'static str,
    /// The seed it reproduces.
    pub seed: &'static Seed,
    /// Its anchor in the page (`seed-002`; `seed-002-tokio` for a second section of a seed).
    pub anchor: String,
    /// `Some(why)` when nothing was measured for it.
    pub not_measured: Option<String>,
    /// The set-up here, as `(what, value)` lines.
    pub setup: Vec<(String, String)>,
    /// Measured tables.
    pub tables: Vec<DataTable>,
    /// Plots.
    pub plots: Vec<Plot>,
    /// The experiment's targets and whether they were met.
    pub targets: Vec<Target>,
    /// Notes under the tables.
    pub notes: Vec<String>,
    /// Its rows of the one-screen summary.
    pub summary: Vec<SummaryRow>,
}

impl Section {
    /// An empty measured section of experiment `key`.
    pub fn new(key: &'static str, seed: &'static Seed) -> Section {
        Section {
            key,
            seed,
            anchor: format!("seed-{}", seed.id),
            not_measured: None,
            setup: Vec::new(),
            tables: Vec::new(),
            plots: Vec::new(),
            targets: Vec::new(),
            notes: Vec::new(),
            summary: Vec::new(),
        }
    }

    /// A section saying nothing was measured, and why.
    pub fn not_measured(key: &'static str, seed: &'static Seed, why: impl Into<String>) -> Section {
        Section {
            not_measured: Some(why.into()),
            ..Section::new(key, seed)
        }
    }

    /// Everything the section says, one line per set-up line, table row, note and target: for
    /// tests.
    #[cfg(test)]
    pub(crate) fn words(&self) -> String {
        let mut out: Vec<String> = self
            .setup
            .iter()
            .map(|(k, v)| format!("{k}: {v}"))
            .collect();
        for t in &self.tables {
            out.push(t.title.clone());
            out.extend(
                t.rows
                    .iter()
                    .map(|r| r.iter().map(|c| c.shown()).collect::<Vec<_>>().join(" | ")),
            );
        }
        out.extend(self.notes.iter().cloned());
        out.extend(self.targets.iter().map(|t| t.text.clone()));
        out.join("\n")
    }
}

/// A target of a summary row and whether it was met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What is wanted, e.g. `>= 4x`.
    pub want: String,
    /// Whether this run met it.
    pub met: bool,
}

/// `>= x` (met when the value is at least `x`).
pub fn at_least(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!(">= {x}{unit}"),
        met: v >= x,
    })
}

/// `<= x` (met when the value is at most `x`).
pub fn at_most(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!("<= {x}{unit}"),
        met: v <= x,
    })
}

/// `a / b` when both exist and `b` is not zero.
pub fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// One result of one seed in the summary.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The seed, `000` to `004`.
    pub seed: &'static str,
    /// What is compared.
    pub result: String,
    /// The unit of the seed's, vecio's and the peer's figures (`x`: the ratio `result` names):
    /// the summary has a table per unit, so every column holds one unit, named in its header.
    pub unit: &'static str,
    /// The seed's figure, in `unit`.
    pub seed_figure: String,
    /// vecio's figure in `unit` (or why there is none).
    pub vecio: String,
    /// The best peer's figure in `unit` and who it is (`FIGURE NAME`): another program on the
    /// same file, never one of vecio's own engines nor a ratio; `-` when none measures this.
    pub peer: String,
    /// vecio over the peer, where both exist.
    pub ratio: Option<f64>,
    /// The target, where there is one.
    pub target: Option<Verdict>,
}

impl SummaryRow {
    /// A row for a result with no vecio figure: the experiment did not run (the reason is
    /// listed under the summary).
    pub fn missing(seed: &'static str, result: &str, unit: &'static str, fig: &str) -> SummaryRow {
        let vecio = "not measured".to_string();
        SummaryRow::own(seed, result.into(), unit, fig.into(), vecio, None)
    }

    /// A row of vecio's own figure in `unit` that no other program measures (a ratio of vecio's
    /// own paths, a share, a change): its peer cell is `-`.
    pub fn own(
        seed: &'static str,
        result: String,
        unit: &'static str,
        seed_figure: String,
        vecio: String,
        target: Option<Verdict>,
    ) -> SummaryRow {
        SummaryRow {
            seed,
            result,
            unit,
            seed_figure,
            vecio,
            peer: "-".into(),
            ratio: None,
            target,
        }
    }

    /// The target column: `ok`, `MISS` or `-`, with what is wanted.
    pub fn mark(&self) -> String {
        match &self.target {
            Some(v) if v.met => format!("[ ok ] {}", v.want),
            Some(v) => format!("[MISS] {}", v.want),
            None => "-".into(),
        }
    }

    /// vecio's figure with its unit, for a line that stands alone (the verdict).
    pub fn vecio_with_unit(&self) -> String {
        with_unit(&self.vecio, self.unit)
    }

    /// The peer's figure with its unit and the peer's name, for a line that stands alone.
    pub fn peer_with_unit(&self) -> String {
        match self.peer.split_once(' ') {
            Some((figure, name)) if figure.parse::<f64>().is_ok() => {
                format!("{} {name}", with_unit(figure, self.unit))
            }
            _ => self.peer.clone(),
        }
    }
}

/// `figure unit` when `figure` is a number, `figure` alone otherwise (`-`, `not measured`).
fn with_unit(figure: &str, unit: &str) -> String {
    let numeric = figure
        .trim_start_matches(['+', '-', '~'])
        .parse::<f64>()
        .is_ok();
    match unit {
        _ if !numeric => figure.to_string(),
        "x" | "%" => format!("{figure}{unit}"),
        _ => format!("{figure} {unit}"),
    }
}

/// One figure of a run, as `vecio bench compare` sees it.
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

impl Metric {
    /// The median of `s` and its spread, where more is better when `higher_is_better`.
    pub fn of(
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
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn verdicts_and_marks() {
        assert_eq!(at_least(Some(4.2), 4.0, "x").map(|v| v.met), Some(true));
        assert_eq!(at_most(Some(1.2), 1.05, "x").map(|v| v.met), Some(false));
        assert_eq!(at_least(None, 1.0, ""), None);
        assert_eq!(div(Some(1.0), Some(0.0)), None);
        let mut row = SummaryRow::missing("004", "writev", "x", "4.5");
        assert_eq!(row.mark(), "-");
        row.target = at_least(Some(1.0), 2.0, "x");
        assert_eq!(row.mark(), "[MISS] >= 2x");
        row.vecio = "2.5".into();
        row.peer = "1310 native".into();
        assert_eq!(
            (row.vecio_with_unit(), row.peer_with_unit()),
            ("2.5x".into(), "1310x native".into())
        );
    }
}
