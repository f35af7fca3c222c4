//! The loop experiment's lab rows (`vecio bench loop --lab`): seed 001's table on real block
//! devices in one boot of Debian's 6.12 under qemu (docs/lab.md). On the host it needs the
//! source checkout whose `scripts/lab` boots the guest, qemu, and rublk (a peer, built once
//! into the lab's cache).

pub(crate) mod parse;
pub(crate) mod view;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};
use serde::{Deserialize, Serialize};

use super::{Job, LoopOptions, DEPTH};
use crate::harness::server::find_program;
use crate::harness::stats::{median, paired_median, Summary};

/// The jobs of the lab rows: 4 KiB random reads, 128 KiB sequential reads and writes.
pub const JOBS: [Job; 3] = [Job::RandRead4k, Job::Read128k, Job::Write128k];

/// The kernel series the lab boots.
pub const KERNEL: &str = "6.12";

/// Largest backing file the guest writes (its scratch disk is 3 GiB).
pub const MAX_SIZE: u64 = 1 << 30;

/// A block device over the backing file in the guest.
#[derive(Copy, Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Device {
    /// The kernel's loop device, `losetup --direct-io=off`: the seed's "before".
    LoopBuffered,
    /// The kernel's loop device, `losetup --direct-io=on`: the seed's "after", the reference.
    LoopDio,
    /// `vecio ublk FILE`.
    VecioUblk,
    /// rublk's loop target, `rublk add loop -f FILE`.
    RublkLoop,
    /// `vecio nbd FILE` through the kernel's `nbd-client`.
    VecioNbd,
}

impl Device {
    /// Every device, in table order.
    pub const ALL: [Device; 5] = [
        Device::LoopBuffered,
        Device::LoopDio,
        Device::VecioUblk,
        Device::RublkLoop,
        Device::VecioNbd,
    ];

    /// Its name in tables.
    pub fn name(self) -> &'static str {
        match self {
            Device::LoopBuffered => "loop, direct-io=off",
            Device::LoopDio => "loop, direct-io=on",
            Device::VecioUblk => "vecio ublk",
            Device::RublkLoop => "rublk loop",
            Device::VecioNbd => "vecio nbd + nbd-client",
        }
    }
}

/// One measurement of one device on one job.
#[derive(Debug, Clone, Copy, Serialize, Deserialize)]
pub struct LabSample {
    /// Which repetition (from 1).
    pub rep: u32,
    /// Requests per second.
    pub iops: f64,
    /// Throughput, MB/s (10^6 bytes per second).
    pub mb_s: f64,
    /// Requests completed.
    pub requests: f64,
    /// Bytes fio moved.
    pub bytes: f64,
    /// Growth of the guest's `Cached:` over the measurement (caches dropped before), bytes.
    pub cached_growth: i64,
    /// `cached_growth` as a percentage of the bytes moved.
    pub cached_growth_pct: f64,
    /// Context switches of the whole guest over the measurement (`ctxt` in `/proc/stat`).
    pub ctx: u64,
    /// `ctx` per request.
    pub ctx_per_req: f64,
    /// fio's own context switches.
    pub fio_ctx: u64,
}

/// A device's figures on one job over all repetitions.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabCell {
    /// Which device.
    pub device: Device,
    /// Its name.
    pub name: String,
    /// Which job.
    pub job: Job,
    /// The job's name.
    pub job_name: String,
    /// IOPS over the repetitions.
    pub iops: Summary,
    /// MB/s over the repetitions.
    pub mb_s: Summary,
    /// Every sample.
    pub samples: Vec<LabSample>,
}

impl LabCell {
    /// The headline figure's summary (IOPS or MB/s).
    pub fn figure(&self) -> &Summary {
        self.job.pick(&self.iops, &self.mb_s)
    }

    /// Median over the samples of `f`.
    pub fn median_of(&self, f: impl Fn(&LabSample) -> f64) -> Option<f64> {
        median(&self.samples.iter().map(f).collect::<Vec<_>>())
    }
}

/// A device as the guest set it up.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct DeviceInfo {
    /// Which device.
    pub device: Device,
    /// Its node in the guest (`/dev/loop0`, `/dev/ublkb0`, ...).
    pub path: String,
    /// How it was set up.
    pub detail: String,
}

/// A device or measurement left out, and why.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct LabSkip {
    /// Which device.
    pub device: Device,
    /// Why.
    pub reason: String,
}

