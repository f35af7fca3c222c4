//! What vecio's integration tests share (a dev-dependency only): a small file system of the
//! test's own on a loop device, what a process holds (descriptors, resident memory), waiting
//! for a condition with a deadline, the peers to test against (the host's, and the trixie
//! chroot's of `scripts/peers`), X.509 certificates made by the openssl command, and network
//! namespaces joined by veth pairs.
//!
//! Tests that need root say so and skip through [`skip_unless_root`]; nothing here mocks the
//! kernel: the file systems are real ext4 on real loop devices.

#![warn(missing_docs)]

pub mod certs;
pub mod netns;
mod process;
mod smallfs;

pub use netns::Netns;
pub use process::{descriptors, rss_kib};
pub use smallfs::SmallFs;
/// The peers to test against: the host's, and the trixie chroot's (`vecio_host::peers`).
pub use vecio_host::peers::{self, Peers};

use std::time::{Duration, Instant};

/// The host's Python that has libnbd's module (Debian's python3-libnbd, nbdsh's own
/// interpreter): `/usr/bin/python3` first, since the first `python3` in `PATH` may be another
/// installation without it (pyenv's, on this project's machines); `None`, printing why, where
/// neither has it.
pub fn python_with_libnbd() -> Option<&'static str> {
    for py in ["/usr/bin/python3", "python3"] {
        let ok = std::process::Command::new(py)
            .args(["-c", "import nbd"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py);
        }
    }
    eprintln!("SKIP: python3-libnbd is not installed (scripts/setup installs it)");
    None
}

/// True when the tests run as root.
pub fn is_root() -> bool {
    rustix::process::geteuid().is_root()
}

/// `None` as root; otherwise prints why `what` is skipped and returns the reason.
pub fn skip_unless_root(what: &str) -> Option<String> {
    if is_root() {
        return None;
    }
    let why = format!("SKIP {what}: not root (loop devices and mounts need CAP_SYS_ADMIN)");
    eprintln!("{why}");
    Some(why)
}

/// Polls `ok` every 10 ms until it is true (returns how long that took) or `limit` passes
/// (returns `None`).
pub fn wait_until(limit: Duration, mut ok: impl FnMut() -> bool) -> Option<Duration> {
    let t = Instant::now();
    loop {
        if ok() {
            return Some(t.elapsed());
        }
        if t.elapsed() >= limit {
            return None;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

/// `len` bytes of an xorshift sequence seeded by `seed`: the same for the same seed, so a test
/// can write data and check it back (`seed` tells files apart).
pub fn pattern(seed: u64, len: usize) -> Vec<u8> {
    let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect()
}
