//! `vecio nbd` as a user runs it: it prints where it listens, serves, survives `kill -9`
//! with every flushed or FUA write in the file, replaces its own stale socket on restart,
//! stops cleanly on SIGTERM (exit 0, socket and pid file removed), refuses bad options
//! with exit 2 and a missing file with exit 1, and under `--run` serves a command and exits
//! with its status.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::os::unix::net::UnixStream;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use vecio_nbd::proto::{self, opt, rep, Command as Cmd, OptionHeader, Request};

fn scratch_dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vecio-nbd-cli-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap()
}

/// A server process, killed (SIGKILL) if a test ends without stopping it.
struct Server(Option<Child>);

impl Server {
    fn child(&mut self) -> &mut Child {
        self.0.as_mut().expect("server running")
    }

    fn take(mut self) -> Child {
        self.0.take().expect("server running")
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        if let Some(c) = &mut self.0 {
            let _ = c.kill();
            let _ = c.wait();
        }
    }
}

/// Starts `vecio nbd` and waits for its first line (the URI), which it prints once listening.
fn serve(dir: &Path, args: &[&str]) -> (Server, String) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .args(args)
        .current_dir(dir)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("running vecio nbd");
    let mut line = String::new();
    let stdout = child.stdout.take().expect("stdout");
    BufReader::new(stdout).read_line(&mut line).unwrap();
    let server = Server(Some(child));
    assert!(line.starts_with("nbd"), "first line: {line:?}");
    (server, line.trim().to_string())
}

/// A minimal client: fixed newstyle, NBD_OPT_GO, simple replies.
struct Client(UnixStream);

impl Client {
    fn connect(sock: &Path) -> Client {
        let mut s = UnixStream::connect(sock).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        let mut g = [0u8; 18];
        s.read_exact(&mut g).unwrap();
        assert_eq!(&g[..16], b"NBDMAGICIHAVEOPT");
        s.write_all(&1u32.to_be_bytes()).unwrap();
        let data = proto::encode_info_request("", &[]);
        let h = OptionHeader {
            option: opt::GO,
            len: data.len() as u32,
        };
        s.write_all(&h.encode()).unwrap();
        s.write_all(&data).unwrap();
        loop {
            let mut r = [0u8; 20];
            s.read_exact(&mut r).unwrap();
            let kind = u32::from_be_bytes(r[12..16].try_into().unwrap());
            let len = u32::from_be_bytes(r[16..20].try_into().unwrap());
            let mut d = vec![0u8; len as usize];
            s.read_exact(&mut d).unwrap();
            if kind == rep::ACK {
                return Client(s);
            }
            assert_eq!(kind, rep::INFO);
        }
    }

    fn request(&mut self, kind: Cmd, flags: u16, offset: u64, len: u32, payload: &[u8]) -> u32 {
        let r = Request {
            flags,
            kind: kind.into(),
            cookie: 5,
            offset,
            len: len.into(),
        };
        self.0
            .write_all(&r.encode().expect("32-bit length"))
            .unwrap();
        self.0.write_all(payload).unwrap();
        let mut h = [0u8; 16];
        self.0.read_exact(&mut h).unwrap();
        assert_eq!(
            u32::from_be_bytes(h[..4].try_into().unwrap()),
            proto::SIMPLE_REPLY_MAGIC
        );
        u32::from_be_bytes(h[4..8].try_into().unwrap())
    }

    fn read(&mut self, offset: u64, len: u32) -> Vec<u8> {
        assert_eq!(self.request(Cmd::Read, 0, offset, len, &[]), 0);
        let mut d = vec![0u8; len as usize];
        self.0.read_exact(&mut d).unwrap();
        d
    }
}

fn pattern(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect()
}

fn sigterm(child: &Child) {
    let ok = Command::new("kill")
        .arg("-TERM")
        .arg(child.id().to_string())
        .status()
        .unwrap();
    assert!(ok.success());
}