/// Everything the lab rows measured.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
pub struct LabReport {
    /// The command the bench ran on the host.
    pub command: String,
    /// True under qemu's TCG emulation: only ratios mean anything.
    pub emulated: bool,
    /// Where the guest's results and console log are.
    pub results: String,
    /// Seconds the lab took, image builds and boot included.
    pub seconds: f64,
    /// The guest's kernel release.
    pub kernel: String,
    /// The guest's CPUs.
    pub cpus: u32,
    /// The guest's memory, KiB.
    pub mem_kib: u64,
    /// MiB of the backing file the jobs cover.
    pub size_mib: u64,
    /// Seconds per measurement.
    pub runtime_s: f64,
    /// Repetitions.
    pub repeat: u32,
    /// Requests in flight.
    pub depth: u32,
    /// The tools' versions (fio, vecio, rublk).
    pub versions: Vec<String>,
    /// The devices set up.
    pub devices: Vec<DeviceInfo>,
    /// Devices left out (rublk not built, no driver) and failed measurements.
    pub skipped: Vec<LabSkip>,
    /// Every device on every job.
    pub cells: Vec<LabCell>,
}

impl LabReport {
    /// The cell of `device` on `job`, if measured.
    pub fn cell(&self, device: Device, job: Job) -> Option<&LabCell> {
        self.cells
            .iter()
            .find(|c| c.device == device && c.job == job)
    }

    /// Median over the repetitions of `a`'s headline figure over `b`'s in the same repetition.
    pub fn ratio(&self, job: Job, a: Device, b: Device) -> Option<f64> {
        self.paired(job, a, b, |s| job.pick(s.iops, s.mb_s))
    }

    /// Median over the repetitions of `f` of `a` over `f` of `b` in the same repetition.
    pub fn paired(
        &self,
        job: Job,
        a: Device,
        b: Device,
        f: impl Fn(&LabSample) -> f64,
    ) -> Option<f64> {
        let (ca, cb) = (self.cell(a, job)?, self.cell(b, job)?);
        let (x, y): (Vec<f64>, Vec<f64>) = ca
            .samples
            .iter()
            .filter_map(|s| {
                let t = cb.samples.iter().find(|t| t.rep == s.rep)?;
                Some((f(s), f(t)))
            })
            .unzip();
        paired_median(&x, &y)
    }
}

/// The lab's time: the image builds, the boot, the fill and every measurement with fio's
/// start-up under emulation.
pub fn estimate(o: &LoopOptions) -> Duration {
    if !o.lab {
        return Duration::ZERO;
    }
    let steps = (o.common.repeat as usize * Device::ALL.len() * JOBS.len()) as f64;
    Duration::from_secs_f64(60.0 + steps * (o.common.runtime.as_secs_f64() + 8.0))
}

/// What the lab needs, checked before anything is measured: the checkout with `scripts/lab`
/// (its top directory returned) and qemu.
pub fn prepare() -> Result<PathBuf> {
    let checkout = find_checkout()?;
    qemu()?;
    Ok(checkout)
}

