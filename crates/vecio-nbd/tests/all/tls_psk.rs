//! TLS with pre-shared keys (nbdkit's `--tls-psk` file) against real clients: nbdinfo and
//! nbdcopy (libnbd's `tls-psk-file`, GnuTLS) over Unix sockets and TCP with every engine and
//! 4 connections, qemu-img with `tls-creds-psk` reading and writing, and the refusals: an
//! unknown user, a wrong key, a plain client under `--tls=require`. Every client runs from the
//! host (libnbd 1.14, qemu 7.2) and from the trixie chroot (libnbd 1.22, qemu 10) where it
//! exists. Each test skips, saying why, when a tool is missing.

use crate::common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{random_bytes, run, scratch, share, start, Opts, Running};
use vecio_nbd::{Tls, TlsMode};
use vecio_testkit::Peers;

/// A key file with `alice` and `bob` (random keys), and for the clients: alice's own file, a
/// file where alice has another key, and qemu's layout (`DIR/keys.psk`).
struct Keys {
    _root: tempfile::TempDir,
    server: PathBuf,
    alice: PathBuf,
    wrong: PathBuf,
    qemu_dir: PathBuf,
}

fn hex(seed: u64) -> String {
    random_bytes(32, seed)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect()
}

fn keys() -> Keys {
    // Under the target directory, which chroot peers see at the same path (`share`).
    let root = scratch();
    let r = root.path();
    let (alice, bob) = (hex(1), hex(2));
    let server = r.join("server.psk");
    std::fs::write(
        &server,
        format!("# vecio test keys\nalice:{alice}\nbob:{bob}\n"),
    )
    .unwrap();
    std::fs::write(r.join("alice.psk"), format!("alice:{alice}\n")).unwrap();
    std::fs::write(r.join("wrong.psk"), format!("alice:{}\n", hex(3))).unwrap();
    std::fs::create_dir_all(r.join("qemu")).unwrap();
    std::fs::write(r.join("qemu/keys.psk"), format!("alice:{alice}\n")).unwrap();
    Keys {
        server,
        alice: r.join("alice.psk"),
        wrong: r.join("wrong.psk"),
        qemu_dir: r.join("qemu"),
        _root: root,
    }
}

fn serve(k: &Keys, mode: TlsMode, aio: vecio::EngineKind) -> Running {
    start(Opts {
        size: 8 << 20,
        random: Some(21),
        tcp: true,
        aio,
        tls: Some(Tls::from_psk_file(mode, &k.server).unwrap()),
        ..Default::default()
    })
}

/// `prog` of `peers` as user `user`: libnbd 1.14 takes the TLS user name from the login name
/// (`LOGNAME`), later versions from the URI's `tls-username` too; both are set.
fn libnbd(peers: &Peers, prog: &str, user: &str) -> Command {
    let mut c = peers.command(prog, share());
    c.env("LOGNAME", user);
    c
}

fn psk_unix(srv: &Running, file: &Path, user: &str) -> String {
    format!(
        "nbds+unix:///?socket={}&tls-psk-file={}&tls-username={user}",
        srv.socket.display(),
        file.display()
    )
}

fn psk_tcp(srv: &Running, file: &Path, user: &str) -> String {
    let at = srv.tcp.expect("tcp listener");
    format!(
        "nbds://{at}/?tls-psk-file={}&tls-username={user}",
        file.display()
    )
}

fn output(cmd: &mut Command) -> Output {
    cmd.output().expect("run client")
}

/// The peer sets that have nbdinfo and nbdcopy.
fn libnbd_peers() -> Vec<Peers> {
    Peers::all()
        .into_iter()
        .filter(|p| p.has("nbdinfo") && p.has("nbdcopy"))
        .collect()
}

#[test]
fn psk_with_nbdinfo_and_nbdcopy_over_unix_and_tcp_on_every_engine() {
    let k = keys();
    for peers in libnbd_peers() {
        psk_on_every_engine(&k, &peers);
    }
}