#[test]
fn flushed_and_fua_writes_survive_kill_9_and_sigterm_stops_cleanly() {
    let dir = scratch_dir();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(8 << 20)
        .unwrap();
    let sock = dir.path().join("s.sock");
    let pid = dir.path().join("pid");
    let args = [
        "disk.img",
        "-U",
        "s.sock",
        "--pid-file",
        "pid",
        "--cache=none",
        "--aio=uring",
    ];
    let (mut child, uri) = serve(dir.path(), &args);
    // The printed path is absolute, whatever the server's working directory.
    assert_eq!(uri, format!("nbd+unix:///?socket={}", sock.display()));
    let written = std::fs::read_to_string(&pid).unwrap();
    assert_eq!(written.trim(), child.child().id().to_string());

    let a = pattern(65536, 1);
    let b = pattern(1000, 2);
    let mut c = Client::connect(&sock);
    assert_eq!(c.request(Cmd::Write, 0, 4096, a.len() as u32, &a), 0);
    assert_eq!(c.request(Cmd::Flush, 0, 0, 0, &[]), 0);
    // FUA on an unaligned write (the read-modify-write path).
    let fua = proto::CmdFlags::FUA.bits();
    assert_eq!(c.request(Cmd::Write, fua, 1_000_001, b.len() as u32, &b), 0);
    let mut killed = child.take();
    killed.kill().unwrap(); // SIGKILL
    killed.wait().unwrap();
    drop(c);
    let data = std::fs::read(&img).unwrap();
    assert!(data[4096..4096 + a.len()] == a[..]);
    assert!(data[1_000_001..1_001_001] == b[..]);
    assert_eq!(data.len(), 8 << 20);

    // Restart on the stale socket; the data reads back through NBD.
    let _ = std::fs::remove_file(&pid);
    let (child, _) = serve(dir.path(), &args);
    let mut c = Client::connect(&sock);
    assert!(c.read(4096, 65536) == a);
    assert!(c.read(1_000_001, 1000) == b);
    drop(c);
    let child = child.take();
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    assert!(!sock.exists(), "socket left behind");
    assert!(!pid.exists(), "pid file left behind");
}

