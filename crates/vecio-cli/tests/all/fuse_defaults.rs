//! What `vecio fuse` serves with no options (issue 27): FUSE over io_uring where the kernel has
//! it on (said on standard error; a parameter that is off is left off), `/dev/fuse` with `--no-uring`; read-only opens handed to the
//! kernel (`passthrough` in the same line) unless `--no-passthrough`; and the `SIGUSR1` line
//! counts the requests served, by opcode.

use crate::fuse_server;

use fuse_server::FuseServer;

fn serving_line(server: &FuseServer) -> String {
    server
        .log()
        .lines()
        .find(|l| l.starts_with("vecio: serving "))
        .unwrap_or_else(|| panic!("no `serving` line; it said: {}", server.log()))
        .to_string()
}

#[test]
fn uring_and_read_passthrough_by_default_and_requests_counted() {
    if let Some(why) = FuseServer::skip_reason() {
        eprintln!("SKIP: {why}");
        return;
    }
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let src = dir.path().join("src");
    std::fs::create_dir(&src).unwrap();
    std::fs::write(src.join("f"), b"hello").unwrap();
    // Other tests may turn the parameter on (never off) while this one runs: a default mount
    // serves io_uring if it was on before the mount, /dev/fuse if it is still off after.
    let on_before = vecio_fuse::uring_enabled();
    for (args, uring, passthrough) in [
        (&[][..], on_before, true),
        (&["--no-uring"][..], false, true),
        (&["--no-uring", "--no-passthrough"][..], false, false),
    ] {
        let mnt = dir.path().join(format!("mnt{}", args.len()));
        let server = FuseServer::mount(&src, &mnt, args);
        assert_eq!(std::fs::read(mnt.join("f")).unwrap(), b"hello");
        let line = serving_line(&server);
        let uring =
            uring || (args.is_empty() && vecio_fuse::uring_enabled() && line.contains("io_uring"));
        assert_eq!(line.contains("io_uring"), uring, "{args:?}: {line}");
        assert_eq!(line.contains("/dev/fuse"), !uring, "{args:?}: {line}");
        assert_eq!(
            line.contains("passthrough"),
            passthrough,
            "{args:?}: {line}"
        );
        let held = server.held();
        assert!(held.contains("served requests "), "{held}");
        assert!(held.contains("LOOKUP 1"), "{held}");
        assert!(held.contains("OPEN 1"), "{held}");
        // The read went to the kernel where passthrough serves read-only opens.
        assert_eq!(held.contains("READ "), !passthrough, "{args:?}: {held}");
        assert!(server.unmount().success());
    }
}
