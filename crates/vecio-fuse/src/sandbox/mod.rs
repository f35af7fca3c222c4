//! The sandbox, as virtiofsd's `--sandbox=namespace`: before the server reads its first request,
//! the thread that serves (and every thread it starts: workers, rings, lock waiters) enters new
//! mount, IPC, UTS and network namespaces, pivots into the source directory (its private clone
//! of the source's mounts, `crate::fs::source`), so that `/` is the source and nothing else of the
//! host's file systems can be named, drops every capability but those it serves with, and sets
//! `no_new_privs`.
//!
//! - Namespaces, capabilities and `no_new_privs` are per thread, inherited by the threads
//!   started after: a process embedding the server (the tests, a signal thread that unmounts)
//!   keeps its own.
//! - No PID namespace: a process cannot move itself into one, and once a thread has unshared
//!   one (for its children) it can no longer start threads (`clone(CLONE_THREAD)` fails); the
//!   server starts no process.
//! - Capabilities kept: `CHOWN`, `DAC_OVERRIDE`, `DAC_READ_SEARCH` (file handles), `FOWNER`,
//!   `FSETID`, `SETUID`, `SETGID` (acting as the caller), `MKNOD`, `SETFCAP` (file
//!   capabilities), `LINUX_IMMUTABLE`, `IPC_LOCK` (registered buffers) and `SYS_ADMIN`
//!   (passthrough's backing files, `trusted.*` and `security.*` attributes). Dropped: the rest
//!   (`SYS_PTRACE`, `SYS_MODULE`, `NET_*`, `KILL`, `SYS_CHROOT`, ...), from the bounding set too.
//! - `/proc` stays reachable through the descriptor opened before (`crate::fs::procfs`):
//!   inodes are reopened through `self/fd`, callers' groups read from `PID/status`.
//! - Where the kernel or the privileges do not allow it (not root, no clone of the source), the
//!   server says so and serves unsandboxed; `--sandbox=none` turns it off.

//!
//! The sandbox layer is a folder of its own rather than part of `crate::mount`: it confines the
//! threads that serve, after the mount exists, and knows nothing of FUSE, its mounts' options or
//! the connection; its two parts, namespaces and capabilities (here) and the system-call filter
//! (`seccomp`), are entered one after the other by the server (`crate::Server`).

pub mod seccomp;

use std::os::fd::{AsFd, OwnedFd};
use std::path::Path;

use rustix::mount::{MountPropagationFlags, MoveMountFlags, UnmountFlags};
use rustix::thread::{CapabilitySet, CapabilitySets, UnshareFlags};

/// How the server is confined.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq)]
pub enum Sandbox {
    /// Namespaces, a pivot into the source, capabilities dropped, `no_new_privs` (where the
    /// kernel allows; otherwise the server says so and serves without).
    #[default]
    Namespace,
    /// None: the server sees the host as it is.
    None,
}

impl std::str::FromStr for Sandbox {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "namespace" => Ok(Sandbox::Namespace),
            "none" => Ok(Sandbox::None),
            _ => Err(format!("{s:?}: the sandbox is namespace or none")),
        }
    }
}

/// The capabilities a sandboxed server keeps.
pub fn kept() -> CapabilitySet {
    CapabilitySet::CHOWN
        | CapabilitySet::DAC_OVERRIDE
        | CapabilitySet::DAC_READ_SEARCH
        | CapabilitySet::FOWNER
        | CapabilitySet::FSETID
        | CapabilitySet::SETUID
        | CapabilitySet::SETGID
        | CapabilitySet::MKNOD
        | CapabilitySet::SETFCAP
        | CapabilitySet::LINUX_IMMUTABLE
        | CapabilitySet::IPC_LOCK
        | CapabilitySet::SYS_ADMIN
}

/// Enters the sandbox on the calling thread: `tree` is the private clone of the source's mounts
/// (the source directory at its root), `source` its path. Returns false (having said why) when
/// it cannot be entered; a failure after the namespaces were entered is an error.
pub fn enter(tree: Option<OwnedFd>, source: &Path) -> std::io::Result<bool> {
    let Some(tree) = tree else {
        // Said in the server's "serving" line (`Serving`'s confinement).
        tracing::debug!("sandbox: the source is not a private clone (not root?); serving without");
        return Ok(false);
    };
    let flags =
        UnshareFlags::NEWNS | UnshareFlags::NEWIPC | UnshareFlags::NEWUTS | UnshareFlags::NEWNET;
    // SAFETY: unsharing namespaces and the filesystem context affects this thread only (and the
    // threads it starts); no descriptor table or memory is unshared.
    if let Err(e) = unsafe { rustix::thread::unshare_unsafe(flags) } {
        tracing::warn!("sandbox: unshare(namespaces): {e}; serving without");
        return Ok(false);
    }
    pivot_into(tree.as_fd(), source)?;
    drop_capabilities()?;
    rustix::thread::set_no_new_privs(true)?;
    Ok(true)
}

/// In the new mount namespace: no propagation back to the host, the source's clone mounted
/// over its own path, then `pivot_root` into it and the old root detached.
fn pivot_into(tree: std::os::fd::BorrowedFd<'_>, source: &Path) -> std::io::Result<()> {
    rustix::mount::mount_change(
        "/",
        MountPropagationFlags::DOWNSTREAM | MountPropagationFlags::REC,
    )?;
    rustix::mount::move_mount(
        tree,
        c"",
        rustix::fs::CWD,
        source,
        MoveMountFlags::MOVE_MOUNT_F_EMPTY_PATH,
    )?;
    rustix::process::chdir(source)?;
    rustix::process::pivot_root(".", ".")?;
    rustix::mount::unmount(".", UnmountFlags::DETACH)?;
    rustix::process::chdir("/")?;
    Ok(())
}

/// Drops every capability but [`kept`] from the bounding set and the thread's sets.
fn drop_capabilities() -> std::io::Result<()> {
    let keep = kept();
    for cap in 0..64u32 {
        if keep.bits() & (1 << cap) != 0 {
            continue;
        }
        // SAFETY: PR_CAPBSET_DROP takes a capability number; numbers past the last one the
        // kernel knows fail with EINVAL, which ends the loop.
        if unsafe { libc::prctl(libc::PR_CAPBSET_DROP, cap as libc::c_ulong, 0, 0, 0) } != 0 {
            break;
        }
    }
    let now = rustix::thread::capabilities(None)?;
    rustix::thread::set_capabilities(
        None,
        CapabilitySets {
            effective: now.effective & keep,
            permitted: now.permitted & keep,
            inheritable: CapabilitySet::empty(),
        },
    )?;
    Ok(())
}
