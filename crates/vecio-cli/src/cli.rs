//! The command line: `vecio bench ...`, `vecio nbd ...`, `vecio fuse ...`, `vecio info ...`,
//! and the hidden `vecio man` and `vecio completions` that write its manual pages and shell
//! completions.

use clap::{Parser, Subcommand};

/// An error in what the user asked for, found after the command line was parsed: vecio exits
/// with status 2 for it, as for a parse error.
#[derive(Debug)]
pub struct UsageError(pub String);

impl std::fmt::Display for UsageError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for UsageError {}

/// vecio: the Linux vectored-I/O design in user space, and the measurements that prove it.
#[derive(Parser, Debug)]
#[command(
    name = "vecio",
    version,
    propagate_version = true,
    about = "Vectored I/O for user space: the vecio nbd and vecio fuse servers, \
             vecio bench and vecio info",
    long_about = "vecio brings the Linux kernel's vectored-I/O design to user space. \
                  `vecio nbd` serves a file or block device (or each file of a directory) over \
                  NBD (the loop device in user space); `vecio fuse` mounts a passthrough view of a directory over FUSE with \
                  large scatter-gather direct I/O; `vecio bench` re-measures the five source \
                  documents' results beside fio, qemu-nbd, nbdkit and libfuse; `vecio info` \
                  says what the kernel allows on a file or device."
)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// vecio's commands.
#[derive(Subcommand, Debug)]
pub enum Command {
    /// Re-measure the source documents' tables on this machine (runs vecio-bench; `vecio bench
    /// --help` lists the experiments).
    #[command(disable_help_flag = true, disable_version_flag = true)]
    Bench(crate::bench::BenchArgs),
    /// Serve a file or block device, or each file of a directory, over NBD (the user-space
    /// loop device).
    Nbd(crate::nbd::NbdArgs),
    /// Mount a passthrough view of a directory over FUSE (large scatter-gather direct I/O).
    Fuse(crate::fuse::FuseArgs),
    /// Serve a file or block device as the block device /dev/ublkbN (the loop device through
    /// the kernel's ublk driver); `list` and `del N` manage the machine's ublk devices.
    Ublk(crate::ublk::UblkArgs),
    /// What vecio learns about a file, directory or block device: filesystem, direct-I/O
    /// alignment, which flags (O_DIRECT, RWF_NOWAIT, RWF_DSYNC, RWF_DONTCACHE) and io_uring work,
    /// page-cache residency, the block queue behind it.
    Info(crate::info::InfoArgs),
    /// Writes vecio's manual pages (vecio.1, vecio-nbd.1, ...) into a directory.
    #[command(hide = true)]
    Man(crate::docs::ManArgs),
    /// Prints a shell completion script (bash, zsh, fish, elvish, powershell).
    #[command(hide = true)]
    Completions(crate::docs::CompletionsArgs),
}
