//! TLS with real clients: nbdinfo, nbdcopy and qemu-img over `nbds+unix://` and `nbds://`
//! with X.509 certificates made by the openssl command for each test; a plain client refused
//! under `--tls=require`; a client trusting another CA refused; client certificates checked
//! under verify-peer; 4 connections over TLS with every engine. Each test skips, saying why,
//! when a tool is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{have, random_bytes, run, scratch, start, Opts, Running};
use vecio_nbd::{Tls, TlsMode};

/// Runs openssl with `args`; panics with its output on failure.
fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("run openssl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openssl {args:?}: {err}");
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// A CA in `dir`: ca-cert.pem, ca-key.pem.
fn make_ca(dir: &Path, cn: &str) {
    std::fs::create_dir_all(dir).unwrap();
    let (cert, key) = (s(&dir.join("ca-cert.pem")), s(&dir.join("ca-key.pem")));
    let subj = format!("/CN={cn}");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-keyout",
        &key,
        "-out",
        &cert,
        "-subj",
        &subj,
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
}

/// `dir/NAME-key.pem` and `dir/NAME-cert.pem`, signed by the CA in `ca`, valid for
/// localhost and the test addresses; `dir/ca-cert.pem` is the CA's certificate.
fn make_cert(ca: &Path, dir: &Path, name: &str) {
    std::fs::create_dir_all(dir).unwrap();
    std::fs::copy(ca.join("ca-cert.pem"), dir.join("ca-cert.pem")).unwrap();
    let key = s(&dir.join(format!("{name}-key.pem")));
    let csr = s(&dir.join(format!("{name}.csr")));
    let cert = s(&dir.join(format!("{name}-cert.pem")));
    let ext = dir.join(format!("{name}.ext"));
    let usage = if name == "client" {
        "clientAuth"
    } else {
        "serverAuth"
    };
    let text = format!(
        "subjectAltName=DNS:localhost,IP:127.0.0.1,IP:10.231.0.1,IP:10.231.0.2\n\
         extendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\n"
    );
    std::fs::write(&ext, text).unwrap();
    let subj = format!("/CN={name}");
    openssl(&[
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", &subj,
    ]);
    let (ca_cert, ca_key) = (s(&ca.join("ca-cert.pem")), s(&ca.join("ca-key.pem")));
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_cert,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &cert,
        "-days",
        "2",
        "-extfile",
        &s(&ext),
    ]);
}

/// Certificates for one test: the server's directory, a client's (CA plus a client
/// certificate), a client that trusts only the CA, and a client that trusts another CA.
struct Certs {
    _root: tempfile::TempDir,
    server: PathBuf,
    client: PathBuf,
    ca_only: PathBuf,
    wrong_ca: PathBuf,
}

fn certs() -> Option<Certs> {
    let openssl = Command::new("openssl").arg("version").output();
    if !openssl.is_ok_and(|o| o.status.success()) || !have("nbdinfo") {
        return None;
    }
    let root = tempfile::tempdir().unwrap();
    let r = root.path();
    make_ca(&r.join("ca"), "vecio test CA");
    make_ca(&r.join("other-ca"), "another CA");
    make_cert(&r.join("ca"), &r.join("server"), "server");
    make_cert(&r.join("ca"), &r.join("client"), "client");
    std::fs::create_dir_all(r.join("ca-only")).unwrap();
    std::fs::copy(r.join("ca/ca-cert.pem"), r.join("ca-only/ca-cert.pem")).unwrap();
    std::fs::create_dir_all(r.join("wrong-ca")).unwrap();
    std::fs::copy(
        r.join("other-ca/ca-cert.pem"),
        r.join("wrong-ca/ca-cert.pem"),
    )
    .unwrap();
    Some(Certs {
        server: r.join("server"),
        client: r.join("client"),
        ca_only: r.join("ca-only"),
        wrong_ca: r.join("wrong-ca"),
        _root: root,
    })
}

fn tls_unix(srv: &Running, dir: &Path) -> String {
    format!(
        "nbds+unix:///?socket={}&tls-certificates={}",
        srv.socket.display(),
        dir.display()
    )
}

