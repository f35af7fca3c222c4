//! The report as Markdown (`report.md`), the plots linked from `plots/`.

use super::summary::{by_unit, cells, unit_header, unit_heading};
use super::verdict::{documents, target_count, verdicts};
use crate::experiment::table::{Cell, DataTable};
use crate::experiment::Section;
use crate::results::AllResults;

/// Escapes a table cell (pipes would end it).
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn table<R: AsRef<[String]>>(header: &[String], rows: impl IntoIterator<Item = R>) -> String {
    let row = |cells: &[String]| {
        let cells: Vec<String> = cells.iter().map(|c| cell(c)).collect();
        format!("| {} |\n", cells.join(" | "))
    };
    let mut out = row(header) + &format!("|{}\n", "---|".repeat(header.len()));
    for r in rows {
        out += &row(r.as_ref());
    }
    out
}

fn data_table(t: &DataTable) -> String {
    let shown = |r: &Vec<Cell>| r.iter().map(|c| c.shown().to_string()).collect::<Vec<_>>();
    format!(
        "**{}**\n\n{}\n",
        t.title,
        table(&t.header, t.rows.iter().map(shown))
    )
}

fn section(s: &Section) -> String {
    let seed = s.seed;
    let mut out = format!(
        "## Seed {}: {}\n\nSource: `seeds/{}`. {}\n\n### What it claimed\n\n",
        seed.id, seed.title, seed.file, seed.method
    );
    let claims = seed.claims.iter();
    let claims = claims.map(|c| vec![format!("\"{}\"", c.quote), c.figure.to_string()]);
    out += &table(&["the seed's words".into(), "figure".into()], claims);
    out += "\n";
    if let Some(why) = &s.not_measured {
        return out + &format!("**Not measured:** {why}\n\n");
    }
    out += "### Set-up here\n\n";
    let setup = s.setup.iter().map(|(k, v)| vec![k.clone(), v.clone()]);
    out += &table(&["what".into(), "here".into()], setup);
    out += "\n### Measured\n\n";
    for t in &s.tables {
        out += &data_table(t);
    }
    for n in &s.notes {
        out += &format!("{n}\n\n");
    }
    out += "### Plots\n\n";
    for p in &s.plots {
        out += &format!(
            "![{}](plots/{}.svg)\n\n*{}.* {}\n\n",
            p.title, p.id, p.title, p.caption
        );
    }
    out += "### Targets\n\n";
    for t in &s.targets {
        out += &format!(
            "- {} {}\n",
            if t.met { "[ ok ]" } else { "**[MISS]**" },
            t.text
        );
    }
    out + "\n"
}

/// The verdict (one line per section, the sections' targets counted) and the source documents
/// summarised.
fn verdict(sections: &[Section]) -> String {
    let (met, total) = target_count(sections);
    let mut out = format!("## Verdict: {met} of {total} targets met\n\n");
    let lines = verdicts(sections).into_iter().map(|v| {
        let seed = v.section.seed;
        vec![
            format!("{} ({})", seed.id, seed.date),
            seed.headline.to_string(),
            format!("{}: {}", v.result, v.vecio),
            v.peer.clone(),
            match &v.section.not_measured {
                Some(_) => "not measured".into(),
                None => format!("{} {} of {}", v.mark(), v.met, v.total),
            },
        ]
    });
    let header = [
        "source document",
        "it claimed",
        "vecio here",
        "best other program",
        "targets",
    ];
    out += &table(&header.map(String::from), lines);
    out += "\n## The source documents\n\n";
    let docs = documents(sections).into_iter().map(|s| {
        let p = s.seed;
        vec![
            p.id.to_string(),
            p.date.to_string(),
            format!("{} ({})", p.title, p.author),
            p.headline.to_string(),
        ]
    });
    out += &table(
        &["seed", "date", "title and author", "claim"].map(String::from),
        docs,
    );
    out
}

/// The whole document.
pub fn render(r: &AllResults, sections: &[Section]) -> String {
    let mut out = String::from("# vecio: the five source documents, re-measured\n\n");
    if let Some(s) = &r.setup {
        out += &format!(
            "Measured {} UTC with vecio {}: `{}`\n\n",
            s.date_utc, s.vecio_version, s.command
        );
    }
    if r.quick {
        out += "A quick run: short measurements on small files, a smoke test rather than a \
                result.\n\n";
    }
    out += &verdict(sections);
    out += "\n## Summary\n\n";
    for (unit, group) in by_unit(&super::summary_rows(sections)) {
        out += &format!("### {}\n\n", unit_heading(unit));
        out += &table(&unit_header(unit), group.iter().map(|x| cells(x)));
        out += "\n";
    }
    for n in &r.not_measured {
        let how = if n.failed { "failed" } else { "not measured" };
        out += &format!("- {}: {how}: {}\n", n.experiment, n.reason);
    }
    out += "\n";
    for s in sections {
        out += &section(s);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_escape_pipes() {
        let t = table(&["a".into(), "b".into()], &[vec!["x|y".into(), "2".into()]]);
        assert_eq!(t, "| a | b |\n|---|---|\n| x\\|y | 2 |\n");
    }
}
