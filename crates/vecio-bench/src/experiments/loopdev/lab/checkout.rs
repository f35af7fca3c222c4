//! What `vecio bench loop --lab` needs on the host: the source checkout whose `scripts/lab` boots
//! the guest, qemu, and rublk (a peer, built once into the lab's cache).

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Result};

use crate::harness::server::find_program;

/// Names the checkout when the bench is not run from inside it.
pub const CHECKOUT_ENV: &str = "VECIO_CHECKOUT";

/// The rublk release measured.
pub const RUBLK_VERSION: &str = "0.2.15";

/// The guest script, relative to the checkout.
const SCRIPT: &str = "scripts/lab.d/bench/loop.sh";

/// A vecio source checkout with the lab in it.
#[derive(Debug, Clone)]
pub struct Checkout {
    /// Its top directory.
    pub root: PathBuf,
    /// The guest script of the loop rows.
    pub script: PathBuf,
}

impl Checkout {
    /// The checkout named by `VECIO_CHECKOUT`, else the first directory above this program or
    /// the current directory that has `scripts/lab` and the guest script.
    pub fn find() -> Result<Checkout> {
        if let Some(dir) = std::env::var_os(CHECKOUT_ENV) {
            let root = PathBuf::from(dir);
            return Checkout::at(&root).ok_or_else(|| {
                anyhow::anyhow!(
                    "{CHECKOUT_ENV}={}: no scripts/lab and {SCRIPT} there (it must name a vecio \
                     source checkout)",
                    root.display()
                )
            });
        }
        let exe = std::env::current_exe().ok();
        let cwd = std::env::current_dir().ok();
        let found = [exe.as_deref(), cwd.as_deref()]
            .into_iter()
            .flatten()
            .flat_map(Path::ancestors)
            .find_map(Checkout::at);
        found.ok_or_else(|| {
            anyhow::anyhow!(
                "--lab needs the vecio source checkout (scripts/lab and {SCRIPT}): none above \
                 this program or the current directory; run it from the checkout or set \
                 {CHECKOUT_ENV}=DIR"
            )
        })
    }

    fn at(dir: &Path) -> Option<Checkout> {
        let script = dir.join(SCRIPT);
        (dir.join("scripts/lab").is_file() && script.is_file()).then(|| Checkout {
            root: dir.to_path_buf(),
            script,
        })
    }
}

/// Fails naming qemu when `qemu-system-x86_64` cannot run here.
pub fn qemu() -> Result<()> {
    match Command::new("qemu-system-x86_64").arg("--version").output() {
        Ok(o) if o.status.success() => Ok(()),
        _ => bail!(
            "--lab needs qemu-system-x86_64, which cannot run here (scripts/setup installs \
             qemu-system-x86)"
        ),
    }
}

/// True when the lab's guest runs under TCG emulation: unless `VECIO_LAB_KVM=1` and
/// `/dev/kvm` is writable, as `scripts/lab.d/boot.sh` decides.
pub fn emulated() -> bool {
    let kvm = std::env::var("VECIO_LAB_KVM").is_ok_and(|v| v == "1");
    !(kvm && rustix::fs::access("/dev/kvm", rustix::fs::Access::WRITE_OK).is_ok())
}

/// The lab's cache (`VECIO_LAB_CACHE`, else `~/.cache/vecio-lab`, as `scripts/lab` has it).
fn cache() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("VECIO_LAB_CACHE") {
        return Some(d.into());
    }
    let base = std::env::var_os("XDG_CACHE_HOME")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache")))?;
    Some(base.join("vecio-lab"))
}

/// rublk's binary: built with `cargo install rublk --version RUBLK_VERSION --locked` into the
/// lab's cache the first time; `Err(why)` when it cannot be built, which leaves its row out.
pub fn rublk() -> Result<PathBuf, String> {
    let root = cache()
        .ok_or("no cache directory (HOME is not set)")?
        .join("rublk");
    let bin = root.join("bin/rublk");
    if bin.is_file() {
        return Ok(bin);
    }
    if find_program("cargo").is_none() {
        return Err("rublk is not built and cargo is not installed to build it".into());
    }
    eprintln!(
        "bench loop --lab: building rublk {RUBLK_VERSION} into {} (once)",
        root.display()
    );
    // The default features include an OpenCL target, which needs the OpenCL library at link
    // time; the loop target needs none of them, so a failed default build is tried again
    // without.
    let mut errors = Vec::new();
    for extra in [&[][..], &["--no-default-features"][..]] {
        let out = Command::new("nice")
            .args([
                "-n",
                "10",
                "cargo",
                "install",
                "rublk",
                "--version",
                RUBLK_VERSION,
            ])
            .args(["--locked", "--root"])
            .arg(&root)
            .args(extra)
            .output();
        match out {
            Ok(o) if o.status.success() && bin.is_file() => return Ok(bin),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                let last = err
                    .lines()
                    .rev()
                    .find(|l| l.contains("error"))
                    .unwrap_or("");
                errors.push(format!("{}: {}", o.status, last.trim()));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(format!(
        "cargo install rublk --version {RUBLK_VERSION} --locked failed ({})",
        errors.join("; then with --no-default-features: ")
    ))
}
