//! Going to the background once a server is ready, as `qemu-nbd --fork` and libfuse servers do:
//! the parent reports and exits, the child serves on in a session of its own.

use std::os::fd::AsRawFd;
use std::path::Path;

use anyhow::{Context, Result};

/// Which side of the fork this is.
pub enum Forked {
    /// The parent, with the child's pid.
    Parent(u32),
    /// The child, detached.
    Child,
}

/// `fork(2)`; the child starts a session of its own with standard input and output on
/// /dev/null and standard error appended to `log` (kept as it is without one), in `/` with
/// `to_root` (paths relative to the caller's directory must then be resolved before). Must be called
/// while the process has a single thread: the child is a copy of the calling thread only.
pub fn fork_detached(log: Option<&Path>, to_root: bool) -> Result<Forked> {
    // SAFETY: the caller guarantees no other thread runs, so the child is a whole copy; it only
    // returns into ordinary Rust code.
    let pid = unsafe { libc::fork() };
    if pid < 0 {
        return Err(std::io::Error::last_os_error()).context("fork(2)");
    }
    if pid > 0 {
        return Ok(Forked::Parent(pid as u32));
    }
    let _ = rustix::process::setsid();
    let null = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .open("/dev/null")
        .context("/dev/null")?;
    let err = match log {
        Some(p) => std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(p)
            .with_context(|| format!("{}: cannot open the log", p.display()))?,
        None => null.try_clone().context("/dev/null")?,
    };
    if to_root {
        // A daemon keeps no directory busy (mount(8) may run it from inside a mount that is
        // unmounted next).
        rustix::process::chdir("/").context("chdir /")?;
    }
    let targets = [(&null, 0), (&null, 1)];
    let with_log = log.map(|_| (&err, 2));
    for (file, fd) in targets.into_iter().chain(with_log) {
        // SAFETY: dup2 onto a standard descriptor; `file` stays open across the call.
        if unsafe { libc::dup2(file.as_raw_fd(), fd) } < 0 {
            return Err(std::io::Error::last_os_error()).context("dup2");
        }
    }
    Ok(Forked::Child)
}

/// Writes `pid` to the pid file `path` whole or not at all: into a temporary file beside it,
/// renamed over it, so a script that reads it the moment the server is ready (after `--fork`
/// returns, or after the `mounted` line) never meets it empty or half written.
pub fn write_pid_file(path: &Path, pid: u32) -> Result<()> {
    let name = path.file_name().unwrap_or_default().to_string_lossy();
    let tmp = path.with_file_name(format!(".{name}.{}.tmp", std::process::id()));
    let written =
        std::fs::write(&tmp, format!("{pid}\n")).and_then(|()| std::fs::rename(&tmp, path));
    if written.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    written.with_context(|| format!("{}: cannot write the pid file", path.display()))
}
