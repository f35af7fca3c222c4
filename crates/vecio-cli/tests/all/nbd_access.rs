//! `vecio nbd`'s access control with real clients: `--allow`/`--deny` across network
//! namespaces (a client in one namespace served, one in another refused, over IPv4 and IPv6,
//! and a Unix-socket client by the same rules), and `--tls-authz` with two client
//! certificates from the same CA (one let on, one refused) and with two pre-shared-key users,
//! with nbdinfo and qemu-img from the host and, where it exists, the trixie chroot. Every
//! refusal must leave a log line naming the client: its address, and for authz its
//! certificate's DN or its user name.
//!
//! Needs root for the namespaces (skips saying why otherwise); the TLS tests need openssl.

use crate::common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use vecio_testkit::certs::{self, Role};
use vecio_testkit::{Netns, Peers};

/// A `vecio nbd` process (in a namespace when asked), its printed URIs and its log.
struct Server {
    child: Child,
    uris: Vec<String>,
    log: PathBuf,
}

impl Server {
    /// `vecio nbd IMAGE ARGS`, in network namespace `ns` if given; waits for its `lines` URIs.
    fn start(dir: &Path, ns: Option<&str>, args: &[&str], lines: usize) -> Server {
        let image = dir.join("disk.img");
        if !image.exists() {
            std::fs::write(&image, vec![0x5a; 1 << 20]).unwrap();
        }
        let log = dir.join(format!("server-{}.log", std::process::id()));
        let mut cmd = Command::new(env!("CARGO_BIN_EXE_vecio"));
        cmd.arg("nbd").arg(&image).args(args);
        cmd.env("VECIO_LOG", "vecio_nbd=info");
        let mut cmd = match ns {
            Some(ns) => Netns::exec(ns, &cmd),
            None => cmd,
        };
        let mut child = cmd
            .stdout(Stdio::piped())
            .stderr(std::fs::File::create(&log).unwrap())
            .spawn()
            .expect("vecio nbd");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut uris = Vec::new();
        for _ in 0..lines {
            let mut line = String::new();
            out.read_line(&mut line).unwrap();
            let log_text = std::fs::read_to_string(&log).unwrap_or_default();
            assert!(line.starts_with("nbd"), "{line:?}\n{log_text}");
            uris.push(line.trim().to_string());
        }
        Server { child, uris, log }
    }

    /// The TCP port of the first `nbd://` URI.
    fn port(&self) -> u16 {
        let tcp = self.uris.iter().find(|u| !u.contains("+unix")).unwrap();
        let tail = tcp.rsplit(':').next().unwrap();
        tail.trim_end_matches('/').parse().unwrap()
    }

