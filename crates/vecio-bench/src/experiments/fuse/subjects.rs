//! What the FUSE experiment measures through: the directory itself, `vecio fuse` in several
//! modes, and libfuse's passthrough examples built here from libfuse3-dev.

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

/// Name of libfuse's `passthrough_hp` with its passthrough (when given a binary).
pub const HP_PASSTHROUGH: &str = "passthrough_hp";
/// Name of libfuse's `passthrough_hp` without its passthrough.
pub const HP_NO_PASSTHROUGH: &str = "passthrough_hp --nopassthrough";

/// Where the libfuse examples' sources are.
pub const LIBFUSE_EXAMPLES: &str = "/usr/share/doc/libfuse3-dev/examples";

/// FUSE requests by opcode, with their total under `"total"`.
pub type Counts = std::collections::BTreeMap<String, u64>;

/// One way to reach the file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum Kind {
    /// The backing directory, no FUSE.
    Native,
    /// `vecio fuse` with these extra arguments.
    Vecio {
        /// Arguments after `vecio fuse SRC MNT`.
        args: Vec<String>,
        /// Another `vecio` binary than the bench's (a baseline measured beside it).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        exe: Option<PathBuf>,
    },
    /// A libfuse example binary.
    Libfuse {
        /// Example name (`passthrough`, `passthrough_fh`, `passthrough_ll`).
        example: String,
    },
}

/// A subject: a name and how it is reached.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Subject {
    /// Name in tables.
    pub name: String,
    /// What it is.
    pub kind: Kind,
}

impl Subject {
    /// The backing directory itself, named `name`.
    pub fn native(name: &str) -> Subject {
        let kind = Kind::Native;
        Subject {
            name: name.into(),
            kind,
        }
    }

    /// `vecio fuse SRC MNT ARGS`, named `name`.
    pub fn vecio(name: &str, args: &[&str]) -> Subject {
        Subject::vecio_of(name, None, args)
    }

    /// `EXE fuse SRC MNT ARGS` with another `vecio` binary, named `name`.
    pub fn vecio_at(name: &str, exe: &Path, args: &[&str]) -> Subject {
        Subject::vecio_of(name, Some(exe.to_path_buf()), args)
    }

    fn vecio_of(name: &str, exe: Option<PathBuf>, args: &[&str]) -> Subject {
        let args = args.iter().map(|s| s.to_string()).collect();
        let kind = Kind::Vecio { args, exe };
        Subject {
            name: name.into(),
            kind,
        }
    }

    /// libfuse's `example`, named `name`.
    pub fn libfuse(name: String, example: &str) -> Subject {
        let example = example.to_string();
        let kind = Kind::Libfuse { example };
        Subject { name, kind }
    }
}

/// Mounts every subject over `src` at `dir/mntI`, the data file `file(I)` in it.
pub fn mount_all(
    subjects: &[Subject],
    exe: &Path,
    libfuse: &[(String, PathBuf)],
    src: &Path,
    file: impl Fn(usize) -> String,
    dir: &Path,
) -> Result<Vec<Mounted>> {
    let mount = |(i, s): (usize, &Subject)| {
        let mp = dir.join(format!("mnt{i}"));
        mount(s, exe, libfuse, src, &file(i), &mp).with_context(|| s.name.clone())
    };
    subjects.iter().enumerate().map(mount).collect()
}

/// Unmounts every subject, saying what failed as `who`.
pub fn stop_all(mounted: Vec<Mounted>, who: &str) {
    for m in mounted {
        if let Err(e) = m.stop() {
            eprintln!("{who}: {e:#}");
        }
    }
}

/// The last `SIGUSR1` report of a `vecio fuse` server (`vecio: holding ...; served requests
/// N (...)`) and how many it printed, read from its standard error by a thread that passes
/// every other line on.
#[derive(Default)]
struct Reports {
    last: std::sync::Mutex<(u64, String)>,
    changed: std::sync::Condvar,
}

/// A mounted subject; unmounts and stops its server when dropped.
pub struct Mounted {
    /// Path of the data file through this subject.
    pub file: PathBuf,
    mountpoint: Option<PathBuf>,
    child: Option<Child>,
    /// `vecio fuse`'s reports (none for other subjects).
    reports: Option<std::sync::Arc<Reports>>,
    /// The server, registered to be stopped if the run is stopped.
    _tracked: Option<crate::harness::cleanup::Tracked>,
}

impl Mounted {
    /// The server's process id (none for the native subject).
    pub fn server_pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The requests the server served so far, by opcode (`LOOKUP`, ...), with their total
    /// under `"total"`: asked with `SIGUSR1` (`vecio fuse` only; `None` for other subjects or
    /// when no report came within 5 s).
    pub fn requests(&self) -> Option<Counts> {
        let reports = self.reports.as_ref()?;
        let pid = self.server_pid()?;
        let guard = reports.last.lock().ok()?;
        let seen = guard.0;
        // SAFETY: kill(2) on a child we own; no memory is involved.
        unsafe { libc::kill(pid as i32, libc::SIGUSR1) };
        let (guard, _) = reports
            .changed
            .wait_timeout_while(guard, Duration::from_secs(5), |r| r.0 == seen)
            .ok()?;
        if guard.0 == seen {
            return None;
        }
        parse_requests(&guard.1)
    }