/// Runs the lab rows: rublk built if it is not yet (left out with the reason if it does not
/// build), the guest script written with this run's sizes, `scripts/lab` run, its JSON lines
/// read back.
pub fn run(checkout: &Path, o: &LoopOptions) -> Result<LabReport> {
    let rublk = rublk();
    let size_mib = o.size.min(MAX_SIZE) >> 20;
    let out = checkout.join("target/lab/bench-loop");
    std::fs::create_dir_all(&out).with_context(|| format!("creating {}", out.display()))?;
    let script = out.join("loop-lab.sh");
    let guest = checkout.join(SCRIPT);
    let body =
        std::fs::read_to_string(&guest).with_context(|| format!("reading {}", guest.display()))?;
    let header = format!(
        "LOOP_RUNTIME={}\nLOOP_SIZE_MB={size_mib}\nLOOP_REPEAT={}\nLOOP_DEPTH={DEPTH}\n",
        o.common.runtime.as_secs_f64(),
        o.common.repeat
    );
    std::fs::write(&script, header + &body)
        .with_context(|| format!("writing {}", script.display()))?;
    let timeout = 600 + estimate(o).as_secs();
    let mut cmd = Command::new(checkout.join("scripts/lab"));
    let timeout_s = timeout.to_string();
    cmd.args(["--kernel", KERNEL, "--timeout", &timeout_s, "--out"]);
    cmd.arg(&out).arg(&script);
    if let Ok(path) = &rublk {
        cmd.env("VECIO_LAB_TOOLS", path);
    }
    let command = format!(
        "{}scripts/lab --kernel {KERNEL} --timeout {timeout} --out {} {}",
        rublk.as_ref().map_or("", |_| "VECIO_LAB_TOOLS=rublk "),
        out.display(),
        script.display()
    );
    eprintln!("bench loop --lab: {command}");
    // The lab's own lines (console, results) go to standard error: standard output is the
    // section's.
    let start = Instant::now();
    let status = cmd
        .stdout(std::io::stderr())
        .status()
        .context("running scripts/lab")?;
    let dir = out.join(KERNEL);
    let lines = dir.join("loop-lab.jsonl");
    let text = std::fs::read_to_string(&lines).unwrap_or_default();
    if text.trim().is_empty() {
        // The guest script's last line says why (a skip names what the guest lacks).
        let log = std::fs::read_to_string(dir.join("loop-lab.sh.log")).unwrap_or_default();
        bail!(
            "the lab measured nothing (scripts/lab: {status}; the guest script's last line: {:?}); see {}",
            log.lines().last().unwrap_or("none"),
            dir.join("console.log").display()
        );
    }
    let mut r = parse::parse(&text)?;
    if r.cells.is_empty() {
        bail!(
            "the guest measured nothing (scripts/lab: {status}); see {}",
            dir.display()
        );
    }
    if let Err(why) = rublk {
        r.skipped.retain(|s| s.device != Device::RublkLoop);
        let device = Device::RublkLoop;
        r.skipped.push(LabSkip {
            device,
            reason: why,
        });
    }
    r.command = command;
    r.emulated = emulated();
    r.results = dir.display().to_string();
    r.seconds = start.elapsed().as_secs_f64();
    Ok(r)
}

/// Names the checkout when the bench is not run from inside it.
pub const CHECKOUT_ENV: &str = "VECIO_CHECKOUT";

/// The rublk release measured.
pub const RUBLK_VERSION: &str = "0.2.15";

/// The guest script, relative to the checkout.
const SCRIPT: &str = "scripts/lab.d/bench/loop.sh";

/// Whether `dir` is a vecio source checkout with the lab in it.
fn has_lab(dir: &Path) -> bool {
    dir.join("scripts/lab").is_file() && dir.join(SCRIPT).is_file()
}

/// The checkout named by `VECIO_CHECKOUT`, else the first directory above this program or the
/// current directory that has `scripts/lab` and the guest script.
fn find_checkout() -> Result<PathBuf> {
    if let Some(dir) = std::env::var_os(CHECKOUT_ENV) {
        let root = PathBuf::from(dir);
        anyhow::ensure!(
            has_lab(&root),
            "{CHECKOUT_ENV}={}: no scripts/lab and {SCRIPT} there (it must name a vecio source \
             checkout)",
            root.display()
        );
        return Ok(root);
    }
    let exe = std::env::current_exe().ok();
    let cwd = std::env::current_dir().ok();
    let found = [exe.as_deref(), cwd.as_deref()]
        .into_iter()
        .flatten()
        .flat_map(Path::ancestors)
        .find(|d| has_lab(d));
    found.map(Path::to_path_buf).ok_or_else(|| {
        anyhow::anyhow!(
            "--lab needs the vecio source checkout (scripts/lab and {SCRIPT}): none above this \
             program or the current directory; run it from the checkout or set {CHECKOUT_ENV}=DIR"
        )
    })
}

/// Fails naming qemu when `qemu-system-x86_64` cannot run here.
fn qemu() -> Result<()> {
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
fn emulated() -> bool {
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
fn rublk() -> Result<PathBuf, String> {
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
            .args(["-n", "10", "cargo", "install", "rublk"])
            .args(["--version", RUBLK_VERSION, "--locked", "--root"])
            .arg(&root)
            .args(extra)
            .output();
        match out {
            Ok(o) if o.status.success() && bin.is_file() => return Ok(bin),
            Ok(o) => {
                let err = String::from_utf8_lossy(&o.stderr);
                let last = err.lines().rev().find(|l| l.contains("error"));
                errors.push(format!("{}: {}", o.status, last.unwrap_or("").trim()));
            }
            Err(e) => errors.push(e.to_string()),
        }
    }
    Err(format!(
        "cargo install rublk --version {RUBLK_VERSION} --locked failed ({})",
        errors.join("; then with --no-default-features: ")
    ))
}
