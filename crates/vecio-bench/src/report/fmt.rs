//! Number formatting shared by the sections, so a figure reads the same everywhere.

use super::Cell;
use crate::harness::stats::Summary;

/// `4.84x`, or `-` when there is no ratio.
pub(crate) fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// A ratio cell (derived: it is computed from several figures).
pub(crate) fn ratio_cell(r: Option<f64>) -> Cell {
    match r {
        Some(v) => Cell::derived(v, ratio(r)),
        None => Cell::text("-"),
    }
}

/// The median of a [`Summary`] stored at `pointer` in `results.json`, with its spread:
/// `329.7 ±4%` (no spread for a single sample).
pub(crate) fn summary_cell(s: &Summary, prec: usize, pointer: String) -> Cell {
    let mut text = format!("{:.prec$}", s.median);
    if s.n > 1 {
        text += &format!(" ±{:.0}%", s.relative_spread() * 100.0);
    }
    Cell::Num {
        text,
        value: s.median,
        json: Some(format!("{pointer}/median")),
    }
}

/// A share (0 to 1) stored at `pointer`, shown as a percentage.
pub(crate) fn share_cell(v: f64, pointer: String) -> Cell {
    Cell::Num {
        text: format!("{:.1}%", v * 100.0),
        value: v,
        json: Some(pointer),
    }
}

/// `4.84` (a figure of the summary, whose column header names the unit), or `-`.
pub(crate) fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// `-16` for a change of -0.16 (in a column whose header says `% change`).
pub(crate) fn change_num(v: f64) -> String {
    format!("{:+.0}", v * 100.0)
}

/// `-16%` for a change of -0.16.
pub(crate) fn change(v: f64) -> String {
    format!("{:+.0}%", v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_show_their_values() {
        let s = Summary::of(&[10.0, 12.0]).unwrap_or_default();
        let c = summary_cell(&s, 1, "/a".into());
        assert_eq!(c.shown(), "11.0 ±13%");
        assert_eq!(
            c,
            Cell::Num {
                text: "11.0 ±13%".into(),
                value: 11.0,
                json: Some("/a/median".into())
            }
        );
        assert_eq!(share_cell(0.7063, "/b".into()).shown(), "70.6%");
        assert_eq!(ratio(Some(4.844)), "4.84x");
        assert_eq!(ratio_cell(None).shown(), "-");
        assert_eq!(change(-0.16), "-16%");
    }
}