    /// Unmounts and waits for the server to exit.
    pub fn stop(mut self) -> Result<()> {
        self.stop_inner()
    }

    fn stop_inner(&mut self) -> Result<()> {
        if let Some(m) = self.mountpoint.take() {
            if let Some(child) = &self.child {
                // vecio fuse unmounts itself on SIGTERM; libfuse examples on fusermount3 -u.
                // SAFETY: kill(2) on a child we own; no memory is involved.
                unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
            }
            let mut fusermount = Command::new("fusermount3");
            let _ = fusermount.arg("-u").arg(&m).stderr(Stdio::null()).status();
            if !within_10s(|| !is_mounted(&m)) {
                let _ = Command::new("umount").arg("-l").arg(&m).status();
            }
        }
        if let Some(mut child) = self.child.take() {
            let mut exited = Ok(None);
            if !within_10s(|| {
                exited = child.try_wait();
                !matches!(exited, Ok(None))
            }) {
                let _ = child.kill();
                let _ = child.wait();
                bail!("server did not exit after unmount");
            }
            exited?;
        }
        Ok(())
    }
}

impl Drop for Mounted {
    fn drop(&mut self) {
        let _ = self.stop_inner();
    }
}

/// The counts of a report's `requests N (LOOKUP a, CREATE b, ...)`, the total as `"total"`.
pub fn parse_requests(line: &str) -> Option<Counts> {
    let rest = &line[line.find("requests ")? + "requests ".len()..];
    let (total, ops) = rest.split_once(" (").unwrap_or((rest, ""));
    let mut out = Counts::new();
    out.insert("total".to_string(), total.trim().parse().ok()?);
    for op in ops
        .trim_end_matches(')')
        .split(", ")
        .filter(|o| !o.is_empty())
    {
        let (name, n) = op.rsplit_once(' ')?;
        out.insert(name.to_string(), n.parse().ok()?);
    }
    Some(out)
}

/// True when `path` is a mount point (listed in /proc/self/mountinfo).
pub fn is_mounted(path: &Path) -> bool {
    crate::harness::cleanup::mounts_under(path)
        .iter()
        .any(|m| m == path)
}

/// The libfuse examples that can be built here (gcc and pkg-config fuse3 present), built into
/// `cache` once; or why not.
pub fn build_libfuse_examples(cache: &Path) -> std::result::Result<Vec<(String, PathBuf)>, String> {
    let src = Path::new(LIBFUSE_EXAMPLES);
    if !src.join("passthrough_ll.c").exists() {
        return Err(format!(
            "{LIBFUSE_EXAMPLES} not found (install libfuse3-dev)"
        ));
    }
    let flags = Command::new("pkg-config")
        .args(["--cflags", "--libs", "fuse3"])
        .output()
        .map_err(|e| format!("pkg-config: {e}"))?;
    if !flags.status.success() {
        return Err("pkg-config does not know fuse3".into());
    }
    let flags = String::from_utf8_lossy(&flags.stdout).into_owned();
    std::fs::create_dir_all(cache).map_err(|e| format!("{}: {e}", cache.display()))?;
    let mut built = Vec::new();
    for ex in ["passthrough", "passthrough_fh", "passthrough_ll"] {
        let out = cache.join(ex);
        if !out.exists() {
            // Built under a name of its own, then renamed: a build that was stopped halfway
            // never leaves a truncated binary for the next run to trust.
            let partial = cache.join(format!(".{ex}.{}", std::process::id()));
            let st = Command::new("gcc")
                .args(["-O2", "-Wall", "-o"])
                .arg(&partial)
                .arg(src.join(format!("{ex}.c")))
                .args(flags.split_whitespace())
                .stderr(Stdio::null())
                .status()
                .map_err(|e| format!("gcc: {e}"))?;
            if !st.success() {
                let _ = std::fs::remove_file(&partial);
                return Err(format!("gcc could not build {ex}.c"));
            }
            std::fs::rename(&partial, &out).map_err(|e| format!("{}: {e}", out.display()))?;
        }
        built.push((ex.to_string(), out));
    }
    Ok(built)
}

