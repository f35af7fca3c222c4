//! A run's set-up, recorded once beside its figures (the machine, `vecio info --json` of the
//! scratch directory, the tools' versions), and a section's set-up lines.

use std::path::Path;
use std::process::Command;

use serde::{Deserialize, Serialize};

use crate::harness::meta::{self, RunMeta};
use crate::harness::server::first_line;
use vecio_host::table::fmt_bytes;
use vecio_host::{pagecache, system};

/// A tool the experiments use, and its version (`None`: not installed).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Tool {
    /// Its name (`fio`, `qemu-nbd`, `nbdkit`, `libnbd`, `libfuse`, `valgrind`).
    pub name: String,
    /// Its version line.
    pub version: Option<String>,
}

/// Where and with what a run happened.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Setup {
    /// When the run started, UTC (`YYYY-MM-DD HH:MM:SS`).
    pub date_utc: String,
    /// The vecio command line.
    pub command: String,
    /// vecio's version.
    pub vecio_version: String,
    /// Kernel release.
    pub kernel: Option<String>,
    /// CPUs the run could use.
    pub cpus: usize,
    /// The machine's memory, bytes.
    pub mem_total: Option<u64>,
    /// `vecio info --json` of the scratch directory, as it printed it.
    pub scratch: Option<serde_json::Value>,
    /// Peer tools and their versions.
    pub tools: Vec<Tool>,
}

impl Setup {
    /// Collects the facts for a run whose scratch files live in `dir`; `exe` is the vecio
    /// binary (`vecio info` runs from it).
    pub fn collect(dir: &Path, exe: &Path) -> Setup {
        Setup {
            date_utc: meta::utc_now(),
            command: std::env::args().collect::<Vec<_>>().join(" "),
            vecio_version: env!("CARGO_PKG_VERSION").to_string(),
            kernel: system::kernel_release().ok(),
            cpus: system::cpu_count(),
            mem_total: pagecache::meminfo_bytes("MemTotal").ok(),
            scratch: vecio_info(exe, dir),
            tools: tools(),
        }
    }
}

/// The peer tools' versions.
pub fn tools() -> Vec<Tool> {
    let version = |name: &str| first_line(name, &["--version"]);
    let libfuse = libfuse_version()
        .map(|v| format!("libfuse {v}"))
        .or_else(|| version("fusermount3"));
    [
        ("fio", version("fio")),
        ("qemu-nbd", version("qemu-nbd")),
        ("nbdkit", version("nbdkit")),
        ("libnbd", libnbd_version()),
        ("libfuse", libfuse),
        ("valgrind", version("valgrind")),
    ]
    .into_iter()
    .map(|(name, version)| Tool {
        name: name.to_string(),
        version,
    })
    .collect()
}

/// libfuse's version: `pkg-config --modversion fuse3`.
pub fn libfuse_version() -> Option<String> {
    first_line("pkg-config", &["--modversion", "fuse3"])
}

/// libnbd's version, from `nbdinfo --version` (which prints its own line, then libnbd's).
fn libnbd_version() -> Option<String> {
    let out = Command::new("nbdinfo").arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.lines()
        .find(|l| l.starts_with("libnbd"))
        .map(|l| l.trim().to_string())
}

/// `vecio info --json DIR`, parsed; `None` when it failed (the report then shows no scratch
/// facts).
fn vecio_info(exe: &Path, dir: &Path) -> Option<serde_json::Value> {
    let out = Command::new(exe)
        .arg("info")
        .arg("--json")
        .arg(dir)
        .output();
    let out = out.ok().filter(|o| o.status.success())?;
    serde_json::from_slice(&out.stdout).ok()
}

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
        let (mem, offset) = (&a["mem"], &a["offset"]);
        let source = a["source"].as_str().unwrap_or("?");
        let text = format!("alignment {mem} B in memory, {offset} B on disk (from {source})");
        out.push(("direct I/O".to_string(), text));
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

/// The "set-up here" lines of a report section whose experiment recorded `meta` (machine, file,
/// filesystem, device and queue, what the kernel allowed on the scratch directory), with
/// `extra` lines about its own settings and the versions of `tools`.
pub fn lines(
    setup: Option<&Setup>,
    meta: &RunMeta,
    extra: Vec<(&str, String)>,
    tools: &[&str],
) -> Vec<(String, String)> {
    let mem = setup
        .and_then(|s| s.mem_total)
        .map_or(String::new(), |m| format!(", {} of memory", fmt_bytes(m)));
    let mut out: Vec<(String, String)> = vec![
        (
            "measured".into(),
            format!("{} UTC: {}", meta.date_utc, meta.command),
        ),
        (
            "machine".into(),
            format!("kernel {}, {} CPUs{mem}", meta.kernel, meta.cpus),
        ),
        ("file".into(), format!("{} on {}", meta.file, meta.fs)),
        ("device".into(), meta.device.clone()),
    ];
    if let Some(i) = setup.and_then(|s| s.scratch.as_ref()) {
        out.extend(scratch_lines(i));
    }
    out.extend(extra.into_iter().map(|(k, v)| (k.to_string(), v)));
    for t in tools {
        let version = setup
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