fn tls_tcp(srv: &Running, dir: &Path) -> String {
    let at = srv.tcp.expect("tcp listener");
    format!("nbds://{at}/?tls-certificates={}", dir.display())
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run client")
}

fn serve(c: &Certs, mode: TlsMode, verify: bool, aio: vecio::EngineKind) -> Running {
    start(Opts {
        size: 8 << 20,
        random: Some(12),
        tcp: true,
        aio,
        tls: Some(Tls::from_dir(mode, &c.server, verify).unwrap()),
        ..Default::default()
    })
}

#[test]
fn x509_with_nbdinfo_nbdcopy_and_four_connections_on_every_engine() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let engines = [
        vecio::EngineKind::Uring,
        vecio::EngineKind::Sync,
        vecio::EngineKind::Pool,
        vecio::EngineKind::Serial,
    ];
    for aio in engines {
        let srv = serve(&c, TlsMode::Require, false, aio);
        let info = run(Command::new("nbdinfo")
            .arg("--json")
            .arg(tls_unix(&srv, &c.ca_only)));
        assert!(info.contains("\"export-size\": 8388608"), "{aio:?}: {info}");
        if !have("nbdcopy") {
            continue;
        }
        // Read over a Unix socket, then write a new image back over TCP with 4 connections.
        let out = srv.dir.path().join("copy.img");
        run(Command::new("nbdcopy")
            .arg(tls_unix(&srv, &c.ca_only))
            .arg(&out));
        let want = std::fs::read(&srv.image).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{aio:?}: copy differs"
        );
        let new = random_bytes(8 << 20, 99);
        std::fs::write(&out, &new).unwrap();
        run(Command::new("nbdcopy")
            .args(["--connections=4", "--requests=16", "--flush"])
            .arg(&out)
            .arg(tls_tcp(&srv, &c.ca_only)));
        assert!(
            std::fs::read(&srv.image).unwrap() == new,
            "{aio:?}: write differs"
        );
    }
}

#[test]
fn plain_clients_are_refused_under_require_and_served_under_on() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
    let plain = output(Command::new("nbdinfo").arg(srv.unix_uri()));
    assert!(
        !plain.status.success(),
        "a plain client was served under require"
    );
    // libnbd reports NBD_REP_ERR_TLS_REQD as "not supported".
    let err = String::from_utf8_lossy(&plain.stderr);
    assert!(err.contains("opt_go"), "{err}");
    // The server goes on serving TLS clients.
    run(Command::new("nbdinfo").arg(tls_unix(&srv, &c.ca_only)));

    let srv = serve(&c, TlsMode::On, false, vecio::EngineKind::Uring);
    run(Command::new("nbdinfo").arg(srv.unix_uri()));
    run(Command::new("nbdinfo").arg(tls_unix(&srv, &c.ca_only)));
}

#[test]
fn a_client_trusting_another_ca_is_refused() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
    // Over TCP: libnbd (1.14) checks the server's certificate only when it has a host name.
    let bad = output(Command::new("nbdinfo").arg(tls_tcp(&srv, &c.wrong_ca)));
    assert!(
        !bad.status.success(),
        "a client trusting another CA connected"
    );
    let err = String::from_utf8_lossy(&bad.stderr);
    assert!(err.contains("certificate"), "{err}");
    run(Command::new("nbdinfo").arg(tls_tcp(&srv, &c.ca_only)));
}

#[test]
fn verify_peer_wants_a_client_certificate_from_the_ca() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let srv = serve(&c, TlsMode::Require, true, vecio::EngineKind::Uring);
    run(Command::new("nbdinfo").arg(tls_unix(&srv, &c.client)));
    let anon = output(Command::new("nbdinfo").arg(tls_unix(&srv, &c.ca_only)));
    assert!(
        !anon.status.success(),
        "a client without a certificate was served"
    );
}

