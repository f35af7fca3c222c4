//! The one-screen summary: each seed result beside vecio's and the best peer's figure, one
//! table per unit.

use crate::experiment::table::num;
use crate::experiment::SummaryRow;

/// The units of the summary, in the order their tables appear.
pub const UNITS: [&str; 7] = ["x", "MB/s", "MiB/s", "IOPS", "µs", "%", "% change"];

/// What a unit's table measures, for its heading.
pub fn unit_heading(unit: &str) -> &'static str {
    match unit {
        "x" => "Ratios (x: the ratio the result names)",
        "MB/s" => "Throughput (MB/s)",
        "MiB/s" => "Throughput (MiB/s)",
        "IOPS" => "I/O operations per second (IOPS)",
        "µs" => "Latency (µs)",
        "%" => "Shares (%)",
        "% change" => "Changes (% change)",
        _ => "Other",
    }
}

/// The rows grouped by unit, in [`UNITS`] order (rows of another unit last); empty groups
/// are left out.
pub fn by_unit<'a>(rows: &[&'a SummaryRow]) -> Vec<(&'static str, Vec<&'a SummaryRow>)> {
    let mut groups: Vec<(&'static str, Vec<&'a SummaryRow>)> =
        UNITS.iter().map(|&u| (u, Vec::new())).collect();
    for &row in rows {
        match groups.iter_mut().find(|(u, _)| *u == row.unit) {
            Some((_, g)) => g.push(row),
            None => groups.push((row.unit, vec![row])),
        }
    }
    groups.retain(|(_, g)| !g.is_empty());
    groups
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

/// A summary row's cells, in [`unit_header`]'s order.
pub fn cells(row: &SummaryRow) -> [String; 7] {
    [
        row.seed.to_string(),
        row.result.clone(),
        row.seed_figure.clone(),
        row.vecio.clone(),
        row.peer.clone(),
        num(row.ratio, 2),
        row.mark(),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rows_group_by_unit_in_order() {
        let row = |unit| SummaryRow::missing("000", "r", unit, "-");
        let (a, b, c) = (row("%"), row("x"), row("furlongs"));
        let groups = by_unit(&[&a, &b, &c]);
        let units: Vec<&str> = groups.iter().map(|(u, _)| *u).collect();
        assert_eq!(units, ["x", "%", "furlongs"]);
        assert_eq!(unit_header("MB/s")[3], "vecio, MB/s");
        assert_eq!(cells(&a)[3], "not measured");
    }
}
