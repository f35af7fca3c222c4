//! Real NBD clients against an in-process server: nbdinfo, nbdcopy (Unix socket and TCP,
//! 4 connections), qemu-img convert and compare, qemu-io with unaligned requests, and fio's
//! nbd engine with crc32c verification. Every client runs twice where the trixie chroot of
//! `scripts/peers` exists: the host's (compact headers) and the chroot's (extended headers).
//! Each test skips, saying why, when its client is missing.

use crate::common;

use common::{random_bytes, run, share, start, Opts};
use vecio_nbd::Cache;
use vecio_testkit::Peers;

#[test]
fn nbdinfo_reports_size_block_sizes_and_capabilities() {
    for peers in Peers::all() {
        nbdinfo_reports(&peers);
    }
}

fn nbdinfo_reports(peers: &Peers) {
    if !peers.has("nbdinfo") {
        return;
    }
    let mut srv = start(Opts {
        size: 5 << 20,
        name: "disk",
        description: "a test disk",
        ..Default::default()
    });
    let nbdinfo = || peers.command("nbdinfo", srv.dir.path());
    let out = run(nbdinfo()
        .arg("--json")
        .arg("--no-content")
        .arg(format!("nbd+unix:///disk?socket={}", srv.socket.display())));
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    assert_eq!(v["protocol"], "newstyle-fixed");
    assert_eq!(v["structured"], true);
    // libnbd 1.18 and later ask for extended headers, and get them.
    let extended = v.get("extended").is_some_and(|x| x == true);
    assert_eq!(extended, peers.is_chroot(), "{}: {out}", peers.name());
    let e = &v["exports"][0];
    assert_eq!(e["export-name"], "disk");
    assert_eq!(e["description"], "a test disk");
    assert_eq!(e["export-size"], 5 << 20);
    assert_eq!(e["block_size_minimum"], 1);
    assert_eq!(e["block_size_preferred"], 4096);
    assert_eq!(e["block_size_maximum"], 32 << 20);
    for cap in [
        "can_flush",
        "can_fua",
        "can_trim",
        "can_zero",
        "can_fast_zero",
        "can_df",
        "can_cache",
        "can_multi_conn",
    ] {
        assert_eq!(e[cap], true, "{cap} in {out}");
    }
    assert_eq!(e["is_read_only"], false);
    assert_eq!(e["contexts"][0], "base:allocation");

    // --list goes through NBD_OPT_LIST; an unknown export name is refused.
    let list = run(nbdinfo().arg("--list").arg("--json").arg(srv.unix_uri()));
    assert!(list.contains("\"disk\""), "{list}");
    let bad = nbdinfo()
        .arg(format!("nbd+unix:///nope?socket={}", srv.socket.display()))
        .output()
        .unwrap();
    assert!(!bad.status.success());
    srv.stop().unwrap();
}

#[test]
fn nbdinfo_sees_a_read_only_export() {
    let mut srv = start(Opts {
        read_only: true,
        ..Default::default()
    });
    for peers in Peers::all().iter().filter(|p| p.has("nbdinfo")) {
        let mut nbdinfo = peers.command("nbdinfo", share());
        let out = run(nbdinfo.arg("--json").arg(srv.unix_uri()));
        let v: serde_json::Value = serde_json::from_str(&out).unwrap();
        let e = &v["exports"][0];
        assert_eq!(e["is_read_only"], true, "{}", peers.name());
        assert_eq!(e["can_trim"], false);
        assert_eq!(e["can_zero"], false);
    }
    srv.stop().unwrap();
}

/// Copies a random image into the export and back with 4 connections, with each peer set's
/// nbdcopy; both copies must be byte-identical to the source.
fn nbdcopy_round_trip(tcp: bool, cache: Cache) {
    for peers in Peers::all() {
        nbdcopy_round_trip_with(&peers, tcp, cache);
    }
}

fn nbdcopy_round_trip_with(peers: &Peers, tcp: bool, cache: Cache) {
    if !peers.has("nbdcopy") {
        return;
    }
    let size = 256usize << 20; // the size the issue names
    let mut srv = start(Opts {
        size: size as u64,
        tcp,
        cache,
        ..Default::default()
    });
    let src = srv.dir.path().join("src.bin");
    let back = srv.dir.path().join("back.bin");
    let data = random_bytes(size, 42 + tcp as u64 + 2 * peers.is_chroot() as u64);
    std::fs::write(&src, &data).unwrap();
    let uri = if tcp { srv.tcp_uri() } else { srv.unix_uri() };
    let nbdcopy = || peers.command("nbdcopy", srv.dir.path());
    run(nbdcopy()
        .arg("--connections=4")
        .arg("--flush")
        .arg(&src)
        .arg(&uri));
    run(nbdcopy().arg("--connections=4").arg(&uri).arg(&back));
    let who = peers.name();
    assert!(
        std::fs::read(&back).unwrap() == data,
        "{who}: read back differs"
    );
    srv.stop().unwrap();
    assert!(
        std::fs::read(&srv.image).unwrap() == data,
        "{who}: image differs"
    );
}

