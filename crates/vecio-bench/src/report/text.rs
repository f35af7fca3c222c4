//! The report on the terminal: a section as an experiment prints it, and the summary that
//! ends `vecio bench all` and `vecio bench report`.

use vecio_host::table::Table;

use super::summary::{by_unit, cells, unit_header};
use super::verdict::{target_count, verdicts};
use crate::experiment::table::DataTable;
use crate::experiment::Section;
use crate::results::AllResults;

fn table(t: &DataTable) -> String {
    let mut out = Table::new(t.header.iter().cloned());
    for r in &t.rows {
        out.row(r.iter().map(|c| c.shown().to_string()));
    }
    format!("{}\n{out}", t.title)
}

/// A section as text.
pub fn section(s: &Section) -> String {
    let seed = s.seed;
    let mut out = format!(
        "Seed {} ({}): {}\n{}\n",
        seed.id, s.key, seed.title, seed.method
    );
    let mut claims = Table::new(["the seed's words", "figure"]);
    for c in seed.claims {
        claims.row([format!("\"{}\"", c.quote), c.figure.to_string()]);
    }
    out += &format!(
        "\nThe seed ({}, {}) claimed:\n{claims}",
        seed.date, seed.file
    );
    if let Some(why) = &s.not_measured {
        return out + &format!("\nnot measured: {why}\n");
    }
    out += "\nSet-up here:\n";
    for (k, v) in &s.setup {
        out += &format!("  {k}: {v}\n");
    }
    for t in &s.tables {
        out += &format!("\n{}", table(t));
    }
    for n in &s.notes {
        out += &format!("\n{n}\n");
    }
    let (met, total) = target_count(std::slice::from_ref(s));
    out += &format!("\nTargets: {met} of {total} targets met\n");
    for t in &s.targets {
        out += &format!("  [{}] {}\n", if t.met { " ok " } else { "MISS" }, t.text);
    }
    out
}

/// The verdict lines and the target count; `rows_marked` is (met, missed) over the summary
/// rows printed after it.
fn verdict(sections: &[Section], rows_marked: (usize, usize)) -> String {
    let (met, total) = target_count(sections);
    let out = format!(
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
    for v in verdicts(sections) {
        let s = v.section;
        let targets = match &s.not_measured {
            Some(_) => "not measured".to_string(),
            None => format!("{:<4} {} of {}", v.mark(), v.met, v.total),
        };
        let date = s.seed.date.split(' ').next().unwrap_or(s.seed.date);
        t.row([
            s.seed.id.to_string(),
            format!("{} ({date})", s.key),
            format!("{}: {}", v.result, v.vecio),
            v.peer.clone(),
            targets,
        ]);
    }
    out + &t.to_string() + "\n"
}

/// The summary: the verdict, then one table per unit, then what was not measured.
pub fn summary(r: &AllResults, sections: &[Section]) -> String {
    let mut out = String::from(
        "Summary: each seed's result beside vecio's and the best other program's, one table \
         per unit",
    );
    if let Some(s) = &r.setup {
        let fs = s.scratch.as_ref().and_then(|i| i["fs"].as_str());
        let (fs, kernel) = (fs.unwrap_or("?"), s.kernel.as_deref().unwrap_or("?"));
        out += &format!(
            " ({} UTC, kernel {kernel}, {} CPUs, {fs})",
            s.date_utc, s.cpus
        );
    }
    if r.quick {
        out += "\nquick run: short measurements on small files, a smoke test rather than a result";
    }
    let rows = super::summary_rows(sections);
    let marked = |met: bool| {
        let n = rows
            .iter()
            .filter(|x| x.target.as_ref().is_some_and(|v| v.met == met));
        n.count()
    };
    out += &format!("\n\n{}", verdict(sections, (marked(true), marked(false))));
    for (unit, group) in by_unit(&rows) {
        let mut t = Table::new(unit_header(unit));
        for row in group {
            t.row(cells(row));
        }
        out += &t.to_string();
    }
    if !r.not_measured.is_empty() {
        let names: Vec<String> = r
            .not_measured
            .iter()
            .map(|n| format!("{} ({})", n.experiment, n.reason))
            .collect();
        out += &format!("\nnot measured: {}", names.join("; "));
    }
    out + "\n"
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::section::at_least;
    use crate::experiment::seed::{claim, Seed};
    use crate::experiment::{SummaryRow, Target};

    const SEED: Seed = Seed {
        id: "002",
        title: "a document",
        file: "002.txt",
        date: "2015-05",
        author: "someone",
        headline: "it claimed something",
        method: "measured so",
        claims: &[claim("f1: 70.63%", "70.6%")],
    };

    #[test]
    fn sections_and_the_summary_say_what_was_met() {
        let mut s = Section::new("nowait", &SEED);
        s.targets.push(Target {
            text: "fast".into(),
            met: false,
        });
        let mut row = SummaryRow::missing("002", "f1 reads", "x", "70.6");
        row.target = at_least(Some(1.0), 2.0, "x");
        s.summary.push(row);
        let text = section(&s);
        assert!(
            text.contains("The seed (") && text.contains("[MISS] fast"),
            "{text}"
        );
        let text = summary(&AllResults::default(), &[s]);
        assert!(
            text.contains("not measured") && text.contains("0 met, 1 missed"),
            "{text}"
        );
        assert!(text.contains("Verdict: 0 of 1 targets met"), "{text}");
    }
}
