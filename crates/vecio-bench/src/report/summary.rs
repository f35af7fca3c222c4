//! The one-screen summary: for each seed result, the seed's figure, vecio's, the best peer's,
//! vecio over the peer, and whether vecio met its target. Printed at the end of
//! `vecio bench all` and at the top of the report.

use super::{s000_writev, s001_loop, s002_nowait, s003_callcost, s004_fuse};
use crate::results::AllResults;
use crate::table::Table;

/// A target and whether it was met.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verdict {
    /// What is wanted, e.g. `>= 4x`.
    pub want: String,
    /// Whether this run met it.
    pub met: bool,
}

/// One result of one seed.
#[derive(Debug, Clone, PartialEq)]
pub struct SummaryRow {
    /// The seed, `000` to `004`.
    pub seed: &'static str,
    /// What is compared.
    pub result: String,
    /// The seed's figure.
    pub seed_figure: String,
    /// vecio's figure (or why there is none).
    pub vecio: String,
    /// The best peer's figure and who it is.
    pub peer: String,
    /// vecio over the peer, where both exist.
    pub ratio: Option<f64>,
    /// The target, where there is one.
    pub target: Option<Verdict>,
}

impl SummaryRow {
    /// A row for a result with no vecio figure: the experiment did not run (the reason is
    /// listed under the summary).
    pub fn missing(seed: &'static str, result: &str, seed_figure: &str) -> SummaryRow {
        SummaryRow {
            seed,
            result: result.to_string(),
            seed_figure: seed_figure.to_string(),
            vecio: "not measured".into(),
            peer: "-".into(),
            ratio: None,
            target: None,
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
}

/// `>= x` (met when the value is at least `x`).
pub(super) fn at_least(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!(">= {x}{unit}"),
        met: v >= x,
    })
}

/// `<= x` (met when the value is at most `x`).
pub(super) fn at_most(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!("<= {x}{unit}"),
        met: v <= x,
    })
}

/// `a / b` when both exist and `b` is not zero.
pub(super) fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Every seed's rows, in seed order. A peer that is one of vecio's own engines (its io_uring
/// or preadv2 path) is no peer: such a cell shows `-` and no ratio.
pub fn summary_rows(r: &AllResults) -> Vec<SummaryRow> {
    let mut rows = s000_writev::summary(r);
    rows.extend(s001_loop::summary(r));
    rows.extend(s002_nowait::summary(r));
    rows.extend(s003_callcost::summary(r));
    rows.extend(s004_fuse::summary(r));
    for row in &mut rows {
        let failed_peers = row.peer.starts_with("none works");
        if row.peer != "-" && !failed_peers && !super::verdict::is_real_peer(&row.peer) {
            row.peer = "-".into();
            row.ratio = None;
        }
    }
    rows
}

/// The verdict lines and the target count as text for the terminal; `rows_marked` is
/// (met, missed) over the summary rows printed after it.
pub fn render_verdict(
    sections: &[super::Section],
    rows: &[SummaryRow],
    rows_marked: (usize, usize),
) -> String {
    let (met, total) = super::verdict::target_count(sections);
    let mut out = format!(
        "Verdict: {met} of {total} targets met (in the rows below: {} met, {} missed)\n",
        rows_marked.0, rows_marked.1
    );
    let mut t = Table::new([
        "seed",
        "document",
        "vecio here",
        "best other program",
        "targets",
    ]);
    for v in super::verdict::verdicts(sections, rows) {
        let targets = match &v.not_measured {
            Some(_) => "not measured".to_string(),
            None => format!("{:<4} {} of {}", v.mark(), v.met, v.total),
        };
        let date = super::verdict::provenance(v.seed).map_or("", |p| p.date);
        let experiment = sections
            .iter()
            .find(|s| s.seed.id == v.seed)
            .map_or("", |s| s.seed.experiment);
        t.row([
            v.seed.to_string(),
            format!("{experiment} ({})", date.split(' ').next().unwrap_or(date)),
            format!("{}: {}", v.result, v.vecio),
            v.peer.clone(),
            targets,
        ]);
    }
    out += &t.to_string();
    out + "\n"
}

/// The summary as text for the terminal.
pub fn render(r: &AllResults, rows: &[SummaryRow]) -> String {
    let mut out = String::from("\nSummary: each seed's result beside vecio's and the best peer's");
    if let Some(s) = &r.setup {
        let fs = s.scratch.as_ref().and_then(|i| i.fs.clone());
        out += &format!(
            " ({} UTC, kernel {}, {} CPUs, {})",
            s.date_utc,
            s.kernel.as_deref().unwrap_or("?"),
            s.cpus,
            fs.unwrap_or_else(|| "?".into())
        );
    }
    if r.quick {
        out += "\nquick run: short measurements on small files, a smoke test rather than a result";
    }
    out += "\n\n";
    let missed = rows
        .iter()
        .filter(|x| x.target.as_ref().is_some_and(|v| !v.met))
        .count();
    let met = rows
        .iter()
        .filter(|x| x.target.as_ref().is_some_and(|v| v.met))
        .count();
    match super::sections(r) {
        Ok(sections) => {
            out += &render_verdict(&sections, rows, (met, missed));
        }
        Err(_) => out += &format!("targets: {met} met, {missed} missed (MISS)\n"),
    }
    let mut t = Table::new([
        "seed",
        "result",
        "seed",
        "vecio",
        "best peer",
        "vecio/peer",
        "target",
    ]);
    for row in rows {
        t.row([
            row.seed.to_string(),
            row.result.clone(),
            row.seed_figure.clone(),
            row.vecio.clone(),
            row.peer.clone(),
            super::fmt::ratio(row.ratio),
            row.mark(),
        ]);
    }
    out += &t.to_string();
    if !r.not_measured.is_empty() {
        let names: Vec<String> = r
            .not_measured
            .iter()
            .map(|n| format!("{} ({})", n.experiment, n.reason))
            .collect();
        out += &format!("\nnot measured: {}", names.join("; "));
    }
    out.push('\n');
    out
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
        let mut row = SummaryRow::missing("004", "writev", "4.5x");
        assert_eq!(row.mark(), "-");
        row.target = at_least(Some(1.0), 2.0, "x");
        assert_eq!(row.mark(), "[MISS] >= 2x");
        let text = render(&AllResults::default(), &[row]);
        assert!(text.contains("not measured") && text.contains("0 met, 1 missed"));
    }
}
