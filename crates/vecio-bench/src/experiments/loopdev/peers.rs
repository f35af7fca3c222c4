//! Where `vecio bench loop`'s peer servers (qemu-nbd, nbdkit) come from: the trixie chroot of
//! `scripts/peers` when it is built, the host's, or what `--peers-root` says.

use std::path::Path;

use anyhow::Result;
use vecio_host::peers::Peers;

use super::LoopOptions;

/// The peers `opts` asks for, and a line saying which and why: `--peers-root host`, the
/// chroot `--peers-root` names (an error if it cannot be used), or by default the chroot
/// where it is built, else the host's with the reason.
pub fn peer_set(opts: &LoopOptions) -> Result<(Peers, String)> {
    match opts.peers_root.as_deref() {
        Some(p) if p == Path::new("host") => Ok((Peers::host(), "host (--peers-root host)".into())),
        Some(root) => {
            let peers = Peers::chroot_at(root)
                .map_err(|why| anyhow::anyhow!("--peers-root {}: {why}", root.display()))?;
            let name = peers.name();
            Ok((peers, name))
        }
        None => Ok(match Peers::default_chroot() {
            Ok(peers) => {
                let name = peers.name();
                (peers, name)
            }
            Err(why) => (Peers::host(), format!("host (no chroot peers: {why})")),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiments::loopdev::LoopOptions;
    use clap::Parser;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        loop_: LoopOptions,
    }

    fn options(args: &[&str]) -> LoopOptions {
        Cli::parse_from(std::iter::once("loop").chain(args.iter().copied())).loop_
    }

    #[test]
    fn peers_root_host_is_the_hosts_and_a_bad_directory_is_an_error() {
        let (peers, why) = peer_set(&options(&["--peers-root", "host"])).unwrap();
        assert!(!peers.is_chroot());
        assert_eq!(why, "host (--peers-root host)");
        let dir = tempfile::tempdir().unwrap();
        let dir = dir.path().to_str().unwrap();
        let e = peer_set(&options(&["--peers-root", dir])).unwrap_err();
        assert!(format!("{e:#}").contains("scripts/peers build"), "{e:#}");
    }
}
