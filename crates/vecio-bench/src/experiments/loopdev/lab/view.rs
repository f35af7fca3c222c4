//! The lab rows in seed 001's section: their table, set-up line, targets and figures. Under
//! TCG emulation the table shows ratios only: an emulated CPU's absolute figures say nothing
//! about a real machine, while devices measured in the same guest still compare.

use super::{Device, LabCell, LabReport, JOBS};
use crate::experiment::table::{Cell, DataTable};
use crate::experiment::Experiment;
use crate::experiment::{Metric, Target};
use crate::experiments::loopdev::Loop;

/// vecio ublk against rublk's loop target: at least this ratio on every job.
pub const WANT_VS_RUBLK: f64 = 1.0;

/// vecio ublk against the kernel's loop device with direct I/O: at least this ratio.
pub const WANT_VS_LOOP_DIO: f64 = 0.9;

/// Page-cache growth of vecio's devices: at most this percentage of the bytes moved.
pub const MAX_CACHED_PCT: f64 = 2.0;

/// The table's title, which says when only the ratios count.
fn title(l: &LabReport) -> String {
    let how = if l.emulated {
        "emulated (TCG): ratios only"
    } else {
        "IOPS (4 KiB) or MB/s (128 KiB), median"
    };
    format!(
        "Real block devices in the lab (kernel {}, {} vCPUs, {} MiB backing file on ext4, fio \
         io_uring O_DIRECT, {} in flight, {} s x {}): {how}",
        l.kernel, l.cpus, l.size_mib, l.depth, l.runtime_s, l.repeat
    )
}

/// The table; `None` when the lab rows were not measured.
pub(crate) fn table(l: &LabReport) -> Option<DataTable> {
    if l.cells.is_empty() {
        return None;
    }
    let vs = |c: &LabCell, d| Cell::ratio(l.ratio(c.job, c.device, d));
    let table = DataTable::over(title(l), "/loop/lab/cells", &l.cells)
        .col("job", |_, c| format!("{} ({})", c.job.name(), c.job.unit()))
        .col("device", |_, c| &c.name)
        .col_if(!l.emulated, "figure", |at, c| {
            at.summary(c.figure(), c.job.prec(), c.job.field())
        })
        .col("vs loop dio", |_, c| vs(c, Device::LoopDio))
        .col("vs rublk", |_, c| {
            Some(vs(c, Device::RublkLoop)).filter(|_| c.device == Device::VecioUblk)
        })
        .col("page cache, % of moved", |_, c| {
            Cell::maybe(c.median_of(|s| s.cached_growth_pct.max(0.0)), 1)
        })
        .col("ctx/req vs loop dio", |_, c| {
            Cell::ratio(l.paired(c.job, c.device, Device::LoopDio, |s| s.ctx_per_req))
        });
    Some(table.done())
}

/// The set-up line of the lab rows.
pub(crate) fn setup_line(l: &LabReport) -> Option<(&'static str, String)> {
    if l.cells.is_empty() {
        return None;
    }
    let devices: Vec<String> = l
        .devices
        .iter()
        .map(|d| format!("{} {}: {}", d.device.name(), d.path, d.detail))
        .collect();
    Some((
        "lab rows",
        format!(
            "`{}` ({:.0} s): one boot of kernel {} under qemu{}; page cache: the guest's Cached \
             (the backing file's pages dropped before each measurement); ctx: the guest's /proc/stat ctxt; tools: \
             {}; devices: {}; results in {}",
            l.command,
            l.seconds,
            l.kernel,
            if l.emulated { " (TCG)" } else { " (KVM)" },
            l.versions.join(", "),
            devices.join("; "),
            l.results
        ),
    ))
}

/// The notes: devices and measurements left out, and why.
pub(crate) fn notes(l: &LabReport) -> Vec<String> {
    l.skipped
        .iter()
        .map(|s| format!("lab: skipped {}: {}", s.device.name(), s.reason))
        .collect()
}

