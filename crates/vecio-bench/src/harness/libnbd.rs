//! libnbd's clients (`nbdcopy`, a Python driver) for the reads fio's `nbd` engine cannot make
//! (docs/report.md, "The harness").

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

use crate::harness::rusage::Usage;
use crate::harness::server::{find_program, first_line};

/// The random-read driver, run as `python3 -c SCRIPT SOCKET TLS_DIR BS DEPTH SECONDS`.
const RANDREAD: &str = include_str!("nbd_randread.py");

/// What one client run did.
#[derive(Debug, Clone, Copy, PartialEq, Deserialize)]
pub struct ClientRun {
    /// Reads completed.
    pub requests: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Seconds the reads took.
    pub seconds: f64,
    /// The client's CPU time (user + system) over those seconds.
    pub cpu_s: f64,
}

/// Where a client connects: a Unix socket, and for TLS the client's certificate directory.
#[derive(Debug, Clone, Copy)]
pub struct Endpoint<'a> {
    /// The server's socket.
    pub socket: &'a Path,
    /// `Some(DIR)`: TLS required, `DIR/ca-cert.pem` the CA; `None`: plain NBD.
    pub tls: Option<&'a Path>,
}

impl Endpoint<'_> {
    /// The libnbd URI: `nbd+unix:///?socket=S`, or `nbds+unix:///?socket=S&tls-certificates=D`.
    pub fn uri(&self) -> String {
        let socket = percent_encode(&self.socket.to_string_lossy());
        match self.tls {
            None => format!("nbd+unix:///?socket={socket}"),
            Some(dir) => format!(
                "nbds+unix:///?socket={socket}&tls-certificates={}",
                percent_encode(&dir.to_string_lossy())
            ),
        }
    }
}

/// Percent-encodes everything but unreserved characters and `/`, for a URI's query.
fn percent_encode(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

/// Why the libnbd clients cannot run here, if they cannot: nbdcopy, or python3 with libnbd's
/// binding, is missing.
pub fn clients_missing() -> Option<String> {
    if find_program("nbdcopy").is_none() {
        return Some("nbdcopy is not installed (libnbd-bin; scripts/setup installs it)".into());
    }
    if python_with_nbd().is_none() {
        return Some(
            "python3 with libnbd's binding is not installed (python3-libnbd; scripts/setup \
             installs it)"
                .into(),
        );
    }
    None
}

/// A python3 that imports `nbd`: the system's `/usr/bin/python3` first (Debian's
/// python3-libnbd installs there), then the first `python3` in `PATH`.
pub fn python_with_nbd() -> Option<PathBuf> {
    let system = PathBuf::from("/usr/bin/python3");
    [Some(system), find_program("python3")]
        .into_iter()
        .flatten()
        .find(|p| {
            Command::new(p)
                .args(["-c", "import nbd"])
                .output()
                .is_ok_and(|o| o.status.success())
        })
}

/// The clients' versions: nbdcopy's first `--version` line, and `python3 VERSION, libnbd
/// VERSION` for the driver; `unknown` where a tool does not answer.
pub fn versions(python: &Path) -> Vec<String> {
    let driver = "import sys, nbd\n\
                  print('python3 %s, libnbd %s' % (sys.version.split()[0], nbd.NBD().get_version()))";
    let python = python.to_string_lossy();
    [
        first_line("nbdcopy", &["--version"]),
        first_line(&python, &["-c", driver]),
    ]
    .map(|v| v.unwrap_or_else(|| "unknown".into()))
    .into()
}

/// Reads the whole export once with `nbdcopy ... URI null:`: one connection, `requests` reads
/// of `request_size` bytes in flight, extents ignored (every byte read, whatever the server
/// says about holes). `export_len` is the export's size; the time is nbdcopy's whole run,
/// connection and handshake included, the CPU that of the nbdcopy process.
pub fn nbdcopy_read(
    to: Endpoint<'_>,
    export_len: u64,
    request_size: u64,
    requests: u32,
) -> Result<ClientRun> {
    let mut cmd = Command::new("nbdcopy");
    cmd.arg("--connections=1")
        .arg(format!("--requests={requests}"))
        .arg(format!("--request-size={request_size}"))
        .arg("--no-extents")
        .arg(to.uri())
        .arg("null:");
    let (_, seconds, usage) = run_timed(cmd, "nbdcopy")?;
    Ok(ClientRun {
        requests: export_len.div_ceil(request_size),
        bytes: export_len,
        seconds,
        cpu_s: usage.cpu_s(),
    })
}

/// Keeps `depth` random reads of `bs` bytes in flight for `seconds` with the Python driver
/// (`python` from [`python_with_nbd`]); the time and CPU are the driver's own, from its first
/// read to its last completion.
pub fn random_reads(
    python: &Path,
    to: Endpoint<'_>,
    bs: u64,
    depth: u32,
    seconds: f64,
) -> Result<ClientRun> {
    let mut cmd = Command::new(python);
    cmd.arg("-c").arg(RANDREAD).arg(to.socket);
    cmd.arg(to.tls.map_or(Path::new(""), |d| d));
    cmd.args([bs.to_string(), depth.to_string(), seconds.to_string()]);
    let (out, _, _) = run_timed(cmd, "the libnbd random-read driver")?;
    let line = out.lines().last().unwrap_or_default();
    serde_json::from_str(line)
        .with_context(|| format!("the random-read driver printed {line:?}, not its figures"))
}

/// Runs `cmd` to its end (it dies with the bench); its stdout, wall-clock seconds and usage.
fn run_timed(mut cmd: Command, what: &str) -> Result<(String, f64, Usage)> {
    crate::harness::cleanup::die_with_parent(&mut cmd);
    let before = Usage::children().context("getrusage")?;
    let t0 = Instant::now();
    let out = cmd
        .output()
        .with_context(|| format!("cannot start {what}"))?;
    let seconds = t0.elapsed().as_secs_f64();
    let usage = Usage::children().context("getrusage")?.delta(&before);
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        let tail = crate::harness::server::diagnostics(&err, 3, true);
        bail!("{what} failed ({}): {tail}", out.status);
    }
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        seconds,
        usage,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uris_name_the_socket_and_the_certificates() {
        let plain = Endpoint {
            socket: Path::new("/tmp/a b/s.sock"),
            tls: None,
        };
        assert_eq!(plain.uri(), "nbd+unix:///?socket=/tmp/a%20b/s.sock");
        let tls = Endpoint {
            socket: Path::new("/tmp/s.sock"),
            tls: Some(Path::new("/tmp/c&d")),
        };
        assert_eq!(
            tls.uri(),
            "nbds+unix:///?socket=/tmp/s.sock&tls-certificates=/tmp/c%26d"
        );
    }
}
