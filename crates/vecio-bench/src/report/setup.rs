//! The "set-up here" lines of a section: machine, file, filesystem, device and queue, what the
//! kernel allowed on the scratch directory, and the peer tools' versions.

use crate::experiments::results::AllResults;
use crate::harness::meta::RunMeta;
use crate::info::{self, Outcome};

/// Queue settings worth a line in a report.
const QUEUE_SHOWN: [&str; 8] = [
    "scheduler",
    "nr_requests",
    "logical_block_size",
    "physical_block_size",
    "max_sectors_kb",
    "read_ahead_kb",
    "rotational",
    "write_cache",
];

/// The set-up lines for a section whose experiment recorded `meta`, with `extra` lines about
/// its own settings and the versions of `tools`.
pub(crate) fn lines(
    r: &AllResults,
    meta: &RunMeta,
    extra: Vec<(String, String)>,
    tools: &[&str],
) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    let mut push = |k: &str, v: String| out.push((k.to_string(), v));
    push(
        "measured",
        format!("{} UTC: {}", meta.date_utc, meta.command),
    );
    let mem = r
        .setup
        .as_ref()
        .and_then(|s| s.mem_total)
        .map_or(String::new(), |m| {
            format!(", {} of memory", info::fmt_bytes(m))
        });
    push(
        "machine",
        format!("kernel {}, {} CPUs{mem}", meta.kernel, meta.cpus),
    );
    push("file", format!("{} on {}", meta.file, meta.fs));
    push("device", meta.device.clone());
    let scratch = r.setup.as_ref().and_then(|s| s.scratch.as_ref());
    if let Some(q) = scratch.and_then(|i| i.device.as_ref()).map(|d| &d.queue) {
        let shown: Vec<String> = QUEUE_SHOWN
            .iter()
            .filter_map(|k| q.get(*k).map(|v| format!("{k} {v}")))
            .collect();
        push("queue", shown.join(", "));
    }
    if let Some(i) = scratch {
        if let Some(a) = &i.dio_align {
            push(
                "direct I/O",
                format!(
                    "alignment {} B in memory, {} B on disk (from {})",
                    a.mem, a.offset, a.source
                ),
            );
        }
        let flags: Vec<String> = i
            .capabilities
            .named()
            .iter()
            .map(|(name, p)| {
                let verdict = match p.outcome {
                    Outcome::Works | Outcome::WouldBlock => "yes",
                    Outcome::Refused => "no",
                    Outcome::Failed => "failed",
                    Outcome::NotProbed => "not probed",
                };
                format!("{name} {verdict}")
            })
            .collect();
        push("kernel allows", flags.join(", "));
    }
    for (k, v) in extra {
        out.push((k, v));
    }
    for t in tools {
        let version = r
            .setup
            .as_ref()
            .and_then(|s| s.tools.iter().find(|x| x.name == *t))
            .map(|x| x.version.clone().unwrap_or_else(|| "not installed".into()))
            .unwrap_or_else(|| match *t {
                "fio" => meta.fio.clone().unwrap_or_else(|| "not installed".into()),
                _ => "not recorded".into(),
            });
        out.push((t.to_string(), version));
    }
    out
}
