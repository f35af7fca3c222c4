//! The tables an experiment measured, as data: text cells, and figures that carry their exact
//! value and JSON pointer (the HTML repeats both); built column by column ([`Columns`]).

use crate::harness::stats::Summary;

/// One cell of a table: text, or a number with where it comes from.
#[derive(Debug, Clone, PartialEq)]
pub enum Cell {
    /// Plain text.
    Text(String),
    /// A figure: shown as `text`, exactly `value`; `json` is its JSON pointer in
    /// `results.json`, `None` for figures derived from several (ratios, sums).
    Num {
        /// As shown.
        text: String,
        /// The exact value.
        value: f64,
        /// Where it is in `results.json`.
        json: Option<String>,
    },
}

impl Cell {
    /// A text cell.
    pub fn text(s: impl Into<String>) -> Cell {
        Cell::Text(s.into())
    }

    /// A figure read from `results.json` at `pointer`, shown with `prec` decimals.
    pub fn json(value: f64, prec: usize, pointer: String) -> Cell {
        Cell::at(format!("{value:.prec$}"), value, pointer)
    }

    /// A figure read from `results.json` at `pointer`, shown as `text`.
    fn at(text: String, value: f64, pointer: String) -> Cell {
        let json = Some(pointer);
        Cell::Num { text, value, json }
    }

    /// A derived figure shown as `text`.
    pub fn derived(value: f64, text: String) -> Cell {
        Cell::Num {
            text,
            value,
            json: None,
        }
    }

    /// A derived figure with `prec` decimals, or `-` when there is none.
    pub fn maybe(v: Option<f64>, prec: usize) -> Cell {
        v.map_or(Cell::text("-"), |v| Cell::derived(v, format!("{v:.prec$}")))
    }

    /// A ratio cell, `4.84x` (derived: it is computed from several figures), or `-`.
    pub fn ratio(r: Option<f64>) -> Cell {
        r.map_or(Cell::text("-"), |v| Cell::derived(v, ratio(r)))
    }

    /// The median of a [`Summary`] stored at `pointer` in `results.json`, with its spread:
    /// `329.7 ±4%` (no spread for a single sample).
    pub fn summary(s: &Summary, prec: usize, pointer: String) -> Cell {
        let mut text = format!("{:.prec$}", s.median);
        if s.n > 1 {
            text += &format!(" ±{:.0}%", s.relative_spread() * 100.0);
        }
        Cell::at(text, s.median, format!("{pointer}/median"))
    }

    /// A share (0 to 1) stored at `pointer`, shown as a percentage.
    pub fn share(v: f64, pointer: String) -> Cell {
        Cell::at(format!("{:.1}%", v * 100.0), v, pointer)
    }

    /// What the cell shows.
    pub fn shown(&self) -> &str {
        match self {
            Cell::Text(s) => s,
            Cell::Num { text, .. } => text,
        }
    }
}

impl<S: AsRef<str> + ?Sized> From<&S> for Cell {
    fn from(s: &S) -> Cell {
        Cell::text(s.as_ref())
    }
}

impl From<String> for Cell {
    fn from(s: String) -> Cell {
        Cell::Text(s)
    }
}

/// `-` where there is no figure.
impl From<Option<Cell>> for Cell {
    fn from(c: Option<Cell>) -> Cell {
        c.unwrap_or_else(|| Cell::text("-"))
    }
}

/// A table of a section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DataTable {
    /// What it shows.
    pub title: String,
    /// Column headers.
    pub header: Vec<String>,
    /// Rows of cells.
    pub rows: Vec<Vec<Cell>>,
}

impl DataTable {
    /// A table of one row per item of `rows`, the `i`-th found at `{base}/{i}` in
    /// `results.json`; its columns come from [`Columns::col`].
    pub fn over<R: Copy>(
        title: impl Into<String>,
        base: &str,
        rows: impl IntoIterator<Item = R>,
    ) -> Columns<R> {
        let rows = rows.into_iter().enumerate();
        DataTable::at(title, rows.map(|(i, r)| (format!("{base}/{i}"), r)))
    }

