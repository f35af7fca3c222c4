//! Seed 001, the loop device with direct and async I/O: its section and summary rows.

use anyhow::Result;

use crate::experiments::loopdev::{self, Job, LoopReport, Subject};
use crate::experiments::results::AllResults;
use crate::report::fmt::{change, change_num, num, ratio_cell, summary_cell};
use crate::report::plot::{self, BarGroup, BarValue, Bars, Line, Lines};
use crate::report::summary::{at_least, at_most, SummaryRow};
use crate::report::{seeds, setup, why_missing, Cell, DataTable, Plot, Section};

const MIB: f64 = (1u64 << 20) as f64;

/// The section.
pub(crate) fn section(r: &AllResults) -> Result<Section> {
    let seed = seeds::seed("loop");
    let Some(l) = &r.loop_dev else {
        return Ok(Section::not_measured(seed, why_missing(r, "loop")));
    };
    let mut extra = vec![(
        "workload".to_string(),
        format!(
            "{} MiB image, {} in flight, {:.1} s per measurement, {} repetition(s)",
            l.size >> 20,
            l.depth,
            l.runtime_s,
            l.repeat
        ),
    )];
    extra.extend(loopdev::tls::section::setup_line(&l.tls));
    let tools = ["fio", "libnbd", "qemu-nbd", "nbdkit"];
    let mut s = Section::measured(seed, setup::lines(r, &l.meta, extra, &tools));
    s.tables.push(throughput(l));
    s.tables.push(cache(l));
    s.tables.push(beside_seed(l));
    s.tables.extend(loopdev::tls::section::table(&l.tls));
    s.plots = plots(l)?;
    s.targets = loopdev::targets(l);
    for k in &l.skipped {
        s.notes
            .push(format!("skipped {}: {}", k.subject.name(), k.reason));
    }
    Ok(s)
}

/// The throughput bars (4 KiB and 128 KiB jobs) and each job's page-cache curve.
fn plots(l: &LoopReport) -> Result<Vec<Plot>> {
    let mut plots = Vec::new();
    for (id, title, iops) in [
        (
            "s001-iops",
            "4 KiB random jobs: IOPS per server (seed 001)",
            true,
        ),
        (
            "s001-mbs",
            "128 KiB sequential jobs: MB/s per server (seed 001)",
            false,
        ),
    ] {
        plots.push(Plot {
            id: id.into(),
            title: title.into(),
            caption: "Bars: median, whiskers: lowest and highest repetition. Dark dashes: vecio's \
                      buffered server times the seed's dio+aio/base ratio (16 jobs), where the \
                      seed puts the direct server."
                .into(),
            svg: plot::bars(&bars(l, iops))?,
        });
    }
    for (ji, job) in Job::ALL.iter().enumerate() {
        plots.push(Plot {
            id: format!("s001-cache-{ji}"),
            title: format!("Page cache over time: {}", job.name()),
            caption: "The image's resident pages while fio ran (the image is evicted before each \
                      measurement), last repetition."
                .into(),
            svg: plot::lines(&cache_curves(l, *job))?,
        });
    }
    Ok(plots)
}

fn unit(job: Job) -> &'static str {
    if job.in_iops() {
        "IOPS"
    } else {
        "MB/s"
    }
}

fn throughput(l: &LoopReport) -> DataTable {
    let mut t = DataTable::new(
        "Throughput: IOPS (4 KiB) or MB/s (128 KiB), median ± relative std dev",
        &[
            "job",
            "served by",
            "figure",
            "vs qemu-nbd",
            "vs limit",
            "server ctx/req",
            "server CPU µs/req",
        ],
    );
    for (ci, c) in l.cells.iter().enumerate() {
        let (field, prec) = if c.job.in_iops() {
            ("iops", 0)
        } else {
            ("mb_s", 1)
        };
        let med = |f: &dyn Fn(&loopdev::Sample) -> Option<f64>, prec: usize| {
            c.median_of(f)
                .map_or(Cell::text("-"), |v| Cell::derived(v, format!("{v:.prec$}")))
        };
        t.rows.push(vec![
            Cell::text(format!("{} ({})", c.job.name(), unit(c.job))),
            Cell::text(&c.name),
            summary_cell(c.figure(), prec, format!("/loop/cells/{ci}/{field}")),
            ratio_cell(l.ratio(c.job, c.subject, Subject::QemuNbd)),
            ratio_cell(l.ratio(c.job, c.subject, Subject::FioDirect)),
            med(&|s| s.ctx_per_req, 2),
            med(&|s| s.cpu_us_per_req, 1),
        ]);
    }
    t
}

