//! wrk as the load: one thread, N connections, whole seconds, a Lua script that picks each
//! path at random and prints wrk's figures as one JSON line.

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

use anyhow::{bail, Context, Result};
use serde::Deserialize;

/// The marker before the JSON line the script prints.
const MARK: &str = "vecio-wrk ";

/// What one wrk run measured.
#[derive(Debug, Clone, Copy, Deserialize)]
pub struct Load {
    /// Requests completed.
    pub requests: u64,
    /// How long wrk ran, µs.
    pub duration_us: u64,
    /// Bytes read (headers and bodies).
    pub bytes: u64,
    /// Median latency, µs.
    pub p50_us: f64,
    /// 99th percentile latency, µs.
    pub p99_us: f64,
    /// Responses with a status of 400 or more.
    pub status: u64,
    /// Connect, read, write errors and timeouts, summed.
    pub socket: u64,
}

impl Load {
    /// Requests per second.
    pub fn rps(&self) -> f64 {
        self.requests as f64 / (self.duration_us.max(1) as f64 / 1e6)
    }

    /// MiB/s of responses (headers and bodies).
    pub fn mib_s(&self) -> f64 {
        self.bytes as f64 / (self.duration_us.max(1) as f64 / 1e6) / (1 << 20) as f64
    }
}

/// The installed wrk's version line, or why it cannot run.
pub fn version() -> Result<String, String> {
    // wrk prints its version with the usage text and exits 1.
    match Command::new("wrk").arg("--version").output() {
        Ok(o) => Ok(String::from_utf8_lossy(&o.stdout)
            .lines()
            .next()
            .unwrap_or("wrk")
            .trim()
            .to_string()),
        Err(e) => Err(format!(
            "vecio bench tokio --http loads the servers with wrk, which cannot run here ({e}); \
             scripts/setup installs it (apt-get install wrk)"
        )),
    }
}

/// Writes the Lua script for `urls` into `dir` and returns its path.
pub fn script(dir: &Path, name: &str, urls: &[String]) -> Result<PathBuf> {
    let mut lua = String::from("local paths = {\n");
    for u in urls {
        lua.push_str(&format!("  {u:?},\n"));
    }
    lua.push_str(
        r#"}
local reqs = {}
init = function(args)
  for i, p in ipairs(paths) do reqs[i] = wrk.format("GET", p) end
end
request = function()
  return reqs[math.random(#reqs)]
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'vecio-wrk {"requests":%d,"duration_us":%d,"bytes":%d,"p50_us":%.1f,"p99_us":%.1f,"status":%d,"socket":%d}\n',
    summary.requests, summary.duration, summary.bytes,
    latency:percentile(50.0), latency:percentile(99.0),
    e.status, e.connect + e.read + e.write + e.timeout))
end
"#,
    );
    let path = dir.join(format!("{name}.lua"));
    std::fs::write(&path, lua).with_context(|| format!("writing {}", path.display()))?;
    Ok(path)
}

/// wrk's duration: whole seconds (it takes no fractions), at least one.
pub fn seconds(runtime: Duration) -> u64 {
    runtime.as_secs_f64().ceil().max(1.0) as u64
}

/// `wrk -t1 -cCONNECTIONS -dSECONDSs --latency -s SCRIPT http://ADDR/`, parsed.
pub fn run(addr: SocketAddr, script: &Path, connections: usize, secs: u64) -> Result<Load> {
    let mut cmd = Command::new("wrk");
    cmd.args(["-t1", &format!("-c{connections}"), &format!("-d{secs}s")])
        .args(["--latency", "--timeout", "10s", "-s"])
        .arg(script)
        .arg(format!("http://{addr}/"));
    crate::harness::cleanup::die_with_parent(&mut cmd);
    let out = cmd.output().context("cannot run wrk")?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    if !out.status.success() {
        bail!(
            "wrk failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    parse(&stdout).with_context(|| format!("wrk's output: {}", stdout.trim()))
}

/// The figures of the script's line in wrk's output.
pub fn parse(stdout: &str) -> Result<Load> {
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix(MARK))
        .context("no line of figures from the script")?;
    Ok(serde_json::from_str(line)?)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_scripts_line() {
        let out = "Running 1s test @ http://127.0.0.1:1/\n  1 threads and 32 connections\n\
                   vecio-wrk {\"requests\":2000,\"duration_us\":1000000,\"bytes\":4194304,\
                   \"p50_us\":120.0,\"p99_us\":900.5,\"status\":0,\"socket\":0}\n";
        let l = parse(out).unwrap();
        assert_eq!(l.requests, 2000);
        assert!((l.rps() - 2000.0).abs() < 1e-9);
        assert!((l.mib_s() - 4.0).abs() < 1e-9);
        assert_eq!(l.p99_us, 900.5);
        assert!(parse("Running 1s test\n").is_err());
    }

    #[test]
    fn whole_seconds() {
        assert_eq!(seconds(Duration::from_millis(500)), 1);
        assert_eq!(seconds(Duration::from_millis(2100)), 3);
        assert_eq!(seconds(Duration::from_secs(5)), 5);
    }
}
