//! The peers (NBD and FUSE clients and servers) tests run against: the host's own, and
//! today's from the Debian trixie chroot that `scripts/peers build` makes, where it exists.
//!
//! A chroot peer runs through `scripts/peers run --share DIR -- PROG ARGS`: in a mount
//! namespace of its own, with DIR (where the server's Unix socket and the test's files are)
//! bind-mounted at the same path, so paths mean the same on both sides. That script is the one
//! place that knows how; this module only builds the command line.

use std::path::{Path, PathBuf};
use std::process::Command;

/// Where `scripts/peers` keeps the chroot unless `VECIO_PEERS_ROOT` says otherwise.
pub const DEFAULT_ROOT: &str = "/var/cache/vecio-peers/trixie";

/// The stamp file of a finished build.
const STAMP: &str = ".vecio-peers";

/// A set of peers: the host's, or a chroot's.
#[derive(Clone, Debug)]
pub struct Peers {
    root: Option<PathBuf>,
}

/// `scripts/peers` in this repository.
fn script() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/peers")
}

impl Peers {
    /// The host's own peers (whatever `scripts/setup` installed).
    pub fn host() -> Self {
        Peers { root: None }
    }

    /// The chroot's peers: `None`, printing why, when it is not built or the tests are not
    /// root (a chroot needs it).
    pub fn chroot() -> Option<Self> {
        let root = std::env::var_os("VECIO_PEERS_ROOT")
            .map(PathBuf::from)
            .unwrap_or_else(|| PathBuf::from(DEFAULT_ROOT));
        if !root.join(STAMP).exists() {
            eprintln!(
                "SKIP chroot peers: {} is not built (scripts/peers build makes it)",
                root.display()
            );
            return None;
        }
        if !crate::is_root() {
            eprintln!("SKIP chroot peers: not root (chroot and mounts need it)");
            return None;
        }
        Some(Peers { root: Some(root) })
    }

    /// The host's peers, then the chroot's when there is one.
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

    /// True for the chroot's peers.
    pub fn is_chroot(&self) -> bool {
        self.root.is_some()
    }

    /// A command running `prog` of this set; `share` (an absolute directory) is seen at the
    /// same path by a chroot peer.
    pub fn command(&self, prog: &str, share: &Path) -> Command {
        let Some(root) = &self.root else {
            return Command::new(prog);
        };
        let mut c = Command::new("bash");
        c.env("VECIO_PEERS_ROOT", root)
            .arg(script())
            .arg("run")
            .arg("--share")
            .arg(share)
            .arg("--")
            .arg(prog);
        c
    }

    /// True when `prog` (a name looked up in the PATH, or an absolute path) exists in this
    /// set; prints why not otherwise.
    pub fn has(&self, prog: &str) -> bool {
        let found = match &self.root {
            None => Command::new("sh")
                .args(["-c", &format!("command -v {prog}")])
                .output()
                .is_ok_and(|o| o.status.success()),
            Some(r) if prog.starts_with('/') => r.join(&prog[1..]).exists(),
            Some(r) => ["usr/bin", "usr/sbin"]
                .iter()
                .any(|d| r.join(d).join(prog).exists()),
        };
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