fn cache(l: &LoopReport) -> DataTable {
    let mut t = DataTable::new(
        "Page-cache growth over each measurement (median): the image's resident pages and the \
         system's Cached, MiB and % of the bytes fio moved",
        &[
            "job",
            "served by",
            "image MiB",
            "% of moved",
            "Cached MiB",
            "moved MiB",
        ],
    );
    for c in &l.cells {
        // A growth below zero is the rest of the machine freeing pages meanwhile, and a share
        // above 100% is readahead beyond the bytes moved: both are said, not printed as if
        // they were measurements of the server.
        let med = |f: &dyn Fn(&loopdev::Sample) -> f64, scale: f64, suffix: &str| {
            c.median_of(|s| Some(f(s))).map_or(Cell::text("-"), |v| {
                let v = v / scale;
                let text = if v < -0.05 {
                    format!("0 (noise: fell {:.1})", -v)
                } else if suffix == "%" && v > 100.0 {
                    format!(">100% ({v:.0}%: readahead)")
                } else {
                    format!("{:.1}{suffix}", v.max(0.0))
                };
                Cell::derived(v, text)
            })
        };
        t.rows.push(vec![
            Cell::text(c.job.name()),
            Cell::text(&c.name),
            med(&|s| s.image_growth as f64, MIB, ""),
            med(&|s| s.image_growth_pct, 1.0, "%"),
            med(&|s| s.cached_growth as f64, MIB, ""),
            med(&|s| s.bytes, MIB, ""),
        ]);
    }
    t
}

fn ctx(l: &LoopReport, s: Subject, job: Job) -> Option<f64> {
    l.cell(s, job)?.median_of(|x| x.ctx_per_req)
}

fn beside_seed(l: &LoopReport) -> DataTable {
    let mut t = DataTable::new(
        "Beside the seed: vecio nbd direct (none+uring) against vecio nbd buffered \
         (writeback+uring), as the seed's loop dio+aio against its base",
        &[
            "job",
            "seed dio+aio/base (16 / 1 jobs)",
            "direct/buffered here",
            "seed ctx switches",
            "ctx/req direct vs buffered",
        ],
    );
    let (d, b) = (Subject::VecioDirect, Subject::VecioBuffered);
    for job in Job::ALL {
        let [(_, b16, a16), (_, b1, a1)] = job.seed_iops();
        let ctx_change = match (ctx(l, d, job), ctx(l, b, job)) {
            (Some(x), Some(y)) if y > 0.0 => Cell::derived(x / y - 1.0, change(x / y - 1.0)),
            _ => Cell::text("-"),
        };
        t.rows.push(vec![
            Cell::text(job.name()),
            Cell::text(format!("{:.2}x / {:.2}x", a16 / b16, a1 / b1)),
            ratio_cell(l.ratio(job, d, b)),
            Cell::text(job.seed_ctx_change().map_or("-".into(), |(x, y)| {
                format!("{} / {}", change(x), change(y))
            })),
            ctx_change,
        ]);
    }
    t
}

fn bars(l: &LoopReport, iops: bool) -> Bars {
    let subjects: Vec<Subject> = Subject::ALL
        .into_iter()
        .filter(|s| l.cells.iter().any(|c| c.subject == *s))
        .collect();
    let groups = Job::ALL
        .into_iter()
        .filter(|j| j.in_iops() == iops)
        .map(|job| {
            let [(_, base, after), _] = job.seed_iops();
            let buffered = l
                .cell(Subject::VecioBuffered, job)
                .map(|c| c.figure().median);
            BarGroup {
                label: job.name().to_string(),
                values: subjects
                    .iter()
                    .map(|&s| {
                        let v = BarValue::of(l.cell(s, job)?.figure());
                        let mark = (s == Subject::VecioDirect)
                            .then(|| buffered.map(|b| b * after / base))
                            .flatten();
                        Some(v.marked(mark))
                    })
                    .collect(),
            }
        })
        .collect();
    Bars {
        title: if iops {
            format!("4 KiB random jobs, depth {}: IOPS", l.depth)
        } else {
            format!("128 KiB sequential jobs, depth {}: MB/s", l.depth)
        },
        y_label: if iops { "IOPS".into() } else { "MB/s".into() },
        series: subjects.iter().map(|s| s.name().to_string()).collect(),
        groups,
        mark_label: "buffered x the seed's dio+aio/base".into(),
    }
}