fn psk_on_every_engine(k: &Keys, peers: &Peers) {
    let libnbd = |prog, user| libnbd(peers, prog, user);
    for aio in vecio::EngineKind::ALL {
        let srv = serve(k, TlsMode::Require, aio);
        let info = run(libnbd("nbdinfo", "alice")
            .arg("--json")
            .arg(psk_unix(&srv, &k.alice, "alice")));
        assert!(info.contains("\"export-size\": 8388608"), "{aio:?}: {info}");
        let out = srv.dir.path().join("copy.img");
        run(libnbd("nbdcopy", "alice")
            .arg(psk_tcp(&srv, &k.alice, "alice"))
            .arg(&out));
        let want = std::fs::read(&srv.image).unwrap();
        assert!(
            std::fs::read(&out).unwrap() == want,
            "{} {aio:?}: copy differs",
            peers.name()
        );
        // A new image back over a Unix socket with 4 connections.
        let new = random_bytes(8 << 20, 77);
        std::fs::write(&out, &new).unwrap();
        run(libnbd("nbdcopy", "alice")
            .args(["--connections=4", "--requests=16", "--flush"])
            .arg(&out)
            .arg(psk_unix(&srv, &k.alice, "alice")));
        assert!(
            std::fs::read(&srv.image).unwrap() == new,
            "{} {aio:?}: write differs",
            peers.name()
        );
    }
}

#[test]
fn unknown_users_wrong_keys_and_plain_clients_are_refused() {
    let k = keys();
    for peers in libnbd_peers() {
        refusals(&k, &peers);
    }
}

fn refusals(k: &Keys, peers: &Peers) {
    let libnbd = |prog, user| libnbd(peers, prog, user);
    let srv = serve(k, TlsMode::Require, vecio::EngineKind::Uring);
    // carol is in the client's file but not the server's.
    let carol = k.alice.with_file_name("carol.psk");
    std::fs::write(&carol, format!("carol:{}\n", hex(1))).unwrap();
    let refusals = [
        ("an unknown user", psk_unix(&srv, &carol, "carol"), "carol"),
        ("a wrong key", psk_unix(&srv, &k.wrong, "alice"), "alice"),
        (
            "a wrong key over TCP",
            psk_tcp(&srv, &k.wrong, "alice"),
            "alice",
        ),
        ("a plain client", srv.unix_uri(), "alice"),
    ];
    for (what, uri, user) in refusals {
        let out = output(libnbd("nbdinfo", user).arg(&uri));
        assert!(!out.status.success(), "{}: {what} was served", peers.name());
    }
    // The server goes on serving the right key.
    run(libnbd("nbdinfo", "alice").arg(psk_unix(&srv, &k.alice, "alice")));
}

#[test]
fn qemu_img_reads_and_writes_with_tls_creds_psk() {
    let k = keys();
    for peers in Peers::all().iter().filter(|p| p.has("qemu-img")) {
        qemu_img_psk(&k, peers);
    }
}

fn qemu_img_psk(k: &Keys, peers: &Peers) {
    let qemu_img = || peers.command("qemu-img", share());
    let srv = serve(k, TlsMode::Require, vecio::EngineKind::Uring);
    let creds = format!(
        "tls-creds-psk,id=tls0,dir={},username=alice,endpoint=client",
        k.qemu_dir.display()
    );
    let target = format!(
        "driver=nbd,server.type=unix,server.path={},tls-creds=tls0",
        srv.socket.display()
    );
    let out = scratch();
    let copy = out.path().join("q.img");
    run(qemu_img()
        .args([
            "convert",
            "-O",
            "raw",
            "--object",
            &creds,
            "--image-opts",
            &target,
        ])
        .arg(&copy));
    let same = std::fs::read(&copy).unwrap() == std::fs::read(&srv.image).unwrap();
    assert!(same, "{}: qemu-img's read differs", peers.name());
    let new = random_bytes(8 << 20, 31);
    std::fs::write(&copy, &new).unwrap();
    run(qemu_img()
        .args(["convert", "-n", "-f", "raw", "--object", &creds])
        .arg(&copy)
        .args(["--target-image-opts", &target]));
    assert!(
        std::fs::read(&srv.image).unwrap() == new,
        "{}: qemu-img's write differs",
        peers.name()
    );
}
