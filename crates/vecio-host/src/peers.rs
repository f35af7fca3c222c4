//! The peers (NBD and FUSE clients and servers) vecio is measured and tested against: the
//! host's own, or today's from the Debian trixie chroot that `scripts/peers build` makes.
//!
//! A chroot peer runs through `scripts/peers run --share DIR -- PROG ARGS`: in a mount
//! namespace of its own, with DIR (where a server's Unix socket and the files are) bind-mounted
//! at the same path, so paths mean the same on both sides. That script is the one place that
//! knows how; it is compiled into this crate, so an installed `vecio bench` runs it without the
//! source tree. Its `run` replaces itself with the peer (`exec` down to the program), so the
//! process started here is the peer: signals reach it and `wait4` reports its usage.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `scripts/peers` keeps the chroot unless `VECIO_PEERS_ROOT` says otherwise.
pub const DEFAULT_ROOT: &str = "/var/cache/vecio-peers/trixie";

/// The stamp file of a finished build.
const STAMP: &str = ".vecio-peers";

/// `scripts/peers`, as built into this crate.
const SCRIPT: &str = include_str!("../../../scripts/peers");

/// A set of peers: the host's, or a chroot's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Peers {
    root: Option<PathBuf>,
}

impl Peers {
    /// The host's own peers (whatever `scripts/setup` installed).
    pub fn host() -> Self {
        Peers { root: None }
    }

    /// The chroot at `root`, or why it cannot be used: not built, or not root (a chroot and
    /// its mounts need it).
    pub fn chroot_at(root: &Path) -> Result<Self, String> {
        if !root.join(STAMP).exists() {
            return Err(format!(
                "{} is not built (scripts/peers build makes it)",
                root.display()
            ));
        }
        if !rustix::process::geteuid().is_root() {
            return Err("not root (chroot and mounts need it)".into());
        }
        Ok(Peers {
            root: Some(root.to_path_buf()),
        })
    }

    /// The chroot at `$VECIO_PEERS_ROOT` (default [`DEFAULT_ROOT`]), or why it cannot be used.
    pub fn default_chroot() -> Result<Self, String> {
        Peers::chroot_at(&default_root())
    }

    /// The chroot's peers: `None`, printing why ("SKIP chroot peers: ..."), when there are
    /// none; for tests.
    pub fn chroot() -> Option<Self> {
        Peers::default_chroot()
            .map_err(|why| eprintln!("SKIP chroot peers: {why}"))
            .ok()
    }

    /// The host's peers, then the chroot's when there is one; for tests.
    pub fn all() -> Vec<Self> {
        let mut v = vec![Peers::host()];
        v.extend(Peers::chroot());
        v
    }

    /// "host" or "chroot DIR", for messages.
    pub fn name(&self) -> String {
        match &self.root {
            None => "host".into(),
            Some(r) => format!("chroot {}", r.display()),
        }
    }

    /// The chroot's directory; `None` for the host's.
    pub fn root(&self) -> Option<&Path> {
        self.root.as_deref()
    }

    /// True for the chroot's peers.
    pub fn is_chroot(&self) -> bool {
        self.root.is_some()
    }

    /// A command running `prog` of this set; `share` (an absolute directory) is seen at the
    /// same path by a chroot peer.
    pub fn command(&self, prog: &str, share: &Path) -> Command {
        self.command_sharing(prog, &[share])
    }

    /// As [`command`](Self::command), with several shared directories.
    pub fn command_sharing(&self, prog: &str, shares: &[&Path]) -> Command {
        let Some(root) = &self.root else {
            return Command::new(prog);
        };
        let mut c = Command::new("bash");
        c.env("VECIO_PEERS_ROOT", root)
            .arg("-c")
            .arg(SCRIPT)
            .arg("peers")
            .arg("run");
        for s in shares {
            c.arg("--share").arg(s);
        }
        c.arg("--").arg(prog);
        c
    }

    /// True when `prog` (a name looked up in the PATH, or an absolute path) exists in this set.
    pub fn installed(&self, prog: &str) -> bool {
        match &self.root {
            None => Command::new("sh")
                .args(["-c", "command -v \"$1\"", "sh", prog])
                .output()
                .is_ok_and(|o| o.status.success()),
            Some(r) if prog.starts_with('/') => r.join(&prog[1..]).exists(),
            Some(r) => ["usr/bin", "usr/sbin"]
                .iter()
                .any(|d| r.join(d).join(prog).exists()),
        }
    }

    /// As [`installed`](Self::installed), printing "SKIP PROG (SET): not installed" when it is
    /// not; for tests.
    pub fn has(&self, prog: &str) -> bool {
        let found = self.installed(prog);
        if !found {
            eprintln!("SKIP {prog} ({}): not installed", self.name());
        }
        found
    }

    /// The installed version of Debian package `package` in this set, as dpkg has it.
    pub fn version(&self, package: &str) -> Option<String> {
        let mut c = Command::new("dpkg-query");
        if let Some(r) = &self.root {
            c.arg(format!("--admindir={}", r.join("var/lib/dpkg").display()));
        }
        let out = c.args(["-W", "-f=${Version}", package]).output().ok()?;
        let v = String::from_utf8_lossy(&out.stdout).trim().to_string();
        (out.status.success() && !v.is_empty()).then_some(v)
    }
}

/// `$VECIO_PEERS_ROOT`, or [`DEFAULT_ROOT`].
pub fn default_root() -> PathBuf {
    std::env::var_os("VECIO_PEERS_ROOT")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(DEFAULT_ROOT))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_directory_without_the_stamp_is_refused_with_the_reason() {
        let dir = tempfile::tempdir().unwrap();
        let why = Peers::chroot_at(dir.path()).unwrap_err();
        assert!(why.contains("is not built"), "{why}");
    }

    #[test]
    fn host_peers_run_the_program_itself() {
        let c = Peers::host().command("nbdinfo", Path::new("/tmp"));
        assert_eq!(c.get_program(), "nbdinfo");
        assert!(Peers::host().installed("sh"));
        assert!(!Peers::host().installed("no-such-program-vecio"));
    }

    #[test]
    fn the_built_in_script_is_scripts_peers() {
        let on_disk = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/peers"),
        )
        .unwrap();
        assert_eq!(SCRIPT, on_disk);
    }
}
