//! `vecio nbd --run CMD`, nbdkit's captive mode: once the server listens, CMD runs under
//! `sh -c` with the server's address in its environment (`$uri`, also as `$nbd`;
//! `$unixsocket`, `$port`, `$exportname`), and when CMD exits the server stops (connections
//! still open finish what they have in flight) and vecio exits with CMD's status. Without
//! `-U`, `-p` or `-b` the socket is a private one in a directory of its own, removed at the end.

use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::thread::JoinHandle;

use anyhow::{Context, Result};
use vecio_nbd::ShutdownHandle;

/// Where the server listens: one listener's URI and its socket path or TCP port.
#[derive(Debug, Clone)]
pub struct Listener {
    /// The URI a client uses (`nbd+unix:///?socket=...`, `nbd://ADDR:PORT/`).
    pub uri: String,
    /// The Unix socket's path, for a Unix listener.
    pub socket: Option<PathBuf>,
    /// The TCP port, for a TCP listener.
    pub port: Option<u16>,
}

/// A directory of its own for the captive server's socket (removed when dropped).
pub fn private_dir() -> Result<tempfile::TempDir> {
    tempfile::Builder::new()
        .prefix("vecio-nbd-run-")
        .tempdir()
        .context("--run: making a directory for the server's socket")
}

/// The environment CMD gets: the first listener's URI (a Unix one first, as it is private),
/// the socket path and port where there are ones, and the export name.
fn environment(listeners: &[Listener], export_name: &str) -> Vec<(&'static str, String)> {
    let mut env = Vec::new();
    let first = listeners
        .iter()
        .find(|l| l.socket.is_some())
        .or(listeners.first());
    if let Some(l) = first {
        env.push(("uri", l.uri.clone()));
        env.push(("nbd", l.uri.clone()));
    }
    if let Some(s) = listeners.iter().find_map(|l| l.socket.as_ref()) {
        env.push(("unixsocket", s.display().to_string()));
    }
    if let Some(p) = listeners.iter().find_map(|l| l.port) {
        env.push(("port", p.to_string()));
    }
    env.push(("exportname", export_name.to_string()));
    env
}

/// CMD, running, and the thread that stops the server when it exits.
pub struct Captive {
    pid: u32,
    /// Set once the command has exited (and been reaped), before the server is stopped.
    exited: Arc<AtomicBool>,
    waiter: JoinHandle<std::io::Result<ExitStatus>>,
}

impl Captive {
    /// Starts `sh -c CMD` with the server's address in its environment; when it exits,
    /// `stop` is triggered.
    pub fn start(
        cmd: &str,
        listeners: &[Listener],
        export_name: &str,
        stop: ShutdownHandle,
    ) -> Result<Captive> {
        let mut child = Command::new("/bin/sh")
            .arg("-c")
            .arg(cmd)
            .envs(environment(listeners, export_name))
            .spawn()
            .with_context(|| format!("--run: cannot start /bin/sh -c {cmd:?}"))?;
        let pid = child.id();
        let exited = Arc::new(AtomicBool::new(false));
        let done = exited.clone();
        let waiter = std::thread::Builder::new()
            .name("run".into())
            .spawn(move || {
                let status = child.wait();
                done.store(true, Ordering::SeqCst);
                stop.trigger();
                status
            })
            .context("--run: starting the thread that waits for the command")?;
        Ok(Captive {
            pid,
            exited,
            waiter,
        })
    }

    /// Asks the command to stop (SIGTERM to the shell and every process under it) unless it
    /// has exited: the server stopped under it (signalled, or failed). The command stays in
    /// vecio's process group, so an interactive one keeps the terminal; its tree is found in
    /// /proc instead.
    pub fn terminate(&self) {
        if self.exited.load(Ordering::SeqCst) {
            return;
        }
        let mut tree = vec![self.pid];
        let mut i = 0;
        while i < tree.len() {
            tree.extend(children(tree[i]));
            i += 1;
        }
        for pid in tree.into_iter().rev() {
            if let Some(pid) = rustix::process::Pid::from_raw(pid as i32) {
                let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
            }
        }
    }

    /// Waits for the command; its exit status as a shell gives it (128 + the signal that
    /// killed it).
    pub fn exit_code(self) -> Result<i32> {
        let status = self
            .waiter
            .join()
            .map_err(|_| anyhow::anyhow!("--run: the waiting thread panicked"))?
            .context("--run: waiting for the command")?;
        use std::os::unix::process::ExitStatusExt;
        Ok(status
            .code()
            .unwrap_or_else(|| 128 + status.signal().unwrap_or(0)))
    }
}

/// The child processes of `pid` (/proc/PID/task/TID/children, every thread's).
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    tasks
        .flatten()
        .filter_map(|t| std::fs::read_to_string(t.path().join("children")).ok())
        .flat_map(|list| {
            list.split_whitespace()
                .filter_map(|p| p.parse().ok())
                .collect::<Vec<u32>>()
        })
        .collect()
}

/// The private socket's path in `dir`.
pub fn socket_in(dir: &Path) -> PathBuf {
    dir.join("nbd.sock")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_unix_listener_comes_first_and_each_variable_is_set_once() {
        let listeners = [
            Listener {
                uri: "nbd://127.0.0.1:10809/d".into(),
                socket: None,
                port: Some(10809),
            },
            Listener {
                uri: "nbd+unix:///d?socket=/s".into(),
                socket: Some("/s".into()),
                port: None,
            },
        ];
        let env = environment(&listeners, "d");
        let get = |k: &str| env.iter().find(|(n, _)| *n == k).map(|(_, v)| v.as_str());
        assert_eq!(get("uri"), Some("nbd+unix:///d?socket=/s"));
        assert_eq!(get("nbd"), get("uri"));
        assert_eq!(get("unixsocket"), Some("/s"));
        assert_eq!(get("port"), Some("10809"));
        assert_eq!(get("exportname"), Some("d"));
        let tcp_only = environment(&listeners[..1], "");
        assert_eq!(tcp_only[0], ("uri", "nbd://127.0.0.1:10809/d".to_string()));
        assert!(!tcp_only.iter().any(|(n, _)| *n == "unixsocket"));
    }
}
