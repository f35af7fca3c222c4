//! TLS with real clients: nbdinfo, nbdcopy and qemu-img over `nbds+unix://` and `nbds://`
//! with X.509 certificates made by the openssl command for each test; a plain client refused
//! under `--tls=require`; a client trusting another CA refused; client certificates checked
//! under verify-peer; 4 connections over TLS with every engine; nbdcopy across a veth pair
//! between two network namespaces. Every client runs from the host (libnbd 1.14, qemu 7.2)
//! and from the trixie chroot (libnbd 1.22, qemu 10) where it exists. Each test skips, saying
//! why, when a tool is missing.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{have, random_bytes, run, scratch, share, start, Opts, Running};
use vecio_nbd::{Tls, TlsMode};
use vecio_testkit::certs::{self, Role};
use vecio_testkit::{Netns, Peers};

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
    if !certs::have_openssl() || !have("nbdinfo") {
        return None;
    }
    // Under the target directory, which chroot peers see at the same path (`share`).
    let root = scratch();
    let r = root.path();
    certs::ca(&r.join("ca"), "vecio test CA");
    certs::ca(&r.join("other-ca"), "another CA");
    let ips = ["10.231.1.1", "10.231.1.2"];
    certs::cert(
        &r.join("ca"),
        &r.join("server"),
        Role::Server,
        "/CN=server",
        &ips,
    );
    certs::cert(
        &r.join("ca"),
        &r.join("client"),
        Role::Client,
        "/CN=client",
        &ips,
    );
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

/// `prog` of `peers`, seeing the test directories at their own paths.
fn client(peers: &Peers, prog: &str) -> Command {
    peers.command(prog, share())
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
    for peers in Peers::all() {
        if peers.has("nbdinfo") && peers.has("nbdcopy") {
            x509_on_every_engine(&c, &peers);
        }
    }
}

fn x509_on_every_engine(c: &Certs, peers: &Peers) {
    let who = peers.name();
    for aio in vecio::EngineKind::ALL {
        let srv = serve(c, TlsMode::Require, false, aio);
        let info = run(client(peers, "nbdinfo")
            .arg("--json")
            .arg(tls_unix(&srv, &c.ca_only)));
        assert!(
            info.contains("\"export-size\": 8388608"),
            "{who} {aio:?}: {info}"
        );
        // Read over a Unix socket, then write a new image back over TCP with 4 connections.
        let out = srv.dir.path().join("copy.img");
        run(client(peers, "nbdcopy")
            .arg(tls_unix(&srv, &c.ca_only))
            .arg(&out));
        let want = std::fs::read(&srv.image).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{who} {aio:?}: copy differs"
        );
        let new = random_bytes(8 << 20, 99);
        std::fs::write(&out, &new).unwrap();
        run(client(peers, "nbdcopy")
            .args(["--connections=4", "--requests=16", "--flush"])
            .arg(&out)
            .arg(tls_tcp(&srv, &c.ca_only)));
        let got = std::fs::read(&srv.image).unwrap();
        assert!(got == new, "{who} {aio:?}: write differs");
    }
}

#[test]
fn plain_clients_are_refused_under_require_and_served_under_on() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    for peers in Peers::all().iter().filter(|p| p.has("nbdinfo")) {
        let nbdinfo = || client(peers, "nbdinfo");
        let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
        let plain = output(nbdinfo().arg(srv.unix_uri()));
        assert!(
            !plain.status.success(),
            "{}: a plain client was served under require",
            peers.name()
        );
        // libnbd reports NBD_REP_ERR_TLS_REQD as "not supported".
        let err = String::from_utf8_lossy(&plain.stderr);
        assert!(err.contains("opt_go") || err.contains("TLS"), "{err}");
        // The server goes on serving TLS clients.
        run(nbdinfo().arg(tls_unix(&srv, &c.ca_only)));

        let srv = serve(&c, TlsMode::On, false, vecio::EngineKind::Uring);
        run(nbdinfo().arg(srv.unix_uri()));
        run(nbdinfo().arg(tls_unix(&srv, &c.ca_only)));
    }
}

