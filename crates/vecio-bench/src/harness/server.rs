//! A server measured as a process: started, waited on until it listens, stopped and reaped
//! with `wait4(2)` for its whole life's usage (docs/report.md, "The harness").

use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::net::{SocketAddr, TcpStream};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use anyhow::{bail, Context, Result};

use crate::harness::rusage::Usage;

/// How long a server may take to accept connections after it starts: qemu-nbd with TLS took
/// over 10 s on a loaded 2-CPU machine (make test's parts side by side).
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a server may take to exit after SIGTERM before it gets SIGKILL.
pub const STOP_TIMEOUT: Duration = Duration::from_secs(5);

/// How often the start and stop loops look again.
const POLL: Duration = Duration::from_millis(5);

/// A running server process listening on a Unix socket.
#[derive(Debug)]
pub struct ServerProcess {
    /// `None` once the process has been reaped.
    child: Option<Child>,
    /// Program name, for messages.
    name: String,
    /// The socket it listens on.
    socket: PathBuf,
    /// Its standard output and error.
    log: PathBuf,
    /// Registered to be stopped if the run is stopped.
    _tracked: crate::harness::cleanup::Tracked,
}

impl ServerProcess {
    /// Starts `cmd` with its output appended to `log` and waits (up to [`START_TIMEOUT`]) until
    /// `socket` accepts a connection. The probe connection is closed at once, before any
    /// handshake. Fails, with the end of the log, if the process exits or never listens.
    pub fn start(cmd: Command, socket: &Path, log: &Path) -> Result<ServerProcess> {
        let mut server = ServerProcess::spawn(cmd, socket, log)?;
        let probe = socket.to_path_buf();
        server.wait_until(&format!("listen on {}", socket.display()), || {
            UnixStream::connect(&probe).is_ok().then_some(())
        })?;
        Ok(server)
    }

    /// Starts `cmd`, a server told to listen on a TCP port of its choice (port 0), and waits
    /// (up to [`START_TIMEOUT`]) until it prints `listening on ADDR` to its standard output and
    /// ADDR accepts a connection. Returns the server and ADDR. Fails, with the end of the log, if
    /// the process exits (a port in use, a bad argument) or never listens.
    pub fn start_tcp(cmd: Command, log: &Path) -> Result<(ServerProcess, SocketAddr)> {
        let mut server = ServerProcess::spawn(cmd, Path::new(""), log)?;
        let log = log.to_path_buf();
        let addr = server.wait_until("announce a TCP address", || {
            announced(&log).filter(|a| TcpStream::connect(a).is_ok())
        })?;
        Ok((server, addr))
    }

    /// Spawns `cmd` with its output appended to `log`, tracked for clean-up.
    fn spawn(mut cmd: Command, socket: &Path, log: &Path) -> Result<ServerProcess> {
        let name = program_name(&cmd);
        let out = File::options()
            .create(true)
            .append(true)
            .open(log)
            .with_context(|| format!("creating {}", log.display()))?;
        let err = out.try_clone().context("duplicating the log file")?;
        cmd.stdin(Stdio::null()).stdout(out).stderr(err);
        crate::harness::cleanup::die_with_parent(&mut cmd);
        let child = cmd
            .spawn()
            .with_context(|| format!("cannot start {name}"))?;
        let tracked = crate::harness::cleanup::track_child(child.id());
        // From here on, dropping the server stops the process, whatever goes wrong.
        Ok(ServerProcess {
            child: Some(child),
            name,
            socket: socket.to_path_buf(),
            log: log.to_path_buf(),
            _tracked: tracked,
        })
    }

    /// Polls `ready` until it gives a value, the process exits or [`START_TIMEOUT`] passes;
    /// `what` names what the server was to do, for the error.
    fn wait_until<T>(&mut self, what: &str, mut ready: impl FnMut() -> Option<T>) -> Result<T> {
        let start = Instant::now();
        loop {
            if let Some(v) = ready() {
                return Ok(v);
            }
            let exited = match &mut self.child {
                Some(c) => c.try_wait().context("waiting for the server")?,
                None => bail!("{} was already reaped", self.name),
            };
            if let Some(status) = exited {
                self.child = None;
                bail!(
                    "{} exited ({status}) before it could {what}: {}",
                    self.name,
                    log_tail(&self.log)
                );
            }
            if start.elapsed() > START_TIMEOUT {
                bail!(
                    "{} did not {what} within {:?}: {}",
                    self.name,
                    START_TIMEOUT,
                    log_tail(&self.log)
                );
            }
            std::thread::sleep(POLL);
        }
    }

    /// The process id.
    pub fn pid(&self) -> Option<u32> {
        self.child.as_ref().map(Child::id)
    }

    /// The socket the server listens on (empty for a server started with
    /// [`ServerProcess::start_tcp`]).
    pub fn socket(&self) -> &Path {
        &self.socket
    }

    /// The `nbd+unix` URI of the server's default export.
    pub fn nbd_uri(&self) -> String {
        format!("nbd+unix:///?socket={}", self.socket.display())
    }