    /// Stops the server (SIGTERM) and returns its log.
    fn stop(mut self) -> String {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        let status = self.child.wait().unwrap();
        let log = std::fs::read_to_string(&self.log).unwrap();
        assert!(status.success(), "server exit: {status}\n{log}");
        log
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn output(mut cmd: Command) -> Output {
    cmd.output().unwrap_or_else(|e| panic!("{cmd:?}: {e}"))
}

/// Asserts `cmd` succeeds (`yes`) or fails; returns its standard error.
fn expect(cmd: Command, yes: bool, what: &str) -> String {
    let shown = format!("{cmd:?}");
    let out = output(cmd);
    let err = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.success(), yes, "{what}: {shown}\n{err}");
    err
}

/// nbdinfo from `peers` on `uri`, in namespace `ns` if given.
fn nbdinfo(peers: &Peers, share: &Path, ns: Option<&str>, uri: &str) -> Command {
    let mut c = peers.command("nbdinfo", share);
    c.arg("--size").arg(uri);
    match ns {
        Some(ns) => Netns::exec(ns, &c),
        None => c,
    }
}

#[test]
fn allow_and_deny_sort_clients_of_two_namespaces() {
    let Some(net) = Netns::star(2) else { return };
    let dir = common::scratch_dir("vecio-nbd-access-");
    let d = dir.path();
    let v6 = net.has_ipv6();
    // Link 1's network is allowed, link 2's denied; the Unix client is named by neither rule.
    let (allow, deny) = match v6 {
        true => (
            "10.231.1.0/24,fd00:231:1::/64",
            "10.231.2.0/24,fd00:231:2::/64",
        ),
        false => ("10.231.1.0/24", "10.231.2.0/24"),
    };
    let sock = d.join("nbd.sock");
    let args = [
        "-p",
        "0",
        "-b",
        "::",
        "-U",
        sock.to_str().unwrap(),
        "--allow",
        allow,
        "--deny",
        deny,
    ];
    let srv = Server::start(d, Some(net.server()), &args, 2);
    let port = srv.port();
    let mut targets = vec![("10.231.1.1", "10.231.2.1")];
    if v6 {
        targets.push(("[fd00:231:1::1]", "[fd00:231:2::1]"));
    }
    for peers in Peers::all() {
        if !peers.has("nbdinfo") {
            continue;
        }
        for (ok, refused) in &targets {
            let uri = format!("nbd://{ok}:{port}/");
            expect(
                nbdinfo(&peers, d, Some(net.client(1)), &uri),
                true,
                "allowed",
            );
            let uri = format!("nbd://{refused}:{port}/");
            expect(
                nbdinfo(&peers, d, Some(net.client(2)), &uri),
                false,
                "denied",
            );
        }
        let unix = format!("nbd+unix:///?socket={}", sock.display());
        expect(
            nbdinfo(&peers, d, None, &unix),
            true,
            "unix, named by no rule",
        );
    }
    let log = srv.stop();
    let refusals: Vec<&str> = log.lines().filter(|l| l.contains("refused")).collect();
    assert!(refusals.iter().any(|l| l.contains("10.231.2.2")), "{log}");
    if v6 {
        // An IPv4 client of the dual-stack socket is named as IPv4, an IPv6 one as IPv6.
        assert!(
            refusals.iter().any(|l| l.contains("fd00:231:2::2")),
            "{log}"
        );
    }
    assert!(
        !log.contains("10.231.1.2") && !log.contains("fd00:231:1::2"),
        "{log}"
    );
    assert!(!refusals.iter().any(|l| l.contains("unix")), "{log}");
}

#[test]
fn deny_all_refuses_unix_clients_too_unless_allowed() {
    let Some(peers) = Peers::all().into_iter().find(|p| p.has("nbdinfo")) else {
        return;
    };
    let dir = common::scratch_dir("vecio-nbd-access-");
    let d = dir.path();
    let sock = d.join("nbd.sock");
    let unix = format!("nbd+unix:///?socket={}", sock.display());
    let s = sock.to_str().unwrap();
    let srv = Server::start(d, None, &["-U", s, "--deny", "all"], 1);
    expect(nbdinfo(&peers, d, None, &unix), false, "deny all");
    let log = srv.stop();
    assert!(
        log.lines()
            .any(|l| l.contains("refused") && l.contains("unix (pid")),
        "{log}"
    );
    // nbdkit's ip filter spells the Unix clients anyunix, and the process' user uid:N.
    let uid = rustix::process::getuid().as_raw().to_string();
    for allow in ["anyunix", &format!("uid:{uid}")] {
        let srv = Server::start(d, None, &["-U", s, "--deny", "all", "--allow", allow], 1);
        expect(nbdinfo(&peers, d, None, &unix), true, allow);
        srv.stop();
    }
}

/// A CA, the server's certificate, and two clients' (`client-a`, `client-b`, both signed by
/// the CA) under `root`.
fn pki(root: &Path) {
    certs::ca(&root.join("ca"), "vecio authz test CA");
    let ca = root.join("ca");
    certs::cert(
        &ca,
        &root.join("server"),
        Role::Server,
        "/CN=localhost",
        &[],
    );
    for who in ["a", "b"] {
        let subject = format!("/O=vecio tests/CN=client-{who}");
        certs::cert(
            &ca,
            &root.join(format!("client-{who}")),
            Role::Client,
            &subject,
            &[],
        );
    }
}

/// `qemu-img info` from `peers` over `socket` with the client certificates in `creds`.
fn qemu_img_info(peers: &Peers, share: &Path, socket: &Path, creds: &Path) -> Command {
    let mut c = peers.command("qemu-img", share);
    let object = format!(
        "tls-creds-x509,id=tls0,dir={},endpoint=client",
        creds.display()
    );
    let image = format!(
        "driver=nbd,server.type=unix,server.path={},tls-creds=tls0,tls-hostname=localhost",
        socket.display()
    );
    c.args(["info", "--object", &object, "--image-opts", &image]);
    c
}

fn tls_uri(socket: &Path, creds: &Path) -> String {
    format!(
        "nbds+unix:///?socket={}&tls-certificates={}&tls-hostname=localhost",
        socket.display(),
        creds.display()
    )
}

#[test]
fn tls_authz_lets_one_client_certificate_on_and_refuses_another() {
    if !certs::have_openssl() {
        return;
    }
    let dir = common::scratch_dir("vecio-nbd-authz-");
    let d = dir.path();
    pki(d);
    let sock = d.join("nbd.sock");
    let server = d.join("server");
    let args = [
        "-U",
        sock.to_str().unwrap(),
        "-p",
        "0",
        "--tls-certificates",
        server.to_str().unwrap(),
        "--tls-authz",
        "CN=client-a,O=vecio tests",
    ];
    let srv = Server::start(d, None, &args, 2);
    assert!(srv.uris[0].starts_with("nbds+unix://"), "{:?}", srv.uris);
    let (a, b) = (d.join("client-a"), d.join("client-b"));
    let mut qemu_refusals = 0;
    for peers in Peers::all() {
        if peers.has("nbdinfo") {
            expect(
                nbdinfo(&peers, d, None, &tls_uri(&sock, &a)),
                true,
                "client-a",
            );
            expect(
                nbdinfo(&peers, d, None, &tls_uri(&sock, &b)),
                false,
                "client-b",
            );
            let tcp = format!(
                "nbds://127.0.0.1:{}/?tls-certificates={}",
                srv.port(),
                b.display()
            );
            expect(nbdinfo(&peers, d, None, &tcp), false, "client-b over TCP");
        }
        if peers.has("qemu-img") {
            expect(
                qemu_img_info(&peers, d, &sock, &a),
                true,
                "qemu-img as client-a",
            );
            expect(
                qemu_img_info(&peers, d, &sock, &b),
                false,
                "qemu-img as client-b",
            );
            qemu_refusals += 1;
        }
    }
    let log = srv.stop();
    let refused: Vec<&str> = log
        .lines()
        .filter(|l| l.contains("refused") && l.contains("CN=client-b,O=vecio tests"))
        .collect();
    assert!(refused.iter().any(|l| l.contains("unix (pid")), "{log}");
    assert!(refused.iter().any(|l| l.contains("127.0.0.1:")), "{log}");
    assert!(refused.len() >= 2 + qemu_refusals, "{log}");
    assert!(!log.contains("CN=client-a"), "{log}");
}

#[test]
fn tls_authz_file_takes_qemu_rules_in_order() {
    if !certs::have_openssl() {
        return;
    }
    let Some(peers) = Peers::all().into_iter().find(|p| p.has("nbdinfo")) else {
        return;
    };
    let dir = common::scratch_dir("vecio-nbd-authz-");
    let d = dir.path();
    pki(d);
    // qemu's authz-listfile: client-b denied by name, then any client-* of the O allowed.
    let rules = d.join("authz.json");
    std::fs::write(
        &rules,
        r#"{"policy": "deny", "rules": [
            {"match": "CN=client-b,O=vecio tests", "policy": "deny"},
            {"match": "CN=client-*,O=vecio tests", "policy": "allow", "format": "glob"}]}"#,
    )
    .unwrap();
    let sock = d.join("nbd.sock");
    let server = d.join("server");
    let args = [
        "-U",
        sock.to_str().unwrap(),
        "--tls-certificates",
        server.to_str().unwrap(),
        "--tls-authz-file",
        rules.to_str().unwrap(),
    ];
    let srv = Server::start(d, None, &args, 1);
    let (a, b) = (d.join("client-a"), d.join("client-b"));
    expect(
        nbdinfo(&peers, d, None, &tls_uri(&sock, &a)),
        true,
        "client-a",
    );
    expect(
        nbdinfo(&peers, d, None, &tls_uri(&sock, &b)),
        false,
        "client-b",
    );
    // No certificate at all: refused by the CA check that --tls-authz implies.
    let ca_only = d.join("ca-only");
    std::fs::create_dir_all(&ca_only).unwrap();
    std::fs::copy(d.join("ca/ca-cert.pem"), ca_only.join("ca-cert.pem")).unwrap();
    expect(
        nbdinfo(&peers, d, None, &tls_uri(&sock, &ca_only)),
        false,
        "no certificate",
    );
    let log = srv.stop();
    assert!(log.contains("CN=client-b,O=vecio tests"), "{log}");
}

