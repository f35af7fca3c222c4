//! `vecio nbd`: serves a file or block device over NBD until SIGINT or SIGTERM; with
//! `--dir DIR`, every regular file of DIR, each under its file name.
//!
//! Option names follow qemu-nbd where the meaning is the same (`--cache`, `--aio`, `-x`,
//! `-D`, `-r`, `-e/--shared`, `-b`, `-p`, `--pid-file`); the Unix socket is `-U` as in nbdkit.
//! Once listening, one line per socket goes to standard output with the URI a client uses
//! (`nbd+unix:///?socket=...`, `nbd://ADDR:PORT`), after the pid file is written: either
//! tells a script the server is ready. The server runs in the foreground (with `--fork`, in a
//! child, the command returning once the sockets listen) and serves clients one after another
//! until it is signalled (or, with `--oneshot`, until its first client has gone); then it lets
//! every connection finish what it has in flight, flushes the file and exits 0. Under systemd
//! socket activation (`LISTEN_PID` is this process, `LISTEN_FDS` >= 1) it serves the passed
//! sockets (fd 3 on) instead of binding any. TLS options follow nbdkit (`--tls`,
//! `--tls-certificates`, `--tls-verify-peer`); `--tls-authz` follows qemu-nbd's (a list of
//! allowed certificate DNs, or an authz-listfile), `--allow`/`--deny` nbdkit's ip filter, and
//! `--run CMD` nbdkit's captive mode (`captive`).

use std::io::Write;
use std::net::{IpAddr, SocketAddr};
use std::os::fd::AsFd;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use vecio_nbd::image_lock::{self, ImageLock};
use vecio_nbd::{Cache, Export, ExportDir, ExportOptions, Server, ServerOptions};

use crate::cli::UsageError;

mod captive;

