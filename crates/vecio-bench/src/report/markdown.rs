//! The report as Markdown (`report.md`), the plots linked from `plots/`.

use super::summary::SummaryRow;
use super::{DataTable, Section};
use crate::experiments::results::AllResults;

/// Escapes a table cell (pipes would end it).
fn cell(s: &str) -> String {
    s.replace('|', "\\|").replace('\n', " ")
}

fn table(header: &[String], rows: &[Vec<String>]) -> String {
    let mut out = format!(
        "| {} |\n|{}\n",
        header
            .iter()
            .map(|h| cell(h))
            .collect::<Vec<_>>()
            .join(" | "),
        "---|".repeat(header.len())
    );
    for r in rows {
        out += &format!(
            "| {} |\n",
            r.iter().map(|c| cell(c)).collect::<Vec<_>>().join(" | ")
        );
    }
    out
}

fn data_table(t: &DataTable) -> String {
    let rows: Vec<Vec<String>> = t
        .rows
        .iter()
        .map(|r| r.iter().map(|c| c.shown().to_string()).collect())
        .collect();
    format!("**{}**\n\n{}\n", t.title, table(&t.header, &rows))
}

fn section(s: &Section) -> String {
    let seed = s.seed;
    let mut out = format!(
        "## Seed {}: {}\n\nSource: `seeds/{}`. {}\n\n### What it claimed\n\n",
        seed.id, seed.title, seed.file, seed.method
    );
    let claims: Vec<Vec<String>> = seed
        .claims
        .iter()
        .map(|c| vec![format!("\"{}\"", c.quote), c.figure.to_string()])
        .collect();
    out += &table(&["the seed's words".into(), "figure".into()], &claims);
    out += "\n";
    if let Some(why) = &s.not_measured {
        return out + &format!("**Not measured:** {why}\n\n");
    }
    out += "### Set-up here\n\n";
    let setup: Vec<Vec<String>> = s
        .setup
        .iter()
        .map(|(k, v)| vec![k.clone(), v.clone()])
        .collect();
    out += &table(&["what".into(), "here".into()], &setup);
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

/// The verdict (one line per source document, the sections' targets counted) and the five
/// documents summarised.
fn verdict(rows: &[SummaryRow], sections: &[Section]) -> String {
    let mut out = String::new();
    let (met, total) = super::verdict::target_count(sections);
    out += &format!("## Verdict: {met} of {total} targets met\n\n");
    let lines: Vec<Vec<String>> = super::verdict::verdicts(sections, rows)
        .into_iter()
        .map(|v| {
            let date = super::verdict::provenance(v.seed).map_or("", |p| p.date);
            vec![
                format!("{} ({date})", v.seed),
                v.claim.to_string(),
                format!("{}: {}", v.result, v.vecio),
                v.peer.clone(),
                match &v.not_measured {
                    Some(_) => "not measured".into(),
                    None => format!("{} {} of {}", v.mark(), v.met, v.total),
                },
            ]
        })
        .collect();
    let header = [
        "source document",
        "it claimed",
        "vecio here",
        "best other program",
        "targets",
    ]
    .map(String::from);
    out += &table(&header, &lines);
    out += "\n## The source documents\n\n";
    let docs: Vec<Vec<String>> = sections
        .iter()
        .filter_map(|s| {
            let p = super::verdict::provenance(s.seed.id)?;
            Some(vec![
                p.id.to_string(),
                p.date.to_string(),
                format!("{} ({})", s.seed.title, p.author),
                p.claim.to_string(),
            ])
        })
        .collect();
    out += &table(
        &["seed", "date", "title and author", "claim"].map(String::from),
        &docs,
    );
    out
}

/// The whole document.
pub fn render(r: &AllResults, rows: &[SummaryRow], sections: &[Section]) -> String {
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
    out += &verdict(rows, sections);
    out += "\n## Summary\n\n";
    for (unit, group) in super::summary::by_unit(rows) {
        let summary: Vec<Vec<String>> = group
            .iter()
            .map(|x| {
                vec![
                    x.seed.to_string(),
                    x.result.clone(),
                    x.seed_figure.clone(),
                    x.vecio.clone(),
                    x.peer.clone(),
                    super::fmt::num(x.ratio, 2),
                    x.mark(),
                ]
            })
            .collect();
        out += &format!("### {}\n\n", super::summary::unit_heading(unit));
        out += &table(&super::summary::unit_header(unit), &summary);
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
