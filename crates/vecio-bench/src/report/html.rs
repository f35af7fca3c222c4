//! The report as one self-contained HTML page: inline styles and SVG plots, and one script
//! that checks every plot drew (`#report-check`, for a headless browser).

use super::summary::{by_unit, unit_header, unit_heading};
use super::verdict::{documents as docs, target_count, verdicts};
use crate::experiment::table::{num, Cell, DataTable};
use crate::experiment::{Section, SummaryRow};
use crate::results::AllResults;

/// The page's styles.
const STYLE: &str = include_str!("html/style.css");

/// The page's one script: checks every plot drew, for a headless browser.
const SCRIPT: &str = include_str!("html/check.js");

/// Escapes text for HTML.
pub fn esc(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

fn cell(c: &Cell) -> String {
    let Cell::Num { text, value, json } = c else {
        return format!("<td>{}</td>", esc(c.shown()));
    };
    let (class, pointer) = match json {
        Some(p) => ("num", format!(" data-json=\"{}\"", esc(p))),
        None => ("num derived", String::new()),
    };
    let text = esc(text);
    format!("<td class=\"{class}\"{pointer} data-value=\"{value}\">{text}</td>")
}

/// A table's header row.
fn header<S: AsRef<str>>(cells: impl IntoIterator<Item = S>) -> String {
    let cells: String = cells
        .into_iter()
        .map(|h| format!("<th>{}</th>", esc(h.as_ref())))
        .collect();
    format!("<tr>{cells}</tr>\n")
}

fn table(t: &DataTable) -> String {
    let mut out = format!("<table>\n<caption>{}</caption>\n", esc(&t.title)) + &header(&t.header);
    for row in &t.rows {
        out += &format!("<tr>{}</tr>\n", row.iter().map(cell).collect::<String>());
    }
    out + "</table>\n"
}

fn mark(met: bool) -> &'static str {
    if met {
        "<span class=\"ok\">[ ok ]</span>"
    } else {
        "<span class=\"miss\">[MISS]</span>"
    }
}

/// The anchor of the section `row` belongs to.
fn anchor_of<'a>(sections: &'a [Section], row: &SummaryRow) -> &'a str {
    let mine = |s: &&Section| s.summary.iter().any(|x| std::ptr::eq(x, row));
    sections.iter().find(mine).map_or("", |s| s.anchor.as_str())
}

/// The summary: one table per unit, so every column holds one unit, named in its header.
fn summary(sections: &[Section]) -> String {
    let mut out = String::new();
    for (unit, rows) in by_unit(&super::summary_rows(sections)) {
        out += &format!(
            "<h3>{}</h3>\n<table class=\"summary-table\" data-unit=\"{}\">\n",
            esc(unit_heading(unit)),
            esc(unit)
        );
        out += &header(unit_header(unit));
        for r in rows {
            let target = match &r.target {
                Some(v) => format!("{} {}", mark(v.met), esc(&v.want)),
                None => "-".into(),
            };
            out += &format!(
                "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}</td><td>{}</td><td>{}</td>\
                 <td class=\"num\">{}</td><td>{target}</td></tr>\n",
                anchor_of(sections, r),
                r.seed,
                esc(&r.result),
                esc(&r.seed_figure),
                esc(&r.vecio),
                esc(&r.peer),
                num(r.ratio, 2),
            );
        }
        out += "</table>\n";
    }
    out
}

/// The first screen: how many of the sections' targets were met, and one line per section:
/// what its document claimed (and when), vecio's figure, the best other program's, the
/// section's targets met.
fn verdict(sections: &[Section]) -> String {
    let (met, total) = target_count(sections);
    let mut out = format!(
        "<section id=\"verdict\">\n<p class=\"count\" id=\"target-count\" data-met=\"{met}\" \
         data-total=\"{total}\">{met} of {total} targets met</p>\n<table id=\"verdict-table\">\n\
         <tr><th>source document</th><th>it claimed</th><th>vecio here</th>\
         <th>best other program</th><th>targets</th></tr>\n"
    );
    for v in verdicts(sections) {
        let s = v.section;
        let mark = match (v.mark(), &s.not_measured) {
            (_, Some(_)) => "<span class=\"miss\">not measured</span>".to_string(),
            ("-", _) => "-".to_string(),
            (m, _) => format!("{} {} of {}", mark(m == "ok"), v.met, v.total),
        };
        out += &format!(
            "<tr data-seed=\"{}\"><td><a href=\"#{}\">{} {}</a><br><small>{}</small></td>\
             <td>{}</td><td>{}: <b>{}</b></td><td>{}</td><td class=\"mark\">{mark}</td></tr>\n",
            s.seed.id,
            s.anchor,
            s.seed.id,
            esc(s.key),
            esc(s.seed.date),
            esc(s.seed.headline),
            esc(&v.result),
            esc(&v.vecio),
            esc(&v.peer),
        );
    }
    out + "</table>\n</section>\n"
}

/// The source documents, summarised: they are not in the repository.
fn documents(sections: &[Section]) -> String {
    let mut out = String::from(
        "<section id=\"documents\">\n<h2>The source documents</h2>\n<p>vecio brings the design of \
         five Linux mailing-list posts to user space; each section below re-measures one \
         (\"the seed\": the document a section starts from).</p>\n<table class=\"documents\">\n\
         <tr><th>seed</th><th>date</th><th>title and author</th><th>claim</th></tr>\n",
    );
    for s in docs(sections) {
        let p = s.seed;
        out += &format!(
            "<tr><td><a href=\"#{}\">{}</a></td><td>{}</td><td>{}<br><small>{}</small></td>\
             <td>{}</td></tr>\n",
            s.anchor,
            p.id,
            esc(p.date),
            esc(p.title),
            esc(p.author),
            esc(p.headline)
        );
    }
    out + "</table>\n</section>\n"
}

