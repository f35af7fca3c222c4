//! The report built from a recorded `results.json`, without running anything: every seed has
//! its section, every measured section its tables and plots, a missing experiment says "not
//! measured" and why, and every figure the HTML shows is the figure in the JSON.

mod common;

use common::{attr_values, fixture, fixture_json, section, sections, write_report};
use vecio_bench::experiment::table::Cell;
use vecio_bench::registry::EXPERIMENTS;
use vecio_bench::report::{self, compare, text};
use vecio_bench::results::{AllResults, NotMeasured};

#[test]
fn every_section_and_plot_is_present() {
    let r = fixture();
    let (_dir, files) = write_report(&r);
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    let md = std::fs::read_to_string(&files.markdown).expect("report.md");
    for s in EXPERIMENTS.iter().map(|e| e.seed()) {
        assert!(
            html.contains(&format!("id=\"seed-{}\"", s.id)),
            "seed {} section",
            s.id
        );
        assert!(
            md.contains(&format!("## Seed {}:", s.id)),
            "seed {} in md",
            s.id
        );
        for c in s.claims {
            assert!(
                html.contains(&report::html::esc(c.quote)),
                "claim {:?}",
                c.quote
            );
        }
    }
    let sections = sections(&r);
    let plots: Vec<&str> = sections
        .iter()
        .flat_map(|s| s.plots.iter().map(|p| p.id.as_str()))
        .collect();
    // writev 1, loop 2 bars + 4 cache curves, nowait 1 + 4 percentile curves, tokio 1,
    // callcost 2, fuse 1.
    assert_eq!(plots.len(), 16, "{plots:?}");
    assert_eq!(files.plots, 16);
    assert!(
        html.contains("id=\"seed-002-tokio\""),
        "tokio's own section"
    );
    assert!(plots.contains(&"s004-direct"), "{plots:?}");
    let figures = attr_values(&html, "<figure class=\"plot\" id");
    assert_eq!(figures, plots, "every plot inline, in order");
    for id in &plots {
        let svg = files.html.with_file_name("plots").join(format!("{id}.svg"));
        let text = std::fs::read_to_string(&svg).expect("plot file");
        assert!(text.starts_with("<svg") && text.contains("<rect"), "{id}");
        assert!(
            md.contains(&format!("(plots/{id}.svg)")),
            "{id} linked from report.md"
        );
    }
    assert_eq!(html.matches("<svg").count(), 16);
    for s in &sections {
        assert!(s.not_measured.is_none(), "seed {} measured", s.seed.id);
        assert!(
            !s.tables.is_empty() && !s.targets.is_empty(),
            "seed {}",
            s.seed.id
        );
        let setup: Vec<&str> = s.setup.iter().map(|(k, _)| k.as_str()).collect();
        for want in ["machine", "file", "device", "queue", "kernel allows"] {
            assert!(
                setup.contains(&want),
                "seed {} set-up lacks {want}: {setup:?}",
                s.seed.id
            );
        }
    }
    assert!(section(&sections, "loop")
        .setup
        .iter()
        .any(|(k, _)| k == "qemu-nbd"));
    let fuse = section(&sections, "fuse");
    assert_eq!(fuse.seed.id, "004");
    assert!(fuse.setup.iter().any(|(k, _)| k == "libfuse"));
    assert_eq!(fuse.plots.len(), 1, "the fuse section's plot");
    assert!(html.contains("<figure class=\"plot\" id=\"s004-direct\""));
    let titles: Vec<&str> = fuse.tables.iter().map(|t| t.title.as_str()).collect();
    assert!(
        titles.iter().any(|t| t.starts_with("O_DIRECT"))
            && titles.iter().any(|t| t.starts_with("Buffered")),
        "{titles:?}"
    );
    let (reread, own) =
        AllResults::read(&files.json, &EXPERIMENTS).expect("results.json reads back");
    assert_eq!(own, None, "a whole run, not one experiment's file");
    assert_eq!(
        serde_json::to_value(&reread).ok(),
        serde_json::to_value(&r).ok(),
        "results.json is the run"
    );
}

/// One numeric cell of the HTML: its JSON pointer, its exact value and its text.
struct NumCell<'a> {
    pointer: &'a str,
    value: f64,
    text: &'a str,
}

fn num_cells(html: &str) -> Vec<NumCell<'_>> {
    let start = "<td class=\"num\" data-json=\"";
    html.match_indices(start)
        .map(|(i, _)| {
            let rest = &html[i + start.len()..];
            let (pointer, rest) = rest.split_once('"').expect("pointer ends");
            let rest = rest
                .strip_prefix(" data-value=\"")
                .expect("data-value follows");
            let (value, rest) = rest.split_once('"').expect("value ends");
            let text = rest[1..].split("</td>").next().expect("cell ends");
            NumCell {
                pointer,
                value: value.parse().expect("data-value is a number"),
                text,
            }
        })
        .collect()
}

