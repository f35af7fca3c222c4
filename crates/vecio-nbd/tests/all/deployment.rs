//! How the server is run: a one-shot server stops once its first client has left; a
//! persistent one (the default) goes on serving.

use crate::common;

use std::process::Command;
use std::time::{Duration, Instant};

use common::{have, run, scratch};
use vecio_nbd::{Export, Server, ServerOptions};

fn server(oneshot: bool) -> (tempfile::TempDir, std::path::PathBuf, Server) {
    let dir = scratch();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let export = Export::open(&image, Default::default()).unwrap();
    let opts = ServerOptions {
        oneshot,
        ..Default::default()
    };
    let mut srv = Server::new(export, opts).unwrap();
    let socket = dir.path().join("nbd.sock");
    srv.listen_unix(&socket).unwrap();
    (dir, socket, srv)
}

#[test]
fn a_oneshot_server_stops_after_its_client_and_a_persistent_one_does_not() {
    if !have("nbdinfo") {
        return;
    }
    for oneshot in [true, false] {
        let (_dir, socket, srv) = server(oneshot);
        let stop = srv.shutdown_handle();
        let t = std::thread::spawn(move || srv.run());
        let uri = format!("nbd+unix:///?socket={}", socket.display());
        assert_eq!(
            run(Command::new("nbdinfo").arg("--size").arg(&uri)).trim(),
            "1048576"
        );
        let deadline = Instant::now() + Duration::from_secs(3);
        while !t.is_finished() && Instant::now() < deadline {
            std::thread::sleep(Duration::from_millis(20));
        }
        assert_eq!(t.is_finished(), oneshot, "oneshot={oneshot}");
        if !oneshot {
            run(Command::new("nbdinfo").arg("--size").arg(&uri));
            stop.trigger();
        }
        t.join().unwrap().unwrap();
        assert!(!socket.exists(), "the socket file is removed");
    }
}

#[test]
fn a_socket_path_that_is_a_regular_file_is_refused_as_not_a_socket() {
    let dir = scratch();
    let image = dir.path().join("disk.img");
    std::fs::File::create(&image)
        .unwrap()
        .set_len(1 << 20)
        .unwrap();
    let taken = dir.path().join("not-a-socket");
    std::fs::write(&taken, b"keep me").unwrap();
    let export = Export::open(&image, Default::default()).unwrap();
    let mut srv = Server::new(export, ServerOptions::default()).unwrap();
    let err = srv.listen_unix(&taken).unwrap_err().to_string();
    assert!(err.contains("exists and is not a socket"), "{err}");
    assert!(!err.contains("already in use"), "{err}");
    assert_eq!(
        std::fs::read(&taken).unwrap(),
        b"keep me",
        "the file is left alone"
    );
}