#[test]
fn nbdcopy_round_trip_over_unix_socket() {
    nbdcopy_round_trip(false, Cache::None);
}

#[test]
fn nbdcopy_round_trip_over_tcp() {
    nbdcopy_round_trip(true, Cache::None);
}

#[test]
fn nbdcopy_round_trip_buffered() {
    nbdcopy_round_trip(false, Cache::Writeback);
}

#[test]
fn qemu_img_convert_and_compare() {
    for peers in Peers::all() {
        qemu_img_convert_and_compare_with(&peers);
    }
}

fn qemu_img_convert_and_compare_with(peers: &Peers) {
    if !peers.has("qemu-img") {
        return;
    }
    let size = 32usize << 20;
    let mut srv = start(Opts {
        size: size as u64,
        ..Default::default()
    });
    let src = srv.dir.path().join("src.raw");
    // Data with holes between, so qemu-img zeroes and skips as well as writes.
    let mut data = random_bytes(size, 7);
    for chunk in data.chunks_mut(1 << 20).step_by(3) {
        chunk.fill(0);
    }
    std::fs::write(&src, &data).unwrap();
    let qemu_img = || peers.command("qemu-img", srv.dir.path());
    run(qemu_img()
        .args(["convert", "-n", "-f", "raw", "-O", "raw"])
        .arg(&src)
        .arg(srv.unix_uri()));
    run(qemu_img()
        .args(["compare", "-f", "raw", "-F", "raw"])
        .arg(&src)
        .arg(srv.unix_uri()));
    srv.stop().unwrap();
    assert!(std::fs::read(&srv.image).unwrap() == data);
}

#[test]
fn qemu_io_unaligned_requests_land_exactly() {
    for peers in Peers::all() {
        qemu_io_unaligned_with(&peers);
    }
}

fn qemu_io_unaligned_with(peers: &Peers) {
    if !peers.has("qemu-io") {
        return;
    }
    let size = 4usize << 20;
    let mut srv = start(Opts {
        size: size as u64,
        random: Some(3),
        ..Default::default()
    });
    let mut expect = std::fs::read(&srv.image).unwrap();
    let ops: &[(&str, usize, usize, u8)] = &[
        ("write -P 0xab 1 1000", 1, 1000, 0xab),
        ("write -z 5000 3", 5000, 3, 0),
        ("write -z -u 8192 8192", 8192, 8192, 0),
        ("write -P 0xcd 12345 77777", 12345, 77777, 0xcd),
        ("write -P 0xef 4194303 1", 4194303, 1, 0xef),
    ];
    let mut cmd = peers.command("qemu-io", srv.dir.path());
    cmd.args(["-f", "raw"]).arg(srv.unix_uri());
    for (c, off, len, val) in ops {
        cmd.arg("-c").arg(c);
        expect[*off..*off + *len].fill(*val);
    }
    cmd.args([
        "-c",
        "read -P 0xab 1 1000",
        "-c",
        "read -P 0xcd 12345 77777",
        "-c",
        "flush",
    ]);
    let out = run(&mut cmd);
    assert!(!out.contains("Pattern verification failed"), "{out}");
    srv.stop().unwrap();
    assert!(std::fs::read(&srv.image).unwrap() == expect);
}

#[test]
fn fio_nbd_engine_verifies_crc32c() {
    for peers in Peers::all().iter().filter(|p| p.has("fio")) {
        fio_verifies(peers);
    }
}

fn fio_verifies(peers: &Peers) {
    let has_nbd = peers
        .command("fio", share())
        .arg("--enghelp=nbd")
        .output()
        .is_ok_and(|o| o.status.success());
    if !has_nbd {
        eprintln!("SKIP: fio ({}) has no nbd engine", peers.name());
        return;
    }
    let mut srv = start(Opts {
        size: 32 << 20,
        ..Default::default()
    });
    let out = run(peers
        .command("fio", share())
        .current_dir(srv.dir.path())
        .args([
            "--name=verify",
            "--ioengine=nbd",
            "--rw=randwrite",
            "--bsrange=512-64k",
            "--iodepth=32",
            "--size=32M",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_fatal=1",
            "--output-format=json",
        ])
        .arg(format!("--uri={}", srv.unix_uri())));
    let start = out.find('{').expect("fio JSON");
    let v: serde_json::Value = serde_json::from_str(&out[start..]).unwrap();
    let job = &v["jobs"][0];
    assert_eq!(job["error"], 0, "{}: {out}", peers.name());
    assert!(job["write"]["io_bytes"].as_u64().unwrap() >= 32 << 20);
    assert!(job["read"]["io_bytes"].as_u64().unwrap() >= 32 << 20);
    srv.stop().unwrap();
}
