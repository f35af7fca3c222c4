//! `vecio nbd` under systemd socket activation: the launcher binds the socket, passes it as
//! fd 3 with `LISTEN_FDS=1` and `LISTEN_PID` set to the server's pid (as systemd does), and
//! the server serves it without binding anything of its own.

use std::io::{BufRead, BufReader};
use std::os::fd::AsRawFd;
use std::os::unix::net::UnixListener;
use std::os::unix::process::CommandExt;
use std::process::{Command, Stdio};

fn have(prog: &str) -> bool {
    let ok = Command::new(prog)
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: {prog} is not installed (scripts/setup installs it)");
    }
    ok
}

#[test]
fn a_socket_passed_as_fd_3_is_served_instead_of_binding_one() {
    if !have("nbdinfo") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("vecio-nbd-act-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(3 << 20)
        .unwrap();
    let sock = dir.path().join("activated.sock");
    let listener = UnixListener::bind(&sock).unwrap();
    let fd = listener.as_raw_fd();
    // `LISTEN_PID=$$ exec vecio ...`: the shell's pid is the server's after exec.
    let script = format!(
        "export LISTEN_PID=$$ LISTEN_FDS=1; exec '{}' nbd '{}'",
        env!("CARGO_BIN_EXE_vecio"),
        image.display()
    );
    let mut cmd = Command::new("sh");
    cmd.args(["-c", &script]).stdout(Stdio::piped());
    // SAFETY: dup2 is async-signal-safe; it runs in the child between fork and exec.
    unsafe {
        cmd.pre_exec(move || {
            // dup2 onto itself keeps close-on-exec: clear it then.
            let r = match fd {
                3 => libc::fcntl(3, libc::F_SETFD, 0),
                _ => libc::dup2(fd, 3),
            };
            if r < 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let mut child = cmd.spawn().unwrap();
    drop(listener);
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    let size = Command::new("nbdinfo").arg("--size").arg(&uri).output();
    let default_sock = dir.path().join("disk.img.sock").exists();
    let _ = child.kill();
    let _ = child.wait();
    assert_eq!(line.trim(), uri, "the printed URI names the passed socket");
    let size = size.unwrap();
    assert!(size.status.success(), "{size:?}");
    assert_eq!(String::from_utf8_lossy(&size.stdout).trim(), "3145728");
    assert!(!default_sock, "no socket of its own is bound");
}

#[test]
fn systemd_socket_activate_starts_the_server_on_the_first_client() {
    if !have("nbdinfo") || !have("systemd-socket-activate") {
        return;
    }
    let dir = tempfile::Builder::new()
        .prefix("vecio-nbd-ssa-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(5 << 20)
        .unwrap();
    let sock = dir.path().join("ssa.sock");
    let mut launcher = Command::new("systemd-socket-activate")
        .arg("-l")
        .arg(&sock)
        .arg(env!("CARGO_BIN_EXE_vecio"))
        .arg("nbd")
        .arg(&image)
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while !sock.exists() && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let uri = format!("nbd+unix:///?socket={}", sock.display());
    // Bounded: a server that ignored the passed socket would leave nbdinfo waiting.
    let size = Command::new("timeout")
        .args(["20", "nbdinfo", "--size", &uri])
        .output();
    let _ = launcher.kill();
    let _ = launcher.wait();
    let size = size.unwrap();
    assert!(size.status.success(), "{size:?}");
    assert_eq!(String::from_utf8_lossy(&size.stdout).trim(), "5242880");
}