fn setup_table(lines: &[(String, String)]) -> String {
    let mut out = String::from("<table class=\"setup\">\n");
    for (k, v) in lines {
        out += &format!("<tr><th>{}</th><td>{}</td></tr>\n", esc(k), esc(v));
    }
    out + "</table>\n"
}

/// The `width` of an SVG document's root element, in pixels (900 when it has none).
fn svg_width(svg: &str) -> u32 {
    let root = svg.split('>').next().unwrap_or("");
    root.split("width=\"")
        .nth(1)
        .and_then(|w| w.split('"').next())
        .and_then(|w| w.parse().ok())
        .unwrap_or(900)
}

fn section(s: &Section) -> String {
    let seed = s.seed;
    let mut out = format!(
        "<section class=\"seed\" id=\"{}\" data-seed=\"{}\">\n<h2>Seed {}: {}</h2>\n\
         <p>Source: <code>seeds/{}</code>. {}</p>\n<h3>What it claimed</h3>\n",
        s.anchor,
        seed.id,
        seed.id,
        esc(seed.title),
        esc(seed.file),
        esc(seed.method)
    );
    out += "<table class=\"claims\">\n<tr><th>the seed's words</th><th>figure</th></tr>\n";
    for c in seed.claims {
        out += &format!(
            "<tr><td><q>{}</q></td><td>{}</td></tr>\n",
            esc(c.quote),
            esc(c.figure)
        );
    }
    out += "</table>\n";
    if let Some(why) = &s.not_measured {
        let why = esc(why);
        return out + &format!("<p class=\"not-measured\">Not measured: {why}</p>\n</section>\n");
    }
    out += "<h3>Set-up here</h3>\n";
    out += &setup_table(&s.setup);
    out += "<h3>Measured</h3>\n";
    for t in &s.tables {
        out += &table(t);
    }
    for n in &s.notes {
        out += &format!("<p>{}</p>\n", esc(n));
    }
    out += "<h3>Plots</h3>\n";
    for p in &s.plots {
        out += &format!(
            "<figure class=\"plot\" id=\"{}\" style=\"max-width:{}px\">\n{}\n<figcaption><b>{}.</b> {}</figcaption>\n</figure>\n",
            esc(&p.id),
            svg_width(&p.svg),
            p.svg.trim(),
            esc(&p.title),
            esc(&p.caption)
        );
    }
    out += "<h3>Targets</h3>\n<ul class=\"targets\">\n";
    for t in &s.targets {
        out += &format!("<li>{} {}</li>\n", mark(t.met), esc(&t.text));
    }
    out + "</ul>\n</section>\n"
}

/// The whole page.
pub fn render(r: &AllResults, sections: &[Section]) -> String {
    let mut out = format!(
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n\
         <title>vecio reproduction report</title>\n<style>{STYLE}</style>\n</head>\n<body>\n\
         <h1>vecio: the five source documents, re-measured</h1>\n"
    );
    out += &verdict(sections);
    if let Some(s) = &r.setup {
        out += &format!(
            "<p>Measured {} UTC with vecio {}: <code>{}</code></p>\n",
            esc(&s.date_utc),
            esc(&s.vecio_version),
            esc(&s.command)
        );
    }
    if r.quick {
        out += "<p class=\"not-measured\">A quick run: short measurements on small files. A \
                smoke test of the set-up, not a result; run without <code>--quick</code> for \
                real figures.</p>\n";
    }
    out += "<nav><a href=\"#summary\">summary</a><a href=\"#documents\">documents</a>";
    for s in sections {
        out += &format!("<a href=\"#{}\">{} {}</a>", s.anchor, s.seed.id, s.key);
    }
    out += "</nav>\n<section id=\"summary\">\n<h2>Summary</h2>\n";
    out += &summary(sections);
    out += &not_measured_and_setup(r);
    out += "</section>\n";
    out += &documents(sections);
    for s in sections {
        out += &section(s);
    }
    out + &format!(
        "<p id=\"report-check\" hidden>not checked</p>\n<script>{SCRIPT}</script>\n</body>\n</html>\n"
    )
}

/// Under the summary: the experiments not measured, and the machine and tools.
fn not_measured_and_setup(r: &AllResults) -> String {
    let mut out = String::new();
    if !r.not_measured.is_empty() {
        out += "<ul class=\"not-measured\">\n";
        for n in &r.not_measured {
            let how = if n.failed { "failed" } else { "not measured" };
            out += &format!(
                "<li>{}: {how}: {}</li>\n",
                esc(&n.experiment),
                esc(&n.reason)
            );
        }
        out += "</ul>\n";
    }
    if let Some(s) = &r.setup {
        let kernel = s.kernel.as_deref().unwrap_or("?");
        let machine = format!("kernel {kernel}, {} CPUs", s.cpus);
        let mut lines = vec![("machine".to_string(), machine)];
        for t in &s.tools {
            let v = t.version.clone().unwrap_or_else(|| "not installed".into());
            lines.push((t.name.clone(), v));
        }
        out += &setup_table(&lines);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_carry_their_values() {
        assert_eq!(esc("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
        let c = cell(&Cell::json(1.25, 1, "/x/0".into()));
        assert_eq!(
            c,
            "<td class=\"num\" data-json=\"/x/0\" data-value=\"1.25\">1.2</td>"
        );
        assert_eq!(
            svg_width("<svg width=\"440\" height=\"320\"><rect width=\"9\"/>"),
            440
        );
        assert_eq!(svg_width("<svg>"), 900);
        let d = cell(&Cell::derived(2.0, "2.00x".into()));
        assert!(d.contains("derived") && d.contains("2.00x"));
    }
}
