//! The one-screen summary: for each seed result, the seed's figure, vecio's, the best peer's,
//! vecio over the peer, and whether vecio met its target. Printed at the end of
//! `vecio bench all` and at the top of the report.

use crate::experiments::results::AllResults;
use crate::experiments::{callcost, fuse, loopdev, nowait, writev};
use vecio_host::table::Table;

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
    /// The unit of the seed's, vecio's and the peer's figures (`x` for a ratio named in
    /// `result`, `MB/s`, `IOPS`, `%`, `% change`, `µs`): the summary groups rows by it, so
    /// every column of a table holds one unit, named in its header.
    pub unit: &'static str,
    /// The seed's figure, in `unit`.
    pub seed_figure: String,
    /// vecio's figure in `unit` (or why there is none).
    pub vecio: String,
    /// The best peer's figure in `unit` and who it is (`FIGURE NAME`): another program
    /// measured on the same file, never one of vecio's own engines, never a ratio; `-` when
    /// no other program measures this.
    pub peer: String,
    /// vecio over the peer, where both exist.
    pub ratio: Option<f64>,
    /// The target, where there is one.
    pub target: Option<Verdict>,
}

impl SummaryRow {
    /// A row for a result with no vecio figure: the experiment did not run (the reason is
    /// listed under the summary).
    pub fn missing(
        seed: &'static str,
        result: &str,
        unit: &'static str,
        seed_figure: &str,
    ) -> SummaryRow {
        SummaryRow {
            seed,
            result: result.to_string(),
            unit,
            seed_figure: seed_figure.to_string(),
            vecio: "not measured".into(),
            peer: "-".into(),
            ratio: None,
            target: None,
        }
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
    match (numeric, unit) {
        (false, _) => figure.to_string(),
        (true, "x") => format!("{figure}x"),
        (true, "%") => format!("{figure}%"),
        (true, unit) => format!("{figure} {unit}"),
    }
}

/// The units of the summary, in the order their tables appear.
pub const UNITS: [&str; 6] = ["x", "MB/s", "IOPS", "µs", "%", "% change"];

/// What a unit's table measures, for its heading.
pub fn unit_heading(unit: &str) -> &'static str {
    match unit {
        "x" => "Ratios (x: the ratio the result names)",
        "MB/s" => "Throughput (MB/s)",
        "IOPS" => "I/O operations per second (IOPS)",
        "µs" => "Latency (µs)",
        "%" => "Shares (%)",
        "% change" => "Changes (% change)",
        _ => "Other",
    }
}

/// The rows grouped by unit, in [`UNITS`] order (rows of another unit last); empty groups
/// are left out.
pub fn by_unit(rows: &[SummaryRow]) -> Vec<(&'static str, Vec<&SummaryRow>)> {
    let mut groups: Vec<(&'static str, Vec<&SummaryRow>)> =
        UNITS.iter().map(|&u| (u, Vec::new())).collect();
    for row in rows {
        match groups.iter_mut().find(|(u, _)| *u == row.unit) {
            Some((_, g)) => g.push(row),
            None => groups.push((row.unit, vec![row])),
        }
    }
    groups.retain(|(_, g)| !g.is_empty());
    groups
}

/// `>= x` (met when the value is at least `x`).
pub(crate) fn at_least(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!(">= {x}{unit}"),
        met: v >= x,
    })
}

/// `<= x` (met when the value is at most `x`).
pub(crate) fn at_most(value: Option<f64>, x: f64, unit: &str) -> Option<Verdict> {
    value.map(|v| Verdict {
        want: format!("<= {x}{unit}"),
        met: v <= x,
    })
}

/// `a / b` when both exist and `b` is not zero.
pub(crate) fn div(a: Option<f64>, b: Option<f64>) -> Option<f64> {
    match (a, b) {
        (Some(a), Some(b)) if b != 0.0 => Some(a / b),
        _ => None,
    }
}

/// Every seed's rows, in seed order. A peer that is one of vecio's own engines (its io_uring
/// or preadv2 path) or a ratio is no peer: such a cell shows `-` and no ratio.
pub fn summary_rows(r: &AllResults) -> Vec<SummaryRow> {
    let mut rows = writev::section::summary(r);
    rows.extend(loopdev::section::summary(r));
    rows.extend(nowait::section::summary(r));
    rows.extend(callcost::section::summary(r));
    rows.extend(fuse::section::summary(r));
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

/// The header of a summary table whose figures are in `unit`.
pub fn unit_header(unit: &str) -> [String; 7] {
    [
        "seed".into(),
        "result".into(),
        format!("seed's figure, {unit}"),
        format!("vecio, {unit}"),
        format!("best other program, {unit}"),
        "vecio/other, x".into(),
        "target".into(),
    ]
}

/// One unit's rows as a text table.
fn unit_table(unit: &str, rows: &[&SummaryRow]) -> Table {
    let mut t = Table::new(unit_header(unit));
    for row in rows {
        t.row([
            row.seed.to_string(),
            row.result.clone(),
            row.seed_figure.clone(),
            row.vecio.clone(),
            row.peer.clone(),
            super::fmt::num(row.ratio, 2),
            row.mark(),
        ]);
    }
    t
}

/// The summary as text for the terminal.
pub fn render(r: &AllResults, rows: &[SummaryRow]) -> String {
    let mut out = String::from("\nSummary: each seed's result beside vecio's and the best other program's, one table per unit");
    if let Some(s) = &r.setup {
        let fs = s
            .scratch
            .as_ref()
            .and_then(|i| i["fs"].as_str())
            .map(str::to_string);
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
    // One table per unit, one after the other: each header names its unit.
    out.push('\n');
    for (unit, group) in by_unit(rows) {
        out += &unit_table(unit, &group).to_string();
    }
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
        let mut row = SummaryRow::missing("004", "writev", "x", "4.5");
        assert_eq!(row.mark(), "-");
        row.target = at_least(Some(1.0), 2.0, "x");
        assert_eq!(row.mark(), "[MISS] >= 2x");
        let text = render(&AllResults::default(), &[row]);
        assert!(text.contains("not measured") && text.contains("0 met, 1 missed"));
    }
}