/// Options of `vecio nbd`.
#[derive(Args, Debug, Clone)]
#[command(group(clap::ArgGroup::new("source").required(true).args(["file", "dir"])))]
pub struct NbdArgs {
    /// File or block device to export (or --dir).
    pub file: Option<PathBuf>,
    /// Serve every regular file of DIR, each under its file name (listed by nbdinfo --list),
    /// opened on first use and shared by every connection to it. Files added later are
    /// served, removed ones are not; symbolic links, subdirectories, devices and names
    /// with '/' or '..' are refused. "" is refused unless -x names a default export.
    #[arg(long, value_name = "DIR")]
    pub dir: Option<PathBuf>,
    /// Unix socket to listen on (-k, as qemu-nbd spells it, is the same). Default, when
    /// neither -p nor -b is given: FILE.sock (DIR.sock, beside DIR, with --dir).
    #[arg(short = 'U', long = "socket", short_alias = 'k')]
    pub socket: Option<PathBuf>,
    /// TCP port to listen on (0: any free port; the one chosen is printed). -b without -p
    /// listens on 10809, NBD's port, as qemu-nbd does.
    #[arg(short = 'p', long)]
    pub port: Option<u16>,
    /// Address or host name to listen on for TCP (every address the name resolves to);
    /// 127.0.0.1 when only -p is given.
    #[arg(short = 'b', long = "bind")]
    pub bind: Option<String>,
    /// The file's format: raw only, its bytes being the disk (qemu-nbd's -f raw). Without it,
    /// a file that starts with a qcow2, QED, VMDK, VHD(X), VDI or LUKS signature is refused.
    #[arg(short = 'f', long, value_enum)]
    pub format: Option<crate::image_format::Format>,
    /// Export read-only: writes, trims and zeroing fail with EPERM.
    #[arg(short = 'r', long)]
    pub read_only: bool,
    /// With -r: serve FILE even while another process holds it under qemu's image locks
    /// (qemu-nbd's -U). Without it, FILE is locked as qemu-nbd locks it, and an image a
    /// virtual machine is writing is refused.
    #[arg(long, requires = "read_only")]
    pub force_share: bool,
    /// Connections served at once (0: no limit); more clients wait until one leaves.
    #[arg(short = 'e', long, default_value_t = 16)]
    pub shared: usize,
    /// none: direct I/O (O_DIRECT), no page cache; writeback: buffered I/O.
    #[arg(long, default_value = "none")]
    pub cache: Cache,
    /// I/O engine of each connection: uring, sync, pool (or serial, the baseline); qemu-nbd's
    /// io_uring, native (Linux AIO: served by uring, vecio has no libaio engine) and threads
    /// (pool) are accepted.
    #[arg(long, default_value = "uring", value_parser = parse_aio)]
    pub aio: vecio::EngineKind,
    /// Export name (clients may also ask for the default export, ""). With --dir: the file
    /// of DIR that "" means (by default "" is refused under --dir).
    #[arg(short = 'x', long, default_value = "")]
    pub export_name: String,
    /// Export description shown to clients (with --dir: the -x export's).
    #[arg(short = 'D', long, default_value = "")]
    pub description: String,
    /// Write the process id to this file once listening.
    #[arg(long)]
    pub pid_file: Option<PathBuf>,
    /// Serve until signalled (the default, as nbdkit does; qemu-nbd's -t).
    #[arg(short = 't', long, conflicts_with = "oneshot")]
    pub persistent: bool,
    /// Exit once the first client has disconnected (qemu-nbd's default without -t).
    #[arg(long)]
    pub oneshot: bool,
    /// Return once the sockets listen; the server goes on in a child process of its own
    /// session, as qemu-nbd's --fork (stop it with SIGTERM to the pid in --pid-file).
    #[arg(long, conflicts_with = "exit_with_parent")]
    pub fork: bool,
    /// Exit (as on SIGTERM) when the parent process dies: PR_SET_PDEATHSIG, as nbdkit does.
    #[arg(long)]
    pub exit_with_parent: bool,
    /// Run CMD (`sh -c`) once listening, with $uri (also $nbd), $unixsocket, $port and
    /// $exportname set, then stop and exit with its status: nbdkit's captive mode. Without
    /// -U, -p or -b the socket is private to the run.
    #[arg(long, value_name = "CMD", conflicts_with = "fork")]
    pub run: Option<String>,
    /// TLS: off, on (offered; clients choose) or require (plain clients are refused with
    /// NBD_REP_ERR_TLS_REQD). Default: require with --tls-authz, on when --tls-certificates or --tls-psk is given, else off.
    #[arg(long)]
    pub tls: Option<vecio_nbd::TlsMode>,
    /// Directory with server-cert.pem, server-key.pem and (for --tls-verify-peer)
    /// ca-cert.pem, as nbdkit and qemu lay them out.
    #[arg(long, value_name = "DIR")]
    pub tls_certificates: Option<PathBuf>,
    /// Clients must present a certificate signed by DIR/ca-cert.pem.
    #[arg(long)]
    pub tls_verify_peer: bool,
    /// TLS with pre-shared keys instead of certificates: nbdkit's key file, one
    /// username:hexkey line per client (GnuTLS' psktool writes it; libnbd's tls-psk-file and
    /// tls-username, or qemu's tls-creds-psk, read it).
    #[arg(long, value_name = "FILE", conflicts_with = "tls_certificates")]
    pub tls_psk: Option<PathBuf>,
    /// Let on only TLS clients whose certificate subject DN (RFC 4514, most specific part
    /// first: "CN=client-a,O=Example,C=GB", as the refusal log prints it) is one of these, or
    /// with --tls-psk whose user name is; "glob:PATTERN" is a shell glob. Repeat for more.
    /// Needs --tls=require and, with certificates, --tls-verify-peer (both implied when not
    /// given). Others are logged and disconnected after the TLS handshake.
    #[arg(long, value_name = "DN", conflicts_with = "tls_authz_file")]
    pub tls_authz: Vec<String>,
    /// As --tls-authz, from qemu's authz-listfile JSON: {"policy": "deny", "rules":
    /// [{"match": DN, "policy": "allow"|"deny", "format": "exact"|"glob"}]}; the first rule
    /// that matches decides, else the policy. Read once, at start.
    #[arg(long, value_name = "FILE")]
    pub tls_authz_file: Option<PathBuf>,
    /// Serve these clients whatever --deny says: addresses, networks (10.0.0.0/8,
    /// fd00::/64), all, anyipv4, anyipv6, anyunix, uid:N, gid:N, pid:N (Unix-socket
    /// clients), comma-separated or repeated, as nbdkit's ip filter takes them.
    #[arg(long, value_name = "RULES", value_delimiter = ',', value_parser = parse_rule)]
    pub allow: Vec<vecio_nbd::AddrRule>,
    /// Refuse these clients (the same forms as --allow) unless --allow names them; clients
    /// neither names are served. A refused client is logged and disconnected at once.
    #[arg(long, value_name = "RULES", value_delimiter = ',', value_parser = parse_rule)]
    pub deny: Vec<vecio_nbd::AddrRule>,
}

