//! Plain-text tables, for `vecio info` and the bench: a header, a rule, rows; column widths fit the
//! widest cell; numeric columns are right-aligned, text columns left-aligned.
//!
//! ```
//! use vecio_host::table::Table;
//!
//! let mut t = Table::new(["engine", "MB/s"]);
//! t.row(["serial", "12.5"]);
//! t.row(["uring", "310.0"]);
//! assert_eq!(
//!     t.to_string(),
//!     "engine   MB/s\n------  -----\nserial   12.5\nuring   310.0\n"
//! );
//! ```

use std::fmt;

/// Horizontal alignment of a column.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    /// Pad on the right (text).
    Left,
    /// Pad on the left (numbers).
    Right,
}

/// A table of strings, rendered with [`fmt::Display`].
#[derive(Debug, Clone, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
    /// Alignment forced per column; `None` means decided by the cells.
    align: Vec<Option<Align>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<I, S>(header: I) -> Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let header: Vec<String> = header.into_iter().map(Into::into).collect();
        let align = vec![None; header.len()];
        Table {
            header,
            rows: Vec::new(),
            align,
        }
    }

    /// Appends a row. Missing cells render empty; extra cells widen the table.
    pub fn row<I, S>(&mut self, cells: I) -> &mut Table
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.rows.push(cells.into_iter().map(Into::into).collect());
        self
    }

    /// Forces the alignment of column `col` instead of deciding it from the cells.
    pub fn align(&mut self, col: usize, align: Align) -> &mut Table {
        if self.align.len() <= col {
            self.align.resize(col + 1, None);
        }
        self.align[col] = Some(align);
        self
    }

    /// Number of data rows.
    pub fn len(&self) -> usize {
        self.rows.len()
    }

    /// True when the table has no data rows.
    pub fn is_empty(&self) -> bool {
        self.rows.is_empty()
    }

    /// Number of columns: the widest of the header and the rows.
    fn columns(&self) -> usize {
        self.rows
            .iter()
            .map(Vec::len)
            .chain([self.header.len()])
            .max()
            .unwrap_or(0)
    }

    /// The alignment of column `col`: forced, or right when every non-empty cell is a number.
    fn column_align(&self, col: usize) -> Align {
        if let Some(Some(a)) = self.align.get(col) {
            return *a;
        }
        let mut cells = self
            .rows
            .iter()
            .filter_map(|r| r.get(col))
            .filter(|c| !is_blank(c));
        let mut any = false;
        let all_numeric = cells.all(|c| {
            any = true;
            is_numeric(c)
        });
        if any && all_numeric {
            Align::Right
        } else {
            Align::Left
        }
    }
}

impl fmt::Display for Table {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let cols = self.columns();
        let widths: Vec<usize> = (0..cols)
            .map(|c| {
                std::iter::once(&self.header)
                    .chain(&self.rows)
                    .map(|r| width(cell(r, c)))
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let aligns: Vec<Align> = (0..cols).map(|c| self.column_align(c)).collect();
        let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
        let lines = std::iter::once(&self.header)
            .chain(std::iter::once(&rule))
            .chain(&self.rows);
        for row in lines {
            let mut line = String::new();
            for c in 0..cols {
                let text = cell(row, c);
                let pad = " ".repeat(widths[c] - width(text));
                if c > 0 {
                    line.push_str("  ");
                }
                match aligns[c] {
                    Align::Left => {
                        line.push_str(text);
                        line.push_str(&pad);
                    }
                    Align::Right => {
                        line.push_str(&pad);
                        line.push_str(text);
                    }
                }
            }
            writeln!(f, "{}", line.trim_end())?;
        }
        Ok(())
    }
}

/// Cell `c` of `row`, empty when the row is short.
fn cell(row: &[String], c: usize) -> &str {
    row.get(c).map(String::as_str).unwrap_or("")
}

/// Display width of a cell, counted in characters (so `×` and `µ` count as one).
fn width(s: &str) -> usize {
    s.chars().count()
}

/// Placeholder cells that do not decide a column's alignment.
fn is_blank(s: &str) -> bool {
    matches!(s.trim(), "" | "-" | "n/a" | "—")
}

/// A number, optionally signed, optionally followed by a unit such as `%`, `x`, `×`, `s`,
/// `ms`, `us`, `µs`, `MB/s`, `K`, `M` or `G`.
fn is_numeric(s: &str) -> bool {
    let t = s.trim();
    let t = t.strip_prefix(['+', '-', '~', '≈']).unwrap_or(t);
    let end = t
        .char_indices()
        .find(|(_, ch)| !(ch.is_ascii_digit() || matches!(ch, '.' | ',' | 'e' | 'E')))
        .map_or(t.len(), |(i, _)| i);
    let (num, unit) = t.split_at(end);
    let num_ok = num
        .chars()
        .next()
        .is_some_and(|c| c.is_ascii_digit() || c == '.')
        && num.replace(',', "").parse::<f64>().is_ok();
    const UNITS: [&str; 14] = [
        "", "%", "x", "×", "s", "ms", "us", "µs", "ns", "MB/s", "MiB/s", "K", "M", "G",
    ];
    num_ok && UNITS.contains(&unit.trim())
}

/// Bytes as `1.5 GiB`, `512 B`.
pub fn fmt_bytes(b: u64) -> String {
    const UNITS: [&str; 5] = ["KiB", "MiB", "GiB", "TiB", "PiB"];
    if b < 1024 {
        return format!("{b} B");
    }
    let mut v = b as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{v:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn aligns_numbers_right_and_text_left() {
        let mut t = Table::new(["test", "vecio", "fio", "ratio"]);
        t.row(["randwrite 4k", "123.4", "120.0", "1.03×"]);
        t.row(["seq read 1m", "2,345.0", "-", "12%"]);
        let want = "\
test            vecio    fio  ratio
------------  -------  -----  -----
randwrite 4k    123.4  120.0  1.03×
seq read 1m   2,345.0      -    12%
";
        assert_eq!(t.to_string(), want);
        assert_eq!(t.len(), 2);
    }

    #[test]
    fn ragged_rows_and_forced_alignment() {
        let mut t = Table::new(["a"]);
        t.row(["1", "x"]).row(Vec::<String>::new());
        t.align(0, Align::Left);
        assert_eq!(t.to_string(), "a\n-  -\n1  x\n\n");
    }

    #[test]
    fn recognises_numbers() {
        for yes in [
            "1", "-2.5", "1e6", "3.0 ms", "45%", "2x", "1,024", "0.5µs", "12 MB/s",
        ] {
            assert!(is_numeric(yes), "{yes}");
        }
        for no in ["abc", "x2", "4k-rand", "1.2.3", "e5", ""] {
            assert!(!is_numeric(no), "{no}");
        }
    }
}