fn cache_curves(l: &LoopReport, job: Job) -> Lines<'static> {
    let lines = l
        .cells
        .iter()
        .filter(|c| c.job == job && !c.cache_curve.is_empty())
        .map(|c| Line {
            name: c.name.clone(),
            points: c
                .cache_curve
                .iter()
                .map(|p| (p.t_s, p.file_resident as f64 / MIB))
                .collect(),
        })
        .collect();
    Lines {
        title: format!("{}: image pages cached", job.name()),
        x_label: "seconds".into(),
        y_label: "MiB resident".into(),
        lines,
        log_y: false,
        x_fmt: &secs,
    }
}

fn secs(x: &f64) -> String {
    format!("{x:.1}")
}

/// The seed's results beside vecio's.
pub(crate) fn summary(r: &AllResults) -> Vec<SummaryRow> {
    let seed = "001";
    let Some(l) = &r.loop_dev else {
        return vec![SummaryRow::missing(
            seed,
            "4k randread: direct vs qemu-nbd",
            "IOPS",
            "-",
        )];
    };
    let job = Job::RandRead4k;
    let iops = |s| l.cell(s, job).map(|c| c.iops.median);
    let fmt_iops = |v: Option<f64>, who: &str| {
        v.map_or("-".into(), |v| format!("{v:.0} {who}").trim().to_string())
    };
    let mut out = Vec::new();
    // The seed's own 1.01x compares its loop dio+aio against its buffered base, not against
    // another server: it stands beside that comparison in the section's "beside the seed"
    // table, not here.
    for (peer, who, seed_figure, want) in [
        (Subject::QemuNbd, "qemu-nbd", "-", 1.5),
        (Subject::FioDirect, "fio", "-", 0.8),
    ] {
        let ratio = l.ratio(job, Subject::VecioDirect, peer);
        out.push(SummaryRow {
            seed,
            result: format!("4k randread: direct vs {who}"),
            unit: "IOPS",
            seed_figure: seed_figure.into(),
            vecio: fmt_iops(iops(Subject::VecioDirect), ""),
            peer: fmt_iops(iops(peer), who),
            ratio,
            target: at_least(ratio, want, "x"),
        });
    }
    out.extend(cache_rows(l, seed));
    out.extend(loopdev::tls::section::summary(&l.tls));
    out
}

/// The page-cache and context-switch rows: how much of the image the worst job left cached
/// (vecio direct beside qemu-nbd), and direct against buffered context switches.
fn cache_rows(l: &LoopReport, seed: &'static str) -> Vec<SummaryRow> {
    let job = Job::RandRead4k;
    let mut out = Vec::new();
    let worst = |s: Subject| {
        Job::ALL
            .iter()
            .filter_map(|&j| l.cell(s, j)?.median_of(|x| Some(x.image_growth_pct)))
            .reduce(f64::max)
    };
    let direct = worst(Subject::VecioDirect);
    out.push(SummaryRow {
        seed,
        result: "image cached, % of bytes moved (worst job)".into(),
        unit: "%",
        seed_figure: "~10 (>55 buffered)".into(),
        vecio: num(direct, 1),
        peer: worst(Subject::QemuNbd).map_or("-".into(), |v| format!("{v:.1} qemu-nbd")),
        ratio: None,
        target: at_most(direct, 2.0, "%"),
    });
    let change_of = |a: Subject, b: Subject| match (ctx(l, a, job), ctx(l, b, job)) {
        (Some(x), Some(y)) if y > 0.0 => Some(x / y - 1.0),
        _ => None,
    };
    out.push(SummaryRow::own(
        seed,
        "4k randread ctx switches: direct vs buffered".into(),
        "% change",
        "-16".into(),
        change_of(Subject::VecioDirect, Subject::VecioBuffered).map_or("-".into(), change_num),
        None,
    ));
    out
}
