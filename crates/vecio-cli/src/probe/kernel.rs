//! `vecio info`'s kernel section: which of the block drivers vecio's servers and tests use the
//! running kernel offers (ublk and its features, the NBD client, loop, device-mapper and its
//! fault targets), each found on the system rather than assumed: `/sys/module`, the control
//! devices, `/lib/modules/RELEASE` (`modules.builtin`, the module files) and, for ublk,
//! `UBLK_U_CMD_GET_FEATURES`; and what decides how `vecio fuse` serves here (`super::fuse`).

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// One driver and whether the kernel has it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Driver {
    /// The module's name (`ublk_drv`, `nbd`, ...).
    pub module: String,
    /// What uses it.
    pub used_by: String,
    /// `loaded`, `built in`, `module` (available, not loaded: `modprobe` it) or `missing`.
    pub state: String,
    /// For ublk: the driver's features by name, or why they are unknown.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub features: Option<Vec<String>>,
}

/// The kernel section of `vecio info`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct KernelInfo {
    /// `uname -r`.
    pub release: String,
    /// The drivers, in the order shown.
    pub drivers: Vec<Driver>,
    /// FUSE: io_uring, the largest request, what users need to mount.
    pub fuse: super::fuse::FuseInfo,
}

/// The drivers vecio looks for: module name, a control path that exists once it is loaded
/// (or built in), and what uses it.
const DRIVERS: &[(&str, &str, &str)] = &[
    ("ublk_drv", "/dev/ublk-control", "vecio ublk"),
    (
        "nbd",
        "/sys/block/nbd0",
        "the kernel's NBD client (nbd-client) for vecio nbd",
    ),
    (
        "loop",
        "/dev/loop-control",
        "the kernel's loop device (losetup)",
    ),
    (
        "dm_mod",
        "/dev/mapper/control",
        "device-mapper (the lab's fault tests)",
    ),
    ("dm_flakey", "", "dm-flakey (the lab's fault tests)"),
];

/// What the running kernel offers.
pub fn probe() -> KernelInfo {
    let release = rustix::system::uname()
        .release()
        .to_string_lossy()
        .into_owned();
    let modules = PathBuf::from("/lib/modules").join(&release);
    let drivers = DRIVERS
        .iter()
        .map(|&(module, control, used_by)| {
            let state = state(module, control, &modules).to_string();
            let features = (module == "ublk_drv" && state != "missing").then(ublk_features);
            Driver {
                module: module.into(),
                used_by: used_by.into(),
                state,
                features,
            }
        })
        .collect();
    KernelInfo {
        release,
        drivers,
        fuse: super::fuse::probe(),
    }
}

/// Whether `module` is loaded, built in, available as a module file, or missing.
fn state(module: &str, control: &str, modules: &Path) -> &'static str {
    let listed = |file: &str| {
        std::fs::read_to_string(modules.join(file)).is_ok_and(|text| {
            text.lines().any(|l| {
                let name = l.split(':').next().unwrap_or(l);
                let base = name.rsplit('/').next().unwrap_or(name);
                let base = base.split(".ko").next().unwrap_or(base);
                base.replace('-', "_") == module
            })
        })
    };
    if listed("modules.builtin") {
        "built in"
    } else if Path::new("/sys/module").join(module).exists()
        || (!control.is_empty() && Path::new(control).exists())
    {
        "loaded"
    } else if listed("modules.dep") {
        "module"
    } else {
        "missing"
    }
}

/// The ublk driver's features by name, or the reason they cannot be known.
fn ublk_features() -> Vec<String> {
    match vecio_ublk::driver_features() {
        Some(Some(bits)) => vecio_ublk::feature_names(bits),
        Some(None) => vec!["not reported (the driver predates GET_FEATURES, Linux 6.5)".into()],
        None => vec!["unknown until the module is loaded (modprobe ublk_drv)".into()],
    }
}

/// The section as text.
pub fn render(k: &KernelInfo) -> String {
    let mut out = format!("kernel {}\n", k.release);
    for d in &k.drivers {
        out += &format!("  {:<10} {:<9} {}\n", d.module, d.state, d.used_by);
        if let Some(f) = &d.features {
            out += &format!("  {:<10} features: {}\n", "", f.join(", "));
        }
    }
    out += &super::fuse::render(&k.fuse);
    let missing: Vec<&str> = k
        .drivers
        .iter()
        .filter(|d| d.state == "missing")
        .map(|d| d.module.as_str())
        .collect();
    if !missing.is_empty() {
        out += &format!(
            "  missing: {} (not in this kernel; `make lab` boots Debian kernels that have them)\n",
            missing.join(", ")
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_module_listed_in_modules_dep_is_available_and_builtin_wins() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(
            dir.path().join("modules.dep"),
            "kernel/drivers/block/nbd.ko.xz:\nkernel/drivers/md/dm-flakey.ko.xz: kernel/drivers/md/dm-mod.ko.xz\n",
        )
        .unwrap();
        std::fs::write(
            dir.path().join("modules.builtin"),
            "kernel/drivers/block/loop.ko\n",
        )
        .unwrap();
        assert_eq!(state("vecio_no_such_module", "", dir.path()), "missing");
        assert_eq!(state("loop", "", dir.path()), "built in");
        assert_eq!(state("dm_flakey", "", dir.path()), "module");
    }

    #[test]
    fn the_text_names_what_is_missing() {
        let k = KernelInfo {
            release: "6.1.0-test".into(),
            drivers: vec![Driver {
                module: "ublk_drv".into(),
                used_by: "vecio ublk".into(),
                state: "missing".into(),
                features: None,
            }],
            fuse: super::super::fuse::probe(),
        };
        let text = render(&k);
        assert!(text.contains("kernel 6.1.0-test"), "{text}");
        assert!(text.contains("missing: ublk_drv"), "{text}");
    }
}