/// The targets of the lab rows, per job: vecio ublk against rublk's loop target and against
/// the kernel's loop device with direct I/O; then the page-cache growth of vecio's devices at
/// worst. A target whose device was not measured is left out.
pub fn targets(l: &LabReport) -> Vec<Target> {
    let mut out = Vec::new();
    let v = Device::VecioUblk;
    for (peer, want) in [
        (Device::RublkLoop, WANT_VS_RUBLK),
        (Device::LoopDio, WANT_VS_LOOP_DIO),
    ] {
        for job in JOBS {
            if let Some(r) = l.ratio(job, v, peer) {
                let (job, peer) = (job.name(), peer.name());
                let text = format!("lab, {job}: vecio ublk = {r:.2}x {peer} (want >= {want}x)");
                out.push(Target::new(text, r >= want));
            }
        }
    }
    for d in [Device::VecioUblk, Device::VecioNbd] {
        let worst = JOBS
            .iter()
            .filter_map(|&j| Some((j, l.cell(d, j)?.median_of(|s| s.cached_growth_pct)?)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((job, pct)) = worst {
            let (d, job) = (d.name(), job.name());
            let text = format!(
                "lab: {d} page-cache growth {pct:.2}% of the bytes moved at worst ({job}) (want <= \
                 {MAX_CACHED_PCT}%)"
            );
            out.push(Target::new(text, pct <= MAX_CACHED_PCT));
        }
    }
    out
}

/// The figures `compare` sees: each cell's headline figure under KVM; under TCG each device
/// against the loop device with direct I/O, since only ratios mean anything there.
pub(crate) fn metrics(l: &LabReport) -> Vec<Metric> {
    let mut out = Vec::new();
    for c in &l.cells {
        if !l.emulated {
            let name = format!("lab {} / {} {}", c.job.name(), c.name, c.job.unit());
            out.push(Metric::of(Loop::KEY, name, c.figure(), true));
        } else if let Some(r) = l.ratio(c.job, c.device, Device::LoopDio) {
            out.push(Metric {
                experiment: Loop::KEY,
                name: format!("lab {} / {} vs loop dio", c.job.name(), c.name),
                value: r,
                spread: None,
                higher_is_better: true,
            });
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::loopdev::lab::parse::parse;

    const FIXTURE: &str = include_str!("../../../../tests/fixtures/loop-lab.jsonl");

    #[test]
    fn emulated_runs_show_ratios_only() {
        let mut l = parse(FIXTURE).expect("the fixture parses");
        l.emulated = true;
        let t = table(&l).expect("a table");
        assert!(
            t.title.contains("emulated (TCG): ratios only"),
            "{}",
            t.title
        );
        assert!(!t.header.iter().any(|h| h == "figure"));
        let shown: Vec<&str> = t.rows.iter().flatten().map(Cell::shown).collect();
        assert!(shown.contains(&"1.00x"), "{shown:?}");
        l.emulated = false;
        let t = table(&l).expect("a table");
        assert!(t.header.iter().any(|h| h == "figure"));
        let Cell::Num { json, .. } = &t.rows[0][2] else {
            panic!("a figure: {:?}", t.rows[0][2]);
        };
        assert_eq!(json.as_deref(), Some("/loop/lab/cells/0/iops/median"));
    }

    #[test]
    fn targets_follow_the_ratios() {
        let l = parse(FIXTURE).expect("the fixture parses");
        let t = targets(&l);
        let mut want = Vec::new();
        for (peer, x) in [
            (Device::RublkLoop, WANT_VS_RUBLK),
            (Device::LoopDio, WANT_VS_LOOP_DIO),
        ] {
            for job in JOBS {
                want.extend(l.ratio(job, Device::VecioUblk, peer).map(|r| r >= x));
            }
        }
        let met: Vec<bool> = t.iter().take(want.len()).map(|t| t.met).collect();
        assert_eq!(met, want);
        let vs_dio = t
            .iter()
            .filter(|t| t.text.contains("loop, direct-io=on"))
            .count();
        assert_eq!(vs_dio, JOBS.len());
        assert!(t
            .iter()
            .any(|t| t.text.contains("vecio nbd + nbd-client page-cache")));
        assert!(targets(&LabReport::default()).is_empty());
        assert!(table(&LabReport::default()).is_none());
    }
}
