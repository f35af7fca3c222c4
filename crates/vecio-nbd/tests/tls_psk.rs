//! TLS with pre-shared keys (nbdkit's `--tls-psk` file) against real clients: nbdinfo and
//! nbdcopy (libnbd's `tls-psk-file`, GnuTLS) over Unix sockets and TCP with every engine and
//! 4 connections, qemu-img with `tls-creds-psk` reading and writing, and the refusals: an
//! unknown user, a wrong key, a plain client under `--tls=require`. Each test skips, saying
//! why, when a tool is missing.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use common::{have, random_bytes, run, scratch, start, Opts, Running};
use vecio_nbd::{Tls, TlsMode};

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
    let root = tempfile::tempdir().unwrap();
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

/// A libnbd command as user `user`: libnbd 1.14 takes the TLS user name from the login name
/// (`LOGNAME`), later versions from the URI's `tls-username` too; both are set.
fn libnbd(prog: &str, user: &str) -> Command {
    let mut c = Command::new(prog);
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

fn skip() -> bool {
    if !have("nbdinfo") || !have("nbdcopy") {
        eprintln!("skipped: nbdinfo or nbdcopy missing");
        return true;
    }
    false
}

#[test]
fn psk_with_nbdinfo_and_nbdcopy_over_unix_and_tcp_on_every_engine() {
    if skip() {
        return;
    }
    let k = keys();
    let engines = [
        vecio::EngineKind::Uring,
        vecio::EngineKind::Sync,
        vecio::EngineKind::Pool,
        vecio::EngineKind::Serial,
    ];
    for aio in engines {
        let srv = serve(&k, TlsMode::Require, aio);
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
            "{aio:?}: copy differs"
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
            "{aio:?}: write differs"
        );
    }
}

#[test]
fn unknown_users_wrong_keys_and_plain_clients_are_refused() {
    if skip() {
        return;
    }
    let k = keys();
    let srv = serve(&k, TlsMode::Require, vecio::EngineKind::Uring);
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
        assert!(!out.status.success(), "{what} was served");
    }
    // The server goes on serving the right key.
    run(libnbd("nbdinfo", "alice").arg(psk_unix(&srv, &k.alice, "alice")));
}

#[test]
fn qemu_img_reads_and_writes_with_tls_creds_psk() {
    if !have("qemu-img") {
        eprintln!("skipped: qemu-img missing");
        return;
    }
    let k = keys();
    let srv = serve(&k, TlsMode::Require, vecio::EngineKind::Uring);
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
    run(Command::new("qemu-img")
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
    assert!(std::fs::read(&copy).unwrap() == std::fs::read(&srv.image).unwrap());
    let new = random_bytes(8 << 20, 31);
    std::fs::write(&copy, &new).unwrap();
    run(Command::new("qemu-img")
        .args(["convert", "-n", "-f", "raw", "--object", &creds])
        .arg(&copy)
        .args(["--target-image-opts", &target]));
    assert!(
        std::fs::read(&srv.image).unwrap() == new,
        "qemu-img's write differs"
    );
}