    /// Stops the server (SIGTERM, SIGKILL after [`STOP_TIMEOUT`]), reaps it and returns what
    /// the whole process consumed over its life, every thread included (`wait4(2)`).
    pub fn stop(mut self) -> Result<Usage> {
        let name = self.name.clone();
        self.terminate()
            .with_context(|| format!("stopping {name}"))?
            .with_context(|| format!("{name} was already reaped"))
    }

    /// Signals and reaps the process if it has not been reaped yet.
    fn terminate(&mut self) -> io::Result<Option<Usage>> {
        let Some(mut child) = self.child.take() else {
            return Ok(None);
        };
        let pid = child.id() as libc::pid_t;
        // `child` is our unreaped child, so its id cannot have been reused by another process.
        let _ = rustix::process::kill_process(
            rustix::process::Pid::from_child(&child),
            rustix::process::Signal::TERM,
        );
        let deadline = Instant::now() + STOP_TIMEOUT;
        while Instant::now() <= deadline {
            if let Some(usage) = wait4(pid, true)? {
                return Ok(Some(usage));
            }
            std::thread::sleep(POLL);
        }
        tracing::warn!(server = %self.name, socket = %self.socket.display(), "no exit after SIGTERM; sending SIGKILL");
        child.kill()?;
        // Without WNOHANG, wait4 returns once the child is gone.
        wait4(pid, false)
    }
}

impl Drop for ServerProcess {
    fn drop(&mut self) {
        if let Err(e) = self.terminate() {
            tracing::warn!(server = %self.name, error = %e, "stopping the server");
        }
    }
}

/// `wait4(pid)`: the child's resource usage once it has exited, `None` while it runs (with
/// `nohang`). Retries on EINTR.
fn wait4(pid: libc::pid_t, nohang: bool) -> io::Result<Option<Usage>> {
    let flags = if nohang { libc::WNOHANG } else { 0 };
    loop {
        let mut status: libc::c_int = 0;
        // SAFETY: `rusage` is plain old data; all zeroes is a valid value, overwritten by the
        // kernel when the child is reaped.
        let mut ru: libc::rusage = unsafe { std::mem::zeroed() };
        // SAFETY: `status` and `ru` are valid, writable and outlive the call.
        let r = unsafe { libc::wait4(pid, &mut status, flags, &mut ru) };
        if r == pid {
            return Ok(Some(Usage::of(&ru)));
        }
        if r == 0 {
            return Ok(None);
        }
        let e = io::Error::last_os_error();
        if e.kind() != io::ErrorKind::Interrupted {
            return Err(e);
        }
    }
}

/// The program `cmd` runs, for messages: its own, or for a chroot peer (`bash -c SCRIPT peers
/// run ... -- PROG ARGS`) the one after `--`.
fn program_name(cmd: &Command) -> String {
    let mut args = cmd.get_args().skip_while(|a| *a != "--");
    match (args.next(), args.next()) {
        (Some(_), Some(prog)) if cmd.get_program() == "bash" => {
            format!("{} (chroot)", prog.to_string_lossy())
        }
        _ => cmd.get_program().to_string_lossy().into_owned(),
    }
}

/// The address of the first `listening on ADDR` line of a server's log, if it has one yet.
fn announced(log: &Path) -> Option<SocketAddr> {
    let text = std::fs::read_to_string(log).ok()?;
    text.lines().find_map(|l| {
        let rest = l.split("listening on ").nth(1)?;
        rest.split_whitespace().next()?.parse().ok()
    })
}

/// The last lines of a server's log, on one line, for an error message.
fn log_tail(log: &Path) -> String {
    let mut text = String::new();
    if let Ok(mut f) = File::open(log) {
        let len = f.metadata().map_or(0, |m| m.len());
        let _ = f.seek(SeekFrom::Start(len.saturating_sub(2048)));
        let _ = f.read_to_string(&mut text);
    }
    match diagnostics(&text, 4, true) {
        t if t.is_empty() => "it printed nothing".to_string(),
        t => t,
    }
}

/// `n` non-blank lines of `text`, the first or the `last`, joined by ` | `: a program's
/// diagnostics on one line of an error message.
pub fn diagnostics(text: &str, n: usize, last: bool) -> String {
    let lines: Vec<&str> = text.lines().filter(|l| !l.trim().is_empty()).collect();
    let (from, to) = match last {
        true => (lines.len().saturating_sub(n), lines.len()),
        false => (0, n.min(lines.len())),
    };
    lines[from..to].join(" | ")
}

/// The full path of `program` found in `PATH`, if it is there and executable.
pub fn find_program(program: &str) -> Option<PathBuf> {
    use std::os::unix::fs::PermissionsExt;
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .map(|dir| dir.join(program))
        .find(|p| {
            p.metadata()
                .is_ok_and(|m| m.is_file() && m.permissions().mode() & 0o111 != 0)
        })
}

/// The first line `program args` prints on stdout (or stderr), when it runs and succeeds.
pub fn first_line(program: &str, args: &[&str]) -> Option<String> {
    let out = Command::new(program).args(args).output();
    let out = out.ok().filter(|o| o.status.success())?;
    let text = if out.stdout.is_empty() {
        out.stderr
    } else {
        out.stdout
    };
    let text = String::from_utf8_lossy(&text);
    text.lines()
        .map(str::trim)
        .find(|l| !l.is_empty())
        .map(str::to_string)
}