    /// A table of one row per item of `rows`, each with where it is in `results.json`.
    pub fn at<R: Copy>(
        title: impl Into<String>,
        rows: impl IntoIterator<Item = (String, R)>,
    ) -> Columns<R> {
        let rows: Vec<(At, R)> = rows.into_iter().map(|(at, r)| (At(at), r)).collect();
        let table = DataTable {
            title: title.into(),
            header: Vec::new(),
            rows: vec![Vec::new(); rows.len()],
        };
        Columns { table, rows }
    }
}

/// Where a table's row is in `results.json` (`/writev/rows/3`): its figures' pointers start
/// there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct At(String);

impl At {
    /// The figure `v` at `field` below the row, with `prec` decimals.
    pub fn json(&self, v: f64, prec: usize, field: &str) -> Cell {
        Cell::json(v, prec, format!("{}/{field}", self.0))
    }

    /// The [`Summary`] at `field` below the row ([`Cell::summary`]).
    pub fn summary(&self, s: &Summary, prec: usize, field: &str) -> Cell {
        Cell::summary(s, prec, format!("{}/{field}", self.0))
    }

    /// The share at `field` below the row, as a percentage.
    pub fn share(&self, v: f64, field: &str) -> Cell {
        Cell::share(v, format!("{}/{field}", self.0))
    }
}

/// A table being built one column at a time, each column a header and a function from a row
/// (and where it is in `results.json`) to its cell.
pub struct Columns<R> {
    table: DataTable,
    rows: Vec<(At, R)>,
}

impl<R: Copy> Columns<R> {
    /// Adds the column `header`, its cell in each row `cell(at, row)`.
    pub fn col<C: Into<Cell>>(mut self, header: &str, cell: impl Fn(&At, R) -> C) -> Self {
        self.table.header.push(header.to_string());
        for ((at, r), row) in self.rows.iter().zip(&mut self.table.rows) {
            row.push(cell(at, *r).into());
        }
        self
    }

    /// [`col`](Self::col) when `shown`, else nothing.
    pub fn col_if<C: Into<Cell>>(
        self,
        shown: bool,
        header: &str,
        cell: impl Fn(&At, R) -> C,
    ) -> Self {
        if shown {
            self.col(header, cell)
        } else {
            self
        }
    }

    /// The table.
    pub fn done(self) -> DataTable {
        self.table
    }
}

/// `4.84x`, or `-` when there is no ratio.
pub fn ratio(r: Option<f64>) -> String {
    r.map_or("-".into(), |r| format!("{r:.2}x"))
}

/// `4.84` (a figure whose column header names the unit), or `-`.
pub fn num(v: Option<f64>, prec: usize) -> String {
    v.map_or("-".into(), |v| format!("{v:.prec$}"))
}

/// `-16` for a change of -0.16 (in a column whose header says `% change`).
pub fn change_num(v: f64) -> String {
    format!("{:+.0}", v * 100.0)
}

/// `-16%` for a change of -0.16.
pub fn change(v: f64) -> String {
    format!("{:+.0}%", v * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_show_their_values() {
        let s = Summary::of(&[10.0, 12.0]).unwrap_or_default();
        let c = Cell::summary(&s, 1, "/a".into());
        assert_eq!(c.shown(), "11.0 ±13%");
        assert_eq!(
            c,
            Cell::Num {
                text: "11.0 ±13%".into(),
                value: 11.0,
                json: Some("/a/median".into())
            }
        );
        assert_eq!(Cell::share(0.7063, "/b".into()).shown(), "70.6%");
        assert_eq!(ratio(Some(4.844)), "4.84x");
        assert_eq!(Cell::ratio(None).shown(), "-");
        assert_eq!(change(-0.16), "-16%");
        assert_eq!(Cell::maybe(Some(2.345), 1).shown(), "2.3");
    }
}
