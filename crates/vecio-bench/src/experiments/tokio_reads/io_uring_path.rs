//! The fourth path of `vecio bench tokio`: `tokio::fs` on tokio's own io_uring driver, in a
//! helper program built with `--cfg tokio_unstable` (docs/tokio.md, "The fourth path").

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Deserialize;

use super::run::{Files, Sample};
use super::TokioOptions;
use crate::harness::server::find_program;

/// The path's name in the tables.
pub const PATH: &str = "tokio::fs+io_uring";

/// A ready-built helper binary named by the user (skips the build).
pub const HELPER_ENV: &str = "VECIO_TOKIO_IO_URING";

/// The helper's binary name.
const BIN: &str = "tokio-io-uring-reads";

/// The helper's manifest, in the source tree this bench was built from.
const MANIFEST: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/helpers/tokio-io-uring/Cargo.toml"
);

/// What the helper prints.
#[derive(Deserialize)]
struct Outcome {
    #[serde(flatten)]
    sample: Sample,
    errors: u64,
    first_error: Option<String>,
    io_uring: bool,
}

/// The target directory of the helper's build: `tokio-io-uring/` in the cargo target directory
/// this bench runs from (`target/release/vecio-bench`), else in the temporary directory. Cargo
/// marks a target directory it made with `CACHEDIR.TAG`, and every one it builds in with
/// `.rustc_info.json` (a directory made before cargo ran, as make test's logs make it, has only
/// the latter).
fn target_dir(exe: &Path) -> PathBuf {
    let cargo_target = exe
        .parent()
        .and_then(Path::parent)
        .filter(|t| t.join("CACHEDIR.TAG").is_file() || t.join(".rustc_info.json").is_file());
    match cargo_target {
        Some(t) => t.join("tokio-io-uring"),
        None => std::env::temp_dir().join("vecio-tokio-io-uring"),
    }
}

/// The helper's binary: `$VECIO_TOKIO_IO_URING`, else built (once; cargo does nothing when it
/// is up to date) with `RUSTFLAGS="--cfg tokio_unstable"`. `Err(why)` when it cannot be had,
/// which the path's row then says.
pub fn helper(exe: &Path) -> Result<PathBuf, String> {
    if let Some(p) = std::env::var_os(HELPER_ENV) {
        let p = PathBuf::from(p);
        let missing = format!("{HELPER_ENV}={}: no such file", p.display());
        return if p.is_file() { Ok(p) } else { Err(missing) };
    }
    if !Path::new(MANIFEST).is_file() {
        return Err(format!(
            "the helper's sources ({MANIFEST}) are not on this machine; build it there and \
             name it with {HELPER_ENV}"
        ));
    }
    if find_program("cargo").is_none() {
        return Err("cargo is not installed to build the helper".into());
    }
    let target = target_dir(exe);
    eprintln!(
        "bench tokio: building {BIN} (tokio's io_uring, --cfg tokio_unstable) into {}",
        target.display()
    );
    let out = Command::new("nice")
        .args(["-n", "10", "cargo", "build", "--release"])
        .args(["--locked", "--quiet", "--manifest-path"])
        .arg(MANIFEST)
        .arg("--target-dir")
        .arg(&target)
        .env("RUSTFLAGS", "--cfg tokio_unstable")
        .env_remove("CARGO_ENCODED_RUSTFLAGS")
        .output()
        .map_err(|e| format!("cannot run cargo: {e}"))?;
    let bin = target.join("release").join(BIN);
    if out.status.success() && bin.is_file() {
        return Ok(bin);
    }
    let err = String::from_utf8_lossy(&out.stderr);
    let last = err.lines().find(|l| l.contains("error")).unwrap_or("");
    Err(format!(
        "building {BIN} failed ({}): {}",
        out.status,
        last.trim()
    ))
}

/// One measurement through the helper: `Err(why)` when it fails or any read failed (tokio's
/// O_DIRECT reads go into its own buffer, which has no alignment: EINVAL where the device wants
/// aligned memory), or when tokio did not use io_uring after all.
pub(super) fn measure(
    helper: &Path,
    scenario: &str,
    files: &Files,
    opts: &TokioOptions,
) -> Result<Sample, String> {
    let mut cmd = Command::new(helper);
    cmd.args(["--scenario", scenario, "--tasks"])
        .arg(opts.tasks.to_string())
        .arg("--runtime-ms")
        .arg(opts.common.runtime.as_millis().max(1).to_string())
        .arg("--medium")
        .arg(files.medium.path())
        .arg("--large")
        .arg(files.large.path());
    if opts.current_thread {
        cmd.arg("--current-thread");
    }
    crate::harness::cleanup::die_with_parent(&mut cmd);
    let out = cmd
        .output()
        .map_err(|e| format!("cannot run {}: {e}", helper.display()))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        return Err(format!("{BIN} failed ({}): {}", out.status, err.trim()));
    }
    let o: Outcome = serde_json::from_slice(&out.stdout)
        .map_err(|e| format!("{BIN} printed no figures: {e}"))?;
    if !o.io_uring {
        return Err(
            "tokio did not open an io_uring (the kernel refused it?): its reads went \
                    to the blocking pool"
                .into(),
        );
    }
    if o.errors > 0 {
        let why = o.first_error.unwrap_or_default();
        let hint = if why.contains("os error 22") && scenario != "cached" {
            " (O_DIRECT into tokio's own unaligned buffer: tokio::fs has no aligned reads)"
        } else {
            ""
        };
        return Err(format!("{} reads failed: {why}{hint}", o.errors));
    }
    Ok(o.sample)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_helper_is_built_in_the_cargo_target_directory_the_bench_runs_from() {
        let target = tempfile::tempdir().unwrap();
        let exe = target.path().join("release").join("vecio-bench");
        let elsewhere = std::env::temp_dir().join("vecio-tokio-io-uring");
        assert_eq!(target_dir(&exe), elsewhere, "not a cargo target directory");
        std::fs::write(target.path().join(".rustc_info.json"), "{}").unwrap();
        assert_eq!(target_dir(&exe), target.path().join("tokio-io-uring"));
    }
}