#[test]
fn numbers_in_the_html_equal_those_in_the_json() {
    let json = fixture_json();
    let (_dir, files) = write_report(&fixture());
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    let cells = num_cells(&html);
    assert!(cells.len() > 150, "only {} figures", cells.len());
    for c in &cells {
        let in_json = json
            .pointer(c.pointer)
            .and_then(|v| v.as_f64())
            .unwrap_or_else(|| panic!("{} is not a number in the JSON", c.pointer));
        assert_eq!(c.value, in_json, "{}", c.pointer);
        // The text shows the same number, rounded: a percentage of a share, or the figure.
        let first = c.text.split_whitespace().next().unwrap_or("");
        let (shown, scale) = match first.strip_suffix('%') {
            Some(p) => (p, 100.0),
            None => (first, 1.0),
        };
        let shown: f64 = shown.parse().unwrap_or_else(|_| panic!("{:?}", c.text));
        let decimals = first
            .split('.')
            .nth(1)
            .map_or(0, |d| d.trim_end_matches('%').len());
        let tolerance = 0.5 * 10f64.powi(-(decimals as i32)) + 1e-9;
        assert!(
            (shown - in_json * scale).abs() <= tolerance,
            "{}: shows {} for {in_json}",
            c.pointer,
            c.text
        );
    }
    // The headline figures of every experiment are among them.
    let pointers: Vec<&str> = cells.iter().map(|c| c.pointer).collect();
    let has = |p: String| assert!(pointers.contains(&p.as_str()), "{p} not shown");
    for (ri, row) in json["writev"]["rows"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for ei in 0..row["engines"].as_array().map_or(0, Vec::len) {
            has(format!("/writev/rows/{ri}/engines/{ei}/mb_s/median"));
        }
    }
    for (ci, c) in json["loop"]["cells"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        let field = if c["job_name"].as_str().unwrap_or("").starts_with("4k") {
            "iops"
        } else {
            "mb_s"
        };
        has(format!("/loop/cells/{ci}/{field}/median"));
    }
    for (wi, w) in json["nowait"]["workloads"]
        .as_array()
        .into_iter()
        .flatten()
        .enumerate()
    {
        for ci in 0..w["cells"].as_array().map_or(0, Vec::len) {
            has(format!("/nowait/workloads/{wi}/cells/{ci}/latency/p50_us"));
        }
    }
    for vi in 0..json["callcost"]["variants"].as_array().map_or(0, Vec::len) {
        has(format!("/callcost/variants/{vi}/ns/median"));
    }
    // Every FUSE cell with a figure shows it; a failed one shows its error instead.
    let fuse_cells = json["fuse"]["cells"].as_array().expect("fuse cells");
    assert!(fuse_cells.len() >= 8, "fuse measured: {}", fuse_cells.len());
    for (ci, c) in fuse_cells.iter().enumerate() {
        if c["mb_s"].is_object() {
            has(format!("/fuse/cells/{ci}/mb_s/median"));
        } else {
            let error = c["error"].as_str().expect("a failed cell says why");
            assert!(html.contains(&format!("<td>error: {error}</td>")), "{c}");
        }
    }
}

#[test]
fn a_missing_experiment_says_not_measured_and_why() {
    let mut r = fixture();
    r.reports.remove("loop");
    r.reports.remove("writev");
    r.not_measured = vec![NotMeasured {
        experiment: "loop".into(),
        reason: "fio is not installed (it is the NBD client of this experiment)".into(),
        failed: false,
    }];
    let sections = sections(&r);
    assert_eq!(sections.len(), 6);
    assert_eq!(
        sections[1].not_measured.as_deref(),
        Some("fio is not installed (it is the NBD client of this experiment)")
    );
    assert_eq!(
        sections[0].not_measured.as_deref(),
        Some("not in this results file")
    );
    assert!(sections[1].plots.is_empty() && sections[1].tables.is_empty());
    let (_dir, files) = write_report(&r);
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    assert!(html.contains("Not measured: fio is not installed"));
    assert_eq!(files.plots, 16 - 1 - 6);
    let rows = report::summary_rows(&sections);
    let loop_rows: Vec<_> = rows.iter().filter(|x| x.seed == "001").collect();
    assert_eq!(loop_rows.len(), 1);
    assert_eq!(loop_rows[0].vecio, "not measured");
    let text = text::summary(&r, &sections);
    assert!(
        text.contains("not measured: loop (fio is not installed"),
        "{text}"
    );
    // An empty document still gives every section, each saying why.
    let empty = common::sections(&AllResults::default());
    assert!(empty.len() == 6 && empty.iter().all(|s| s.not_measured.is_some()));
}

#[test]
fn summary_marks_misses() {
    let r = fixture();
    let sections = sections(&r);
    let rows = report::summary_rows(&sections);
    assert!(rows.iter().any(|x| x.seed == "000") && rows.iter().any(|x| x.seed == "004"));
    let text = text::summary(&r, &sections);
    let misses = rows
        .iter()
        .filter(|x| x.target.as_ref().is_some_and(|t| !t.met))
        .count();
    assert_eq!(text.matches("[MISS]").count(), misses);
    assert!(text.contains(&format!("{misses} missed")), "{text}");
    // One screen of a 50-line terminal: one table per unit costs a header and a rule each.
    assert!(text.lines().count() < 50, "one screen:\n{text}");
    // A derived cell carries no JSON pointer.
    assert!(matches!(
        Cell::derived(1.0, "1.00x".into()),
        Cell::Num { json: None, .. }
    ));
}

