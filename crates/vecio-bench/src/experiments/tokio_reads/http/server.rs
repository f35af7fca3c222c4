//! vecio-tokio's example server (`examples/serve`) as a process on a loopback port it picks,
//! found beside the bench or where `VECIO_SERVE` says.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{Context, Result};

use crate::harness::server::ServerProcess;

/// Names the example server's binary when it is not beside the bench.
pub const SERVE_ENV: &str = "VECIO_SERVE";

/// The two servers: `--via` of the example, as the tables name them.
pub const SERVERS: [&str; 2] = ["vecio", "servedir"];

/// The example's binary: `$VECIO_SERVE`, else `examples/serve` or `serve` beside `exe` (the
/// bench).
pub fn locate(exe: &Path) -> Result<PathBuf> {
    if let Some(p) = std::env::var_os(SERVE_ENV) {
        let p = PathBuf::from(p);
        anyhow::ensure!(p.is_file(), "{SERVE_ENV}={}: no such file", p.display());
        return Ok(p);
    }
    let dir = exe.parent().unwrap_or(Path::new("."));
    [dir.join("examples/serve"), dir.join("serve")]
        .into_iter()
        .find(|p| p.is_file())
        .with_context(|| {
            format!(
                "vecio bench tokio --http serves files with vecio-tokio's example server, which \
                 is not built: no {} (build it with `cargo build --release -p vecio-tokio \
                 --example serve`, or name it with {SERVE_ENV}=PATH)",
                dir.join("examples/serve").display()
            )
        })
}

/// A started server and where it listens.
pub struct Running {
    /// `vecio` or `servedir`.
    pub via: &'static str,
    /// Where it listens.
    pub addr: SocketAddr,
    /// The process (stopped when dropped).
    pub process: ServerProcess,
}

/// Starts `serve ROOT --addr 127.0.0.1:0 --via VIA --workers WORKERS`, its output in
/// `log_dir/serve-VIA.log`, and waits until it listens.
pub fn start(
    bin: &Path,
    root: &Path,
    via: &'static str,
    workers: usize,
    log_dir: &Path,
) -> Result<Running> {
    let mut cmd = Command::new(bin);
    cmd.arg(root)
        .args(["--addr", "127.0.0.1:0", "--via", via, "--workers"])
        .arg(workers.to_string());
    let log = log_dir.join(format!("serve-{via}.log"));
    let (process, addr) = ServerProcess::start_tcp(cmd, &log)
        .with_context(|| format!("starting the example server --via {via}"))?;
    Ok(Running { via, addr, process })
}