#[test]
fn tls_authz_names_psk_users() {
    let Some(peers) = Peers::all().into_iter().find(|p| p.has("nbdinfo")) else {
        return;
    };
    let dir = common::scratch_dir("vecio-nbd-authz-");
    let d = dir.path();
    let (ka, kb) = ("a1".repeat(32), "b2".repeat(32));
    let keys = d.join("keys.psk");
    std::fs::write(&keys, format!("alice:{ka}\nbob:{kb}\n")).unwrap();
    std::fs::set_permissions(&keys, std::os::unix::fs::PermissionsExt::from_mode(0o600)).unwrap();
    for (user, key) in [("alice", &ka), ("bob", &kb)] {
        std::fs::write(d.join(format!("{user}.psk")), format!("{user}:{key}\n")).unwrap();
    }
    let sock = d.join("nbd.sock");
    let args = [
        "-U",
        sock.to_str().unwrap(),
        "--tls-psk",
        keys.to_str().unwrap(),
        "--tls-authz",
        "alice",
    ];
    let srv = Server::start(d, None, &args, 1);
    for (user, ok) in [("alice", true), ("bob", false)] {
        let uri = format!(
            "nbds+unix:///?socket={}&tls-psk-file={}&tls-username={user}",
            sock.display(),
            d.join(format!("{user}.psk")).display()
        );
        // libnbd 1.14 takes the user name from LOGNAME, later ones from the URI too.
        let mut c = nbdinfo(&peers, d, None, &uri);
        c.env("LOGNAME", user);
        expect(c, ok, user);
    }
    let log = srv.stop();
    assert!(
        log.lines()
            .any(|l| l.contains("refused") && l.contains("\"bob\"")),
        "{log}"
    );
    assert!(!log.contains("\"alice\""), "{log}");
}

#[test]
fn authz_without_tls_or_with_tls_only_offered_is_a_usage_error() {
    let dir = common::scratch_dir("vecio-nbd-authz-");
    let d = dir.path();
    std::fs::write(d.join("disk.img"), [0u8; 4096]).unwrap();
    let out = common::vecio(d, &["nbd", "disk.img", "--tls-authz", "CN=x"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("--tls-certificates or --tls-psk"), "{err}");
    let keys = d.join("k.psk");
    std::fs::write(&keys, "alice:00ff\n").unwrap();
    let out = common::vecio(
        d,
        &[
            "nbd",
            "disk.img",
            "--tls-psk",
            "k.psk",
            "--tls=on",
            "--tls-authz",
            "alice",
        ],
    );
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let out = common::vecio(d, &["nbd", "disk.img", "--allow", "10.0.0.300"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("10.0.0.300"), "{err}");
}