#[test]
fn a_client_trusting_another_ca_is_refused() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
    for peers in Peers::all().iter().filter(|p| p.has("nbdinfo")) {
        // Over TCP: libnbd 1.14 checks the server's certificate only when it has a host name.
        let bad = output(client(peers, "nbdinfo").arg(tls_tcp(&srv, &c.wrong_ca)));
        assert!(
            !bad.status.success(),
            "{}: a client trusting another CA connected",
            peers.name()
        );
        let err = String::from_utf8_lossy(&bad.stderr);
        assert!(err.contains("certificate"), "{err}");
        run(client(peers, "nbdinfo").arg(tls_tcp(&srv, &c.ca_only)));
    }
}

#[test]
fn verify_peer_wants_a_client_certificate_from_the_ca() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let srv = serve(&c, TlsMode::Require, true, vecio::EngineKind::Uring);
    for peers in Peers::all().iter().filter(|p| p.has("nbdinfo")) {
        run(client(peers, "nbdinfo").arg(tls_unix(&srv, &c.client)));
        let anon = output(client(peers, "nbdinfo").arg(tls_unix(&srv, &c.ca_only)));
        let who = peers.name();
        assert!(
            !anon.status.success(),
            "{who}: a client without a certificate was served"
        );
    }
}

#[test]
fn qemu_img_converts_over_tls() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    for peers in Peers::all().iter().filter(|p| p.has("qemu-img")) {
        let srv = serve(&c, TlsMode::Require, false, vecio::EngineKind::Uring);
        let copy = srv.dir.path().join("q.img");
        let creds = format!(
            "tls-creds-x509,id=tls0,dir={},endpoint=client",
            c.ca_only.display()
        );
        let src = format!(
            "driver=nbd,server.type=unix,server.path={},tls-creds=tls0,tls-hostname=localhost",
            srv.socket.display()
        );
        run(client(peers, "qemu-img")
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
        let same = std::fs::read(&copy).unwrap() == std::fs::read(&srv.image).unwrap();
        assert!(same, "{}: the copy differs", peers.name());
    }
}

#[test]
fn tls_across_a_veth_pair_between_two_namespaces() {
    let Some(c) = certs() else {
        eprintln!("skipped: openssl or nbdinfo missing");
        return;
    };
    let Some(net) = Netns::star(1) else { return };
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
    let netns = std::fs::File::open(Netns::path(net.server())).unwrap();
    // The listening socket is made in the server's namespace, by a thread that moved there.
    let t = std::thread::spawn(move || {
        use std::os::fd::AsRawFd;
        // SAFETY: setns on a namespace file this thread holds open; it moves this thread only.
        let r = unsafe { libc::setns(netns.as_raw_fd(), libc::CLONE_NEWNET) };
        assert_eq!(r, 0, "setns: {}", std::io::Error::last_os_error());
        let at = server.listen_tcp("10.231.1.1:0".parse().unwrap()).unwrap();
        tx.send(at).unwrap();
        server.run()
    });
    let at = rx.recv().unwrap();
    let uri = format!("nbds://{at}/?tls-certificates={}", c.ca_only.display());
    for peers in Peers::all().iter().filter(|p| p.has("nbdcopy")) {
        let out = dir.path().join("copy.img");
        let _ = std::fs::remove_file(&out);
        let mut copy = client(peers, "nbdcopy");
        copy.args(["--connections=4", &uri]).arg(&out);
        run(&mut Netns::exec(net.client(1), &copy));
        let same = std::fs::read(&out).unwrap() == std::fs::read(&image).unwrap();
        assert!(same, "{}: the copy differs", peers.name());
    }
    stop.trigger();
    t.join().unwrap().unwrap();
}
