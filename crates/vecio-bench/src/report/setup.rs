//! The "set-up here" lines of a section: machine, file, filesystem, device and queue, what the
//! kernel allowed on the scratch directory, and the peer tools' versions.

use crate::experiments::results::AllResults;
use crate::harness::meta::RunMeta;
use vecio_host::table::fmt_bytes;

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

/// The probes of `vecio info --json`, in the order it prints them, with their names.
const PROBES: [(&str, &str); 7] = [
    ("o_direct", "O_DIRECT"),
    ("nowait_read", "RWF_NOWAIT read"),
    ("nowait_write", "RWF_NOWAIT write"),
    ("dsync_write", "RWF_DSYNC write"),
    ("dontcache_read", "RWF_DONTCACHE read"),
    ("dontcache_write", "RWF_DONTCACHE write"),
    ("io_uring", "io_uring"),
];

/// The lines `vecio info --json` of the scratch directory gives (`info`): its device's queue
/// settings, its direct-I/O alignment and which flags the kernel allowed.
fn scratch_lines(info: &serde_json::Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    if let Some(q) = info.pointer("/device/queue").and_then(|q| q.as_object()) {
        let shown: Vec<String> = QUEUE_SHOWN
            .iter()
            .filter_map(|k| Some(format!("{k} {}", q.get(*k)?.as_str()?)))
            .collect();
        out.push(("queue".to_string(), shown.join(", ")));
    }
    if let Some(a) = info.get("dio_align").filter(|a| !a.is_null()) {
        out.push((
            "direct I/O".to_string(),
            format!(
                "alignment {} B in memory, {} B on disk (from {})",
                a["mem"],
                a["offset"],
                a["source"].as_str().unwrap_or("?")
            ),
        ));
    }
    let flags: Vec<String> = PROBES
        .iter()
        .map(|(key, name)| {
            let outcome = info
                .pointer(&format!("/capabilities/{key}/outcome"))
                .and_then(|o| o.as_str());
            let verdict = match outcome {
                Some("works" | "would_block") => "yes",
                Some("refused") => "no",
                Some("failed") => "failed",
                _ => "not probed",
            };
            format!("{name} {verdict}")
        })
        .collect();
    out.push(("kernel allows".to_string(), flags.join(", ")));
    out
}

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
        .map_or(String::new(), |m| format!(", {} of memory", fmt_bytes(m)));
    push(
        "machine",
        format!("kernel {}, {} CPUs{mem}", meta.kernel, meta.cpus),
    );
    push("file", format!("{} on {}", meta.file, meta.fs));
    push("device", meta.device.clone());
    if let Some(i) = r.setup.as_ref().and_then(|s| s.scratch.as_ref()) {
        out.extend(scratch_lines(i));
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