/// NBD's registered TCP port (IANA), qemu-nbd's and nbd-server's default.
const NBD_PORT: u16 = 10809;

impl NbdArgs {
    /// The TCP port to listen on: -p, or NBD's port when only -b says to listen on TCP.
    fn tcp_port(&self) -> Option<u16> {
        self.port.or(self.bind.as_ref().map(|_| NBD_PORT))
    }
}

/// One `--allow`/`--deny` rule.
fn parse_rule(s: &str) -> std::result::Result<vecio_nbd::AddrRule, String> {
    s.trim().parse()
}

/// `--aio`: vecio's engine names, and qemu-nbd's.
fn parse_aio(s: &str) -> std::result::Result<vecio::EngineKind, String> {
    match s {
        "io_uring" | "native" => Ok(vecio::EngineKind::Uring),
        "threads" => Ok(vecio::EngineKind::Pool),
        _ => s.parse(),
    }
}

/// The TCP addresses `-b HOST -p PORT` names: an IP address, or every address a host name
/// resolves to (`getaddrinfo(3)`), without repeats.
fn bind_addrs(host: &str, port: u16) -> Result<Vec<SocketAddr>> {
    use std::net::ToSocketAddrs;
    if let Ok(ip) = host.trim_matches(['[', ']']).parse::<IpAddr>() {
        return Ok(vec![SocketAddr::new(ip, port)]);
    }
    let mut addrs: Vec<SocketAddr> = (host, port)
        .to_socket_addrs()
        .with_context(|| format!("-b {host}: cannot resolve the host name"))?
        .collect();
    addrs.dedup();
    anyhow::ensure!(!addrs.is_empty(), "-b {host}: the name has no address");
    Ok(addrs)
}

/// The TLS settings the options ask for.
fn tls(a: &NbdArgs) -> Result<Option<vecio_nbd::Tls>> {
    use vecio_nbd::TlsMode;
    if a.tls_verify_peer && a.tls_certificates.is_none() {
        return Err(crate::cli::UsageError(
            "--tls-verify-peer checks client certificates: it needs --tls-certificates=DIR".into(),
        )
        .into());
    }
    let authz = authz(a)?;
    let mode = tls_mode(a);
    if mode == TlsMode::Off {
        return Ok(None);
    }
    let tls = match (&a.tls_certificates, &a.tls_psk) {
        (None, None) => {
            return Err(crate::cli::UsageError(format!(
                "--tls={} needs --tls-certificates=DIR or --tls-psk=FILE",
                format!("{mode:?}").to_lowercase()
            ))
            .into())
        }
        (Some(dir), None) => {
            let verify = a.tls_verify_peer || authz.is_some();
            vecio_nbd::Tls::from_dir(mode, dir, verify)?
        }
        (None, Some(file)) => vecio_nbd::Tls::from_psk_file(mode, file)?,
        (Some(_), Some(_)) => unreachable!("clap refuses --tls-certificates with --tls-psk"),
    };
    match authz {
        None => Ok(Some(tls)),
        Some(_) if mode != TlsMode::Require => {
            Err(UsageError("--tls-authz checks every client: it needs --tls=require".into()).into())
        }
        Some(list) => Ok(Some(tls.with_authz(list)?)),
    }
}