#[test]
fn page_cache_shares_are_never_negative_nor_above_all() {
    let sections = sections(&fixture());
    let cache = section(&sections, "loop")
        .tables
        .iter()
        .find(|t| t.title.starts_with("Page-cache growth"))
        .expect("the page-cache table");
    let mut noise = 0;
    for row in &cache.rows {
        for c in row.iter().skip(2) {
            let shown = c.shown();
            assert!(!shown.starts_with('-') || shown == "-", "negative: {shown}");
            if let Some(pct) = shown.strip_suffix('%') {
                let v: f64 = pct.parse().expect("a share");
                assert!((0.0..=100.0).contains(&v), "impossible share: {shown}");
            }
            noise += usize::from(shown.contains("noise"));
        }
    }
    // The fixture holds runs where the machine's Cached fell: they are said to be noise.
    assert!(noise > 0);
}

/// One unit per column: every summary row says its unit, its figures are bare numbers (the
/// unit is in the column header), rows are grouped by unit in the HTML, and no peer cell is a
/// ratio or one of vecio's own engines.
#[test]
fn summary_has_one_unit_per_column() {
    let r = fixture();
    let sections = sections(&r);
    let rows = report::summary_rows(&sections);
    let bare = |s: &str| {
        s == "-"
            || s == "not measured"
            || s.starts_with("error")
            || s.split([' ', '(', ')', '>', '.', '+', '-', '~'])
                .filter(|w| !w.is_empty())
                .all(|w| w.chars().all(|c| c.is_ascii_digit()) || w == "buffered")
    };
    for row in rows {
        assert!(
            report::summary::UNITS.contains(&row.unit),
            "{}: unit {}",
            row.result,
            row.unit
        );
        assert!(
            bare(&row.seed_figure),
            "{}: seed {}",
            row.result,
            row.seed_figure
        );
        assert!(bare(&row.vecio), "{}: vecio {}", row.result, row.vecio);
        let no_figure = ["-", "none works", "libfuse not measured"];
        if no_figure.iter().any(|p| row.peer.starts_with(p)) {
            continue;
        }
        let peer_figure = row.peer.split(' ').next().unwrap_or("");
        assert!(bare(peer_figure), "{}: peer {}", row.result, row.peer);
        {
            assert!(
                report::verdict::is_real_peer(&row.peer),
                "{}: peer {}",
                row.result,
                row.peer
            );
            assert_ne!(row.unit, "x", "a ratio has no peer: {}", row.result);
        }
    }
    let (_dir, files) = write_report(&r);
    let html = std::fs::read_to_string(&files.html).expect("index.html");
    let units: Vec<&str> = html
        .split("<table class=\"summary-table\" data-unit=\"")
        .skip(1)
        .filter_map(|t| t.split('"').next())
        .collect();
    let mut distinct = units.clone();
    distinct.dedup();
    assert_eq!(units, distinct, "one table per unit");
    assert!(units.contains(&"MB/s") && units.contains(&"x"), "{units:?}");
    assert!(html.contains("<th>vecio, MB/s</th>"));
}

/// tokio reached its section, summary rows, seed entry and compare lines through the registry
/// alone: the report, `compare` and the recorded `--json` of one tokio run all find it.
#[test]
fn tokio_has_its_section_summary_and_compare_lines() {
    let r = fixture();
    let sections = sections(&r);
    let tokio = section(&sections, "tokio");
    assert_eq!(
        (tokio.seed.id, tokio.anchor.as_str()),
        ("002", "seed-002-tokio")
    );
    assert_eq!(tokio.tables[0].rows.len(), 9, "three files by three paths");
    assert_eq!(tokio.targets.len(), 3);
    assert_eq!(tokio.summary.len(), 2);
    assert!(
        tokio.summary.iter().all(|row| row.target.is_some()),
        "{:?}",
        tokio.summary
    );
    assert_eq!(tokio.summary[1].unit, "MB/s");
    assert!(tokio.summary[1].peer.ends_with("tokio::fs"), "a real peer");
    let nowait = section(&sections, "nowait");
    assert!(
        nowait.tables.iter().all(|t| !t.title.contains("tokio")),
        "nowait's section no longer carries tokio's table"
    );
    let one = compare::load(&common::tokio_path(), &EXPERIMENTS).expect("tokio's --json loads");
    let lines = compare::metrics(&one, &EXPERIMENTS);
    assert_eq!(lines.len(), 18, "MiB/s and mean latency of nine cells");
    assert!(lines.iter().all(|m| m.experiment == "tokio"));
    assert!(lines.iter().any(|m| m.name == "cached / vecio-tokio MiB/s"));
    let all = compare::metrics(&r, &EXPERIMENTS);
    assert!(all.iter().filter(|m| m.experiment == "tokio").count() == 18);
    let text = text::section(tokio);
    assert!(
        text.contains("vecio-tokio") && text.contains("Targets:"),
        "{text}"
    );
}