#[test]
fn qemu_img_converts_over_tls() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    if !have("qemu-img") {
        eprintln!("skipped: qemu-img missing");
        return;
    }
    let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
    let out = scratch();
    let copy = out.path().join("q.img");
    let creds = format!(
        "tls-creds-x509,id=tls0,dir={},endpoint=client",
        c.ca_only.display()
    );
    let src = format!(
        "driver=nbd,server.type=unix,server.path={},tls-creds=tls0,tls-hostname=localhost",
        srv.socket.display()
    );
    run(Command::new("qemu-img")
        .args([
            "convert",
            "-O",
            "raw",
            "--object",
            &creds,
            "--image-opts",
            &src,
        ])
        .arg(&copy));
    assert!(std::fs::read(&copy).unwrap() == std::fs::read(&srv.image).unwrap());
}

/// Two network namespaces joined by a veth pair (10.231.0.1 and 10.231.0.2), removed on drop.
struct Netns {
    a: String,
    b: String,
}

impl Netns {
    fn new() -> Option<Netns> {
        if !rustix::process::geteuid().is_root() {
            eprintln!("skipped: network namespaces need root");
            return None;
        }
        let id = std::process::id();
        let n = Netns {
            a: format!("vecio-tls-a-{id}"),
            b: format!("vecio-tls-b-{id}"),
        };
        let (va, vb) = (format!("vta{id}"), format!("vtb{id}"));
        let ip = |args: &[&str]| {
            let out = Command::new("ip").args(args).output();
            out.is_ok_and(|o| o.status.success())
        };
        if !ip(&["netns", "add", &n.a]) {
            eprintln!("skipped: `ip netns add` failed (no iproute2, or no namespaces here)");
            return None;
        }
        let steps: [&[&str]; 9] = [
            &["netns", "add", &n.b],
            &["link", "add", &va, "type", "veth", "peer", "name", &vb],
            &["link", "set", &va, "netns", &n.a],
            &["link", "set", &vb, "netns", &n.b],
            &["-n", &n.a, "addr", "add", "10.231.0.1/24", "dev", &va],
            &["-n", &n.b, "addr", "add", "10.231.0.2/24", "dev", &vb],
            &["-n", &n.a, "link", "set", &va, "up"],
            &["-n", &n.b, "link", "set", &vb, "up"],
            &["-n", &n.a, "link", "set", "lo", "up"],
        ];
        for step in steps {
            assert!(ip(step), "ip {step:?} failed");
        }
        Some(n)
    }
}

impl Drop for Netns {
    fn drop(&mut self) {
        for ns in [&self.a, &self.b] {
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
    }
}

#[test]
fn tls_across_a_veth_pair_between_two_namespaces() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    if !have("nbdcopy") {
        return;
    }
    let Some(ns) = Netns::new() else { return };
    let dir = scratch();
    let image = dir.path().join("disk.img");
    std::fs::write(&image, random_bytes(4 << 20, 5)).unwrap();
    let export = vecio_nbd::Export::open(&image, Default::default()).unwrap();
    let opts = vecio_nbd::ServerOptions {
        tls: Some(Tls::from_dir(TlsMode::Require, &c.server, false).unwrap()),
        ..Default::default()
    };
    let mut server = vecio_nbd::Server::new(export, opts).unwrap();
    let stop = server.shutdown_handle();
    let (tx, rx) = std::sync::mpsc::channel();
    let netns = std::fs::File::open(format!("/var/run/netns/{}", ns.a)).unwrap();
    // The listening socket is made in namespace A, by a thread that moved there.
    let t = std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on a namespace file this thread holds open; it moves this thread only.
        let r = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
        let at = server.listen_tcp("10.231.0.1:0".parse().unwrap()).unwrap();
        tx.send(at).unwrap();
        server.run()
    });
    let at = rx.recv().unwrap();
    let out = dir.path().join("copy.img");
    let uri = format!("nbds://{at}/?tls-certificates={}", c.ca_only.display());
    run(Command::new("ip")
        .args(["netns", "exec", &ns.b, "nbdcopy", "--connections=4", &uri])
        .arg(&out));
    assert!(std::fs::read(&out).unwrap() == std::fs::read(&image).unwrap());
    stop.trigger();
    t.join().unwrap().unwrap();
}