/// `--tls`, or its default: require under `--tls-authz`, on with credentials, else off.
fn tls_mode(a: &NbdArgs) -> vecio_nbd::TlsMode {
    use vecio_nbd::TlsMode;
    let authz = !a.tls_authz.is_empty() || a.tls_authz_file.is_some();
    let default = match (&a.tls_certificates, &a.tls_psk) {
        _ if authz => TlsMode::Require,
        (None, None) => TlsMode::Off,
        _ => TlsMode::On,
    };
    a.tls.unwrap_or(default)
}

/// The `--tls-authz` list, from the options or the file; `None` when neither is given.
fn authz(a: &NbdArgs) -> Result<Option<vecio_nbd::Authz>> {
    let list = match (&a.tls_authz_file, a.tls_authz.is_empty()) {
        (Some(file), _) => vecio_nbd::Authz::load(file)?,
        (None, false) => vecio_nbd::Authz::allowing(a.tls_authz.iter().cloned()),
        (None, true) => return Ok(None),
    };
    if a.tls_certificates.is_none() && a.tls_psk.is_none() {
        let msg = "--tls-authz checks TLS identities: it needs --tls-certificates or --tls-psk";
        return Err(UsageError(msg.into()).into());
    }
    Ok(Some(list))
}

/// What the user can do about a file `vecio nbd FILE` cannot open, added to the error: a file
/// this user may not write, or one on a read-only filesystem, can still be exported with -r
/// (qemu-nbd and nbdkit users meet the same refusal); a directory is served with --dir.
fn open_hint(e: vecio_nbd::Error, read_only: bool) -> anyhow::Error {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(&e);
    while let Some(c) = cause {
        let errno = c
            .downcast_ref::<std::io::Error>()
            .and_then(|io| io.raw_os_error());
        if !read_only && matches!(errno, Some(libc::EACCES | libc::EPERM | libc::EROFS)) {
            return anyhow::anyhow!("{e}; -r exports it read-only");
        }
        if errno == Some(libc::EISDIR) {
            return anyhow::anyhow!("{e}; --dir DIR serves each regular file of a directory");
        }
        cause = c.source();
    }
    e.into()
}

/// The server of FILE, or of DIR's files, listening nowhere yet, and qemu's locks on FILE
/// (held while it serves).
fn server(a: &NbdArgs) -> Result<(Server, Option<ImageLock>)> {
    let opts = ServerOptions {
        aio: a.aio,
        shared: a.shared,
        tls: tls(a)?,
        oneshot: a.oneshot,
        access: vecio_nbd::IpFilter {
            allow: a.allow.clone(),
            deny: a.deny.clone(),
        },
    };
    let export = ExportOptions {
        name: a.export_name.clone(),
        description: a.description.clone(),
        read_only: a.read_only,
        cache: a.cache,
    };
    let Some(dir) = &a.dir else {
        let file = a.file.as_deref().context("FILE or --dir is required")?;
        let read_only = export.read_only;
        let export = Export::open(file, export).map_err(|e| open_hint(e, read_only))?;
        if a.format.is_none() {
            vecio_nbd::image_format::refuse_container(export.file(), file)?;
        }
        // On the export's own open file description, as under --dir: the locks are on the
        // file served, even if FILE is replaced meanwhile.
        let served = export.file().as_fd().try_clone_to_owned();
        let served = served.with_context(|| format!("{}: dup", file.display()))?;
        let access = image_lock::Access::of(a.read_only, a.force_share);
        let lock = image_lock::lock_open(served.into(), file, access)?;
        tracing::info!(
            file = %file.display(),
            size = export.size(),
            direct = export.file().is_direct(),
            align = export.file().dio_align().offset,
            "export"
        );
        return Ok((Server::new(export, opts)?, lock));
    };
    if !a.description.is_empty() && a.export_name.is_empty() {
        let msg = "--dir: -D describes the default export: name it with -x";
        return Err(UsageError(msg.into()).into());
    }
    if !a.export_name.is_empty() {
        if let Err(why) = vecio_nbd::check_name(&a.export_name) {
            return Err(UsageError(format!("-x {:?}: {why}", a.export_name)).into());
        }
    }
    let exports = ExportDir::open(dir, export)?
        .any_format(a.format.is_some())
        .force_share(a.force_share);
    tracing::info!(dir = %dir.display(), default = a.export_name, "exports");
    Ok((Server::with_dir(exports, opts)?, None))
}