/// Mounts `subject` over `src` (holding `file_name`) at `mountpoint`.
pub fn mount(
    subject: &Subject,
    exe: &Path,
    libfuse: &[(String, PathBuf)],
    src: &Path,
    file_name: &str,
    mountpoint: &Path,
) -> Result<Mounted> {
    let mut m = Mounted {
        file: mountpoint.join(file_name),
        mountpoint: Some(mountpoint.to_path_buf()),
        child: None,
        reports: None,
        _tracked: None,
    };
    let mut args = String::new();
    let mut cmd = match &subject.kind {
        Kind::Native => {
            (m.file, m.mountpoint) = (src.join(file_name), None);
            return Ok(m);
        }
        Kind::Vecio {
            args: a,
            exe: other,
        } => {
            args = a.join(" ");
            let mut cmd = Command::new(other.as_deref().unwrap_or(exe));
            cmd.arg("fuse").arg(src).arg(mountpoint).args(a);
            cmd
        }
        Kind::Libfuse { example } => libfuse_command(example, libfuse, src, mountpoint)?,
    };
    std::fs::create_dir_all(mountpoint)?;
    crate::harness::cleanup::die_with_parent(&mut cmd);
    if let Kind::Libfuse { example } = &subject.kind {
        let child = cmd.stdout(Stdio::null()).stderr(Stdio::null()).spawn();
        let child = child.with_context(|| format!("starting {example}"))?;
        m._tracked = Some(crate::harness::cleanup::track_child(child.id()));
        m.child = Some(child);
        if !within_10s(|| is_mounted(mountpoint)) {
            let _ = m.stop_inner();
            bail!("{example} did not mount within 10 s");
        }
        return Ok(m);
    }
    // vecio fuse: its "mounted" line waited for, its reports read from its standard error.
    let child = cmd.stdout(Stdio::piped()).stderr(Stdio::piped()).spawn();
    let mut child = child.context("starting vecio fuse")?;
    let tracked = crate::harness::cleanup::track_child(child.id());
    let reports = std::sync::Arc::new(Reports::default());
    // Its standard error read by a thread: `SIGUSR1` reports go to `reports`, every other line
    // on to this process's standard error.
    if let Some(stderr) = child.stderr.take() {
        let reports = reports.clone();
        std::thread::spawn(move || {
            for line in BufReader::new(stderr).lines().map_while(Result::ok) {
                if !line.starts_with("vecio: holding ") {
                    eprintln!("{line}");
                } else if let Ok(mut last) = reports.last.lock() {
                    *last = (last.0 + 1, line);
                    reports.changed.notify_all();
                }
            }
        });
    }
    let stdout = child.stdout.take().context("vecio fuse stdout")?;
    let mut line = String::new();
    BufReader::new(stdout).read_line(&mut line)?;
    if !line.starts_with("mounted ") {
        let _ = child.kill();
        let _ = child.wait();
        bail!("vecio fuse {args}: did not mount");
    }
    m.child = Some(child);
    m.reports = Some(reports);
    m._tracked = Some(tracked);
    Ok(m)
}

/// The command line of libfuse's `example` over `src` at `mountpoint`.
fn libfuse_command(
    example: &str,
    libfuse: &[(String, PathBuf)],
    src: &Path,
    mountpoint: &Path,
) -> Result<Command> {
    let bin = libfuse
        .iter()
        .find(|(n, _)| n == example)
        .map(|(_, p)| p.clone())
        .with_context(|| format!("{example} was not built"))?;
    let mut cmd = Command::new(bin);
    // passthrough_hp takes SOURCE MOUNTPOINT, the low-level example `-o source=`; the
    // high-level examples mirror "/", so libfuse's subdir module narrows them to the source:
    // a mount of the whole root inside a scratch directory would expose every file of the
    // machine to whatever walks that directory (a removal stopped half-way, say).
    if example.starts_with(HP_PASSTHROUGH) {
        cmd.arg("--foreground");
        if example == HP_NO_PASSTHROUGH {
            cmd.arg("--nopassthrough");
        }
        cmd.arg(src);
    } else if example == "passthrough_ll" {
        cmd.args(["-f", "-o"])
            .arg(format!("source={}", src.display()));
    } else {
        let subdir = format!("modules=subdir,subdir={}", src.display());
        cmd.args(["-f", "-o"]).arg(subdir);
    }
    cmd.arg(mountpoint);
    Ok(cmd)
}

/// Polls `done` every 20 ms for up to 10 s; whether it came true.
fn within_10s(mut done: impl FnMut() -> bool) -> bool {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        if Instant::now() > deadline {
            return false;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_report_gives_its_requests() {
        let line = "vecio: holding nodes 1 (descriptors 1), handles 0 files + 0 directories, \
            open files 0, ring slots 0, passthrough backings 0; served requests 12 (LOOKUP 2, \
            BATCH_FORGET 10)";
        let r = parse_requests(line).unwrap();
        assert_eq!(r["total"], 12);
        assert_eq!(r["LOOKUP"], 2);
        assert_eq!(r["BATCH_FORGET"], 10);
        assert_eq!(parse_requests("served requests 0 ()").unwrap()["total"], 0);
        assert!(parse_requests("vecio: holding nodes 1").is_none());
    }
}