#[test]
fn tcp_port_0_prints_the_port_chosen() {
    let dir = scratch_dir();
    std::fs::File::create(dir.path().join("d.img"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let (child, uri) = serve(
        dir.path(),
        &["d.img", "-p", "0", "-x", "disk", "--cache=writeback", "-r"],
    );
    let rest = uri.strip_prefix("nbd://127.0.0.1:").expect(&uri);
    let port: u16 = rest.strip_suffix("/disk").expect(&uri).parse().unwrap();
    assert!(port > 0);
    let info = Command::new("nbdinfo").arg("--json").arg(&uri).output();
    match info {
        Ok(o) if o.status.success() => {
            let v: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
            assert_eq!(v["exports"][0]["export-size"], 1 << 20);
            assert_eq!(v["exports"][0]["is_read_only"], true);
        }
        _ => eprintln!("SKIP nbdinfo part: nbdinfo is not installed"),
    }
    let mut child = child.take();
    sigterm(&child);
    assert!(child.wait().unwrap().success());
}

/// `-b ADDR` alone listens on TCP at NBD's port, 10809, as qemu-nbd does, not on the default
/// Unix socket beside the file.
#[test]
fn bind_without_a_port_listens_on_nbd_port_10809() {
    if let Err(e) = std::net::TcpListener::bind("127.0.0.1:10809") {
        eprintln!("SKIP: 127.0.0.1:10809 is in use on this machine ({e})");
        return;
    }
    let dir = scratch_dir();
    std::fs::File::create(dir.path().join("d.img"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let (child, uri) = serve(dir.path(), &["d.img", "-b", "127.0.0.1", "-r"]);
    assert_eq!(uri, "nbd://127.0.0.1:10809/");
    assert!(!dir.path().join("d.img.sock").exists(), "a Unix socket too");
    std::net::TcpStream::connect("127.0.0.1:10809").expect("listening on 10809");
    let mut child = child.take();
    sigterm(&child);
    assert!(child.wait().unwrap().success());
}

#[test]
fn bad_options_exit_2_and_a_missing_file_exits_1() {
    let dir = scratch_dir();
    let run = |args: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_vecio"))
            .arg("nbd")
            .args(args)
            .current_dir(dir.path())
            .output()
            .unwrap()
    };
    for args in [
        &[][..],
        &["x.img", "--cache=sometimes"],
        &["x.img", "--aio=magic"],
        &["x.img", "-p", "notaport"],
        &["x.img", "--tls=require"],
        &["x.img", "--tls=maybe", "--tls-psk=k.psk"],
        &["x.img", "--tls-psk=k.psk", "--tls-certificates=."],
        &["x.img", "--tls-verify-peer", "--tls-psk=k.psk"],
    ] {
        let out = run(args);
        assert_eq!(out.status.code(), Some(2), "{args:?}");
    }
    let out = run(&["missing.img", "-U", "m.sock"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(err.contains("missing.img"), "{err}");
    // A PSK file with a typo is refused before anything listens, naming the line.
    std::fs::write(dir.path().join("x.img"), vec![0u8; 4096]).unwrap();
    std::fs::write(dir.path().join("k.psk"), "alice:00ff\nbob:xyz\n").unwrap();
    let out = run(&["x.img", "-U", "k.sock", "--tls-psk=k.psk"]);
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("k.psk:2:"), "{err}");
    assert_eq!(err.trim().lines().count(), 1, "{err}");
    assert!(
        !dir.path().join("k.sock").exists(),
        "a socket was left behind"
    );
}

/// Writes and reads 64 KiB through a server started by `prefix` (a command line that ends by
/// running what follows it), stops it, and returns its debug log.
fn round_trip_logged(prefix: &[&str]) -> String {
    let dir = scratch_dir();
    std::fs::File::create(dir.path().join("disk.img"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let mut child = Command::new(prefix[0])
        .args(&prefix[1..])
        .arg(env!("CARGO_BIN_EXE_vecio"))
        .args([
            "nbd",
            "disk.img",
            "-U",
            "s.sock",
            "--cache=none",
            "--aio=uring",
        ])
        .env("VECIO_LOG", "vecio_nbd=debug")
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("running vecio nbd");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    assert!(line.starts_with("nbd"), "first line: {line:?}");
    let server = Server(Some(child));
    let a = pattern(65536, 9);
    let mut c = Client::connect(&dir.path().join("s.sock"));
    assert_eq!(c.request(Cmd::Write, 0, 8192, a.len() as u32, &a), 0);
    assert!(c.read(8192, 65536) == a);
    drop(c);
    let child = server.take();
    std::thread::sleep(Duration::from_millis(200)); // the connection logs as it closes
    sigterm(&child);
    let out = child.wait_with_output().unwrap();
    assert!(out.status.success(), "exit {:?}", out.status);
    String::from_utf8_lossy(&out.stderr).into_owned()
}

/// The number after `key=` in the first log line that has it.
fn logged(log: &str, key: &str) -> Option<u64> {
    let at = log.find(&format!("{key}="))? + key.len() + 1;
    log[at..]
        .split(|c: char| !c.is_ascii_digit())
        .next()?
        .parse()
        .ok()
}

#[test]
fn request_buffers_are_registered_and_still_work_when_memlock_refuses() {
    // As root: the connection's region is registered, so the write and the read are fixed.
    let log = round_trip_logged(&["env"]);
    assert_eq!(logged(&log, "fixed_buffer_ops"), Some(2), "{log}");
    // Without CAP_IPC_LOCK and with 64 KiB of locked memory allowed, registering 8 MiB is
    // refused: the server says so in its debug log and serves the same bytes anyway.
    let root = std::fs::metadata("/proc/self").map(|m| std::os::unix::fs::MetadataExt::uid(&m));
    if root.ok() != Some(0) || Command::new("prlimit").arg("-V").output().is_err() {
        eprintln!("skipping the memlock half: needs root and prlimit (util-linux)");
        return;
    }
    let log = round_trip_logged(&[
        "prlimit",
        "--memlock=65536:65536",
        "setpriv",
        "--inh-caps=-ipc_lock",
        "--bounding-set=-ipc_lock",
    ]);
    assert!(log.contains("buffers not registered"), "{log}");
    assert_eq!(logged(&log, "fixed_buffer_ops"), Some(0), "{log}");
}

/// `kill -USR1` makes the server say what it holds: its export's file, no connection; one
/// connection while a client is attached.
#[test]
fn the_server_says_what_it_holds() {
    let dir = scratch_dir();
    let img = dir.path().join("disk.img");
    std::fs::File::create(&img)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let log = dir.path().join("stderr");
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .arg(&img)
        .current_dir(dir.path())
        .stdout(Stdio::piped())
        .stderr(std::fs::File::create(&log).unwrap())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let server = Server(Some(child));
    let pid = rustix::process::Pid::from_raw(server.0.as_ref().unwrap().id() as i32).unwrap();
    let held = |n: usize| {
        rustix::process::kill_process(pid, rustix::process::Signal::USR1).unwrap();
        let mut line = None;
        vecio_testkit::wait_until(Duration::from_secs(5), || {
            let text = std::fs::read_to_string(&log).unwrap_or_default();
            line = text
                .lines()
                .filter(|l| l.contains("holding"))
                .nth(n)
                .map(str::to_string);
            line.is_some()
        });
        line.expect("nothing printed on SIGUSR1")
    };
    let idle = held(0);
    assert!(idle.contains("connections 0, exports 1"), "{idle}");
    assert!(idle.contains("open files 1"), "{idle}");
    let client = Client::connect(&dir.path().join("disk.img.sock"));
    let busy = held(1);
    assert!(busy.contains("connections 1"), "{busy}");
    drop(client);
}

/// `--run CMD` (nbdkit's captive mode): CMD gets the server's URI and socket, the server stops
/// when CMD exits, vecio exits with CMD's status, and the private socket's directory is gone.
#[test]
fn run_serves_the_command_then_exits_with_its_status() {
    let dir = scratch_dir();
    let d = dir.path();
    let data: Vec<u8> = (0..(1u32 << 20)).map(|i| (i % 251) as u8).collect();
    std::fs::write(d.join("d.img"), &data).unwrap();
    let have_nbdcopy = Command::new("nbdcopy").arg("--version").output().is_ok();
    let copy = if have_nbdcopy {
        r#"nbdcopy "$uri" copy.img"#
    } else {
        eprintln!("SKIP the nbdcopy part: nbdcopy (libnbd-bin) is not installed");
        "true"
    };
    let cmd = format!(r#"echo "$uri|$nbd|$unixsocket|$port|$exportname" > env.txt; {copy}"#);
    let out = common::vecio(d, &["nbd", "d.img", "-x", "disk", "--run", &cmd]);
    assert!(out.status.success(), "{out:?}");
    assert!(out.stdout.is_empty(), "no URI printed under --run: {out:?}");
    let env = std::fs::read_to_string(d.join("env.txt")).unwrap();
    let f: Vec<&str> = env.trim().split('|').collect();
    let sock = Path::new(f[2]);
    assert_eq!(f[0], format!("nbd+unix:///disk?socket={}", sock.display()));
    assert_eq!((f[1], f[3], f[4]), (f[0], "", "disk"));
    assert!(
        !sock.parent().unwrap().exists(),
        "private socket directory left behind"
    );
    assert!(!d.join("d.img.sock").exists(), "a socket beside the file");
    if have_nbdcopy {
        assert!(std::fs::read(d.join("copy.img")).unwrap() == data);
    }

    let out = common::vecio(
        d,
        &[
            "nbd",
            "d.img",
            "-p",
            "0",
            "--run",
            r#"echo "$uri $port" > tcp.txt; exit 3"#,
        ],
    );
    assert_eq!(out.status.code(), Some(3), "{out:?}");
    let tcp = std::fs::read_to_string(d.join("tcp.txt")).unwrap();
    let (uri, port) = tcp.trim().split_once(' ').unwrap();
    assert_eq!(uri, format!("nbd://127.0.0.1:{port}/"));
    assert!(port.parse::<u16>().unwrap() > 0);

    let out = common::vecio(d, &["nbd", "d.img", "--run", "true", "--fork"]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");

    // qemu-nbd's -k names the Unix socket, as -U does.
    let sock = d.join("k.sock");
    let cmd = r#"echo "$unixsocket" > k.txt"#;
    let out = common::vecio(
        d,
        &["nbd", "d.img", "-k", sock.to_str().unwrap(), "--run", cmd],
    );
    assert!(out.status.success(), "{out:?}");
    let named = std::fs::read_to_string(d.join("k.txt")).unwrap();
    assert_eq!(Path::new(named.trim()), sock);
}

/// A SIGTERM to vecio under `--run` stops the server and the command with everything it
/// started; vecio exits with the command's status (143: ended by SIGTERM).
#[test]
fn run_stopped_by_sigterm_takes_the_command_along() {
    let dir = scratch_dir();
    let d = dir.path();
    std::fs::File::create(d.join("d.img"))
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let cmd = "sleep 60 & echo $! > sleep.pid; wait; touch finished";
    let mut child = Command::new(env!("CARGO_BIN_EXE_vecio"))
        .args(["nbd", "d.img", "--run", cmd])
        .current_dir(d)
        .spawn()
        .unwrap();
    let pid_file = d.join("sleep.pid");
    let end = Instant::now() + Duration::from_secs(10);
    while std::fs::read_to_string(&pid_file).map_or(true, |s| !s.ends_with('\n')) {
        assert!(Instant::now() < end, "the command did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let sleep_pid = std::fs::read_to_string(&pid_file)
        .unwrap()
        .trim()
        .to_string();
    sigterm(&child);
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(143), "{status:?}");
    let gone = Instant::now() + Duration::from_secs(5);
    while Path::new(&format!("/proc/{sleep_pid}")).exists() {
        assert!(Instant::now() < gone, "the command's sleep outlived vecio");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(!d.join("finished").exists(), "the command ran on");
}

/// A qcow2 image (its header's signature) is refused, not served as the raw bytes a client
/// would take for the disk; `-f raw` serves its bytes as they are.
#[test]
fn a_qcow2_image_is_refused_unless_declared_raw() {
    let dir = scratch_dir();
    let d = dir.path();
    let mut head = b"QFI\xfb\0\0\0\x03".to_vec();
    head.resize(1 << 16, 0);
    std::fs::write(d.join("disk.qcow2"), &head).unwrap();
    let out = common::vecio(d, &["nbd", "disk.qcow2", "--run", "true"]);
    let err = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{err}");
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(err.contains("qcow2") && err.contains("-f raw"), "{err}");
    let out = common::vecio(d, &["nbd", "disk.qcow2", "-f", "raw", "--run", "true"]);
    assert!(out.status.success(), "{out:?}");

    // --dir: the container is refused to the client that asks for it, the raw file served.
    if Command::new("nbdinfo").arg("--version").output().is_err() {
        eprintln!("SKIP the --dir part: nbdinfo (libnbd-bin) is not installed");
        return;
    }
    std::fs::write(d.join("raw.img"), vec![0u8; 1 << 16]).unwrap();
    let size = |name: &str| format!(r#"nbdinfo --size "nbd+unix:///{name}?socket=$unixsocket""#);
    let dir = d.to_str().unwrap();
    let out = common::vecio(d, &["nbd", "--dir", dir, "--run", &size("raw.img")]);
    assert!(out.status.success(), "{out:?}");
    assert_eq!(String::from_utf8_lossy(&out.stdout).trim(), "65536");
    let out = common::vecio(d, &["nbd", "--dir", dir, "--run", &size("disk.qcow2")]);
    assert!(!out.status.success(), "the qcow2 file was served: {out:?}");
    let log = String::from_utf8_lossy(&out.stderr);
    assert!(log.contains("qcow2") && log.contains("-f raw"), "{log}");
    let out = common::vecio(
        d,
        &[
            "nbd",
            "--dir",
            dir,
            "-f",
            "raw",
            "--run",
            &size("disk.qcow2"),
        ],
    );
    assert!(out.status.success(), "{out:?}");
}