/// FILE.sock, or DIR.sock beside DIR (never inside it, whatever slashes DIR ends with).
fn default_socket(a: &NbdArgs) -> PathBuf {
    let mut s = match (&a.dir, &a.file) {
        (Some(d), _) => {
            let d = std::path::absolute(d).unwrap_or_else(|_| d.clone());
            d.components().collect::<PathBuf>().into_os_string()
        }
        (None, Some(f)) => f.clone().into_os_string(),
        (None, None) => "vecio-nbd".into(),
    };
    s.push(".sock");
    PathBuf::from(s)
}

/// Runs `vecio nbd`.
pub fn run(a: NbdArgs) -> Result<()> {
    // Socket activation: taken (and the variables unset) before anything starts a thread.
    let passed = vecio_nbd::listen_fds();
    if !passed.is_empty() && (a.socket.is_some() || a.tcp_port().is_some()) {
        anyhow::bail!("socket activation (LISTEN_FDS) cannot be combined with -U, -p or -b");
    }
    // --run without an address: a private socket, not FILE.sock beside the file.
    let private = match &a.run {
        Some(_) if passed.is_empty() && a.socket.is_none() && a.tcp_port().is_none() => {
            Some(captive::private_dir()?)
        }
        _ => None,
    };
    let a = match &private {
        Some(dir) => NbdArgs {
            socket: Some(captive::socket_in(dir.path())),
            ..a
        },
        None => a,
    };
    let (mut server, _image_lock) = server(&a)?;
    let listeners = listen(&mut server, &a, passed)?;
    if a.fork {
        fork_server(&listeners, a.pid_file.as_deref())?; // returns in the child only
    }
    let stop = server.shutdown_handle();
    let held = server.held();
    crate::signals::on_usr1(move || held.now().to_string())?;
    crate::signals::on_stop(move |sig| {
        tracing::info!(signal = sig, "stopping");
        stop.trigger();
    })?;
    exit_with_parent_and_pid_file(&a)?;
    let captive = match &a.run {
        Some(cmd) => {
            let stop = server.shutdown_handle();
            Some(captive::Captive::start(
                cmd,
                &listeners,
                &a.export_name,
                stop,
            )?)
        }
        None => {
            print_uris(&listeners)?;
            None
        }
    };
    let result = server.run();
    if let Some(p) = &a.pid_file {
        let _ = std::fs::remove_file(p);
    }
    let Some(captive) = captive else {
        return Ok(result?);
    };
    // Stopped by a signal or a failure rather than by the command's end: the command goes too.
    captive.terminate();
    let code = captive.exit_code()?;
    result?;
    drop(private);
    std::process::exit(code);
}

/// One line per listener on standard output: the URI a client uses.
fn print_uris(listeners: &[captive::Listener]) -> Result<()> {
    let mut out = std::io::stdout().lock();
    for l in listeners {
        writeln!(out, "{}", l.uri)?;
    }
    out.flush()?;
    Ok(())
}

/// Listens where the options say (the passed sockets, `-U`, `-p` on every address of `-b`);
/// returns each listener, with the URI printed for it.
fn listen(
    server: &mut Server,
    a: &NbdArgs,
    passed: Vec<std::os::fd::OwnedFd>,
) -> Result<Vec<captive::Listener>> {
    let socket = match (&a.socket, a.tcp_port()) {
        _ if !passed.is_empty() => None,
        (Some(s), _) => Some(s.clone()),
        (None, None) => Some(default_socket(a)),
        (None, Some(_)) => None,
    };
    let name = uri_path(&a.export_name);
    // nbds: the client must use TLS (only under --tls=require is that true of every client).
    let scheme = match tls_mode(a) {
        vecio_nbd::TlsMode::Require => "nbds",
        _ => "nbd",
    };
    let unix = |p: PathBuf| captive::Listener {
        uri: format!("{scheme}+unix://{name}?socket={}", p.display()),
        socket: Some(p),
        port: None,
    };
    let mut lines = Vec::new();
    for fd in passed {
        lines.push(match server.listen_fd(fd)? {
            vecio_nbd::ListenAddr::Unix(Some(p)) => unix(p),
            vecio_nbd::ListenAddr::Unix(None) => captive::Listener {
                uri: "(passed Unix socket without a path)".into(),
                socket: None,
                port: None,
            },
            vecio_nbd::ListenAddr::Tcp(at) => captive::Listener {
                uri: format!("{scheme}://{at}{name}"),
                socket: None,
                port: Some(at.port()),
            },
        });
    }
    if let Some(s) = &socket {
        server.listen_unix(s)?;
        lines.push(unix(std::path::absolute(s).unwrap_or_else(|_| s.clone())));
    }
    if let Some(mut port) = a.tcp_port() {
        let host = a.bind.as_deref().unwrap_or("127.0.0.1");
        for addr in bind_addrs(host, port)? {
            // Port 0: the first listener picks the port, the others take the same one.
            let at = server.listen_tcp(SocketAddr::new(addr.ip(), port))?;
            port = at.port();
            let host = match at {
                SocketAddr::V4(v) => v.ip().to_string(),
                SocketAddr::V6(v) => format!("[{}]", v.ip()),
            };
            lines.push(captive::Listener {
                uri: format!("{scheme}://{host}:{}{name}", at.port()),
                socket: None,
                port: Some(at.port()),
            });
        }
    }
    Ok(lines)
}

/// `--exit-with-parent` (`PR_SET_PDEATHSIG`) and `--pid-file` (unless `--fork` wrote it), once
/// the server listens.
fn exit_with_parent_and_pid_file(a: &NbdArgs) -> Result<()> {
    if a.exit_with_parent {
        let parent = rustix::process::getppid();
        rustix::process::set_parent_process_death_signal(Some(rustix::process::Signal::TERM))
            .context("--exit-with-parent: prctl(PR_SET_PDEATHSIG)")?;
        // The parent may have gone before prctl: then the signal never comes.
        if rustix::process::getppid() != parent {
            anyhow::bail!("--exit-with-parent: the parent process is already gone");
        }
    }
    // After --fork the parent wrote it, with this process's pid, before it exited: a second
    // write here could meet a reader of the first.
    if let Some(p) = a.pid_file.as_deref().filter(|_| !a.fork) {
        crate::daemon::write_pid_file(p, std::process::id())?;
    }
    Ok(())
}

/// `--fork`: the parent writes the pid file with the child's pid, prints the URIs and exits 0
/// (without running destructors: the sockets and their files are the child's); the child
/// starts a session of its own, with standard input and output on /dev/null, and returns.
fn fork_server(listeners: &[captive::Listener], pid_file: Option<&std::path::Path>) -> Result<()> {
    std::io::stdout().flush()?;
    // Called before this process starts any thread (the signal thread comes after).
    let pid = match crate::daemon::fork_detached(None, false).context("--fork")? {
        crate::daemon::Forked::Child => return Ok(()),
        crate::daemon::Forked::Parent(pid) => pid,
    };
    if let Some(p) = pid_file {
        crate::daemon::write_pid_file(p, pid)?;
    }
    print_uris(listeners)?;
    std::process::exit(0);
}

/// The path part of an NBD URI naming `export` ("/" + name, or "/" for the default).
fn uri_path(export: &str) -> String {
    let mut s = String::from("/");
    for b in export.bytes() {
        if b.is_ascii_alphanumeric() || b"-._~/".contains(&b) {
            s.push(b as char);
        } else {
            s.push_str(&format!("%{b:02X}"));
        }
    }
    s
}
