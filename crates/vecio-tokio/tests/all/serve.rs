//! The static file server example (`examples/serve/`) as an HTTP client sees it, over a real
//! socket with curl: whole files small and large, one range of each form, an unsatisfiable
//! range, conditional GET by ETag and by date, HEAD, an index page, and paths that try to leave
//! the root. tower-http's ServeDir serves the same tree, for the same bodies. Skips, saying
//! why, without curl.

#[path = "../../examples/serve/files.rs"]
mod files;

use std::path::Path;
use std::process::Command;

fn have_curl() -> bool {
    Command::new("curl")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
}

/// `curl -s -i` of `url` with `headers`: (status, headers text, body).
fn get(url: &str, headers: &[&str], head: bool) -> (u16, String, Vec<u8>) {
    let mut cmd = Command::new("curl");
    if head {
        cmd.args(["-s", "-I", "--path-as-is"]); // the headers are the output
    } else {
        cmd.args(["-s", "-D", "-", "-o", "-", "--path-as-is"]);
    }
    for h in headers {
        cmd.args(["-H", h]);
    }
    let out = cmd.arg(url).output().expect("running curl");
    let text = out.stdout;
    let split = text
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map_or(text.len(), |i| i + 4);
    let head_text = String::from_utf8_lossy(&text[..split]).to_string();
    let status = head_text
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    (status, head_text, text[split..].to_vec())
}

/// The value of header `name` (any case) in `head`.
fn header(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|l| {
        let (n, v) = l.split_once(':')?;
        n.eq_ignore_ascii_case(name).then(|| v.trim().to_string())
    })
}

async fn start(root: &Path, servedir: bool) -> String {
    let app = if servedir {
        axum::Router::new().fallback_service(tower_http::services::ServeDir::new(root))
    } else {
        files::router(root.to_path_buf())
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await });
    format!("http://{addr}")
}

fn tree() -> (tempfile::TempDir, Vec<u8>, Vec<u8>) {
    let dir = tempfile::Builder::new()
        .prefix("vecio-tokio-serve-")
        .tempdir_in(env!("CARGO_TARGET_TMPDIR"))
        .unwrap();
    let small: Vec<u8> = (0..5000u32).map(|i| (i * 7) as u8).collect();
    let large: Vec<u8> = (0..(3u32 << 20))
        .map(|i| (i >> 3) as u8 ^ (i as u8))
        .collect();
    std::fs::write(dir.path().join("small.bin"), &small).unwrap();
    std::fs::write(dir.path().join("large.bin"), &large).unwrap();
    std::fs::create_dir(dir.path().join("docs")).unwrap();
    std::fs::write(dir.path().join("docs/index.html"), "<p>index</p>").unwrap();
    (dir, small, large)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_ranges_and_conditional_get() {
    if !have_curl() {
        eprintln!("SKIP: curl is not installed (scripts/setup installs it)");
        return;
    }
    let (dir, small, large) = tree();
    let base = start(dir.path(), false).await;
    let run = move || {
        let (s, h, b) = get(&format!("{base}/small.bin"), &[], false);
        assert_eq!((s, b.as_slice()), (200, small.as_slice()));
        assert_eq!(header(&h, "content-length"), Some("5000".into()));
        let etag = header(&h, "etag").expect("an ETag");
        let modified = header(&h, "last-modified").expect("a Last-Modified");

        let (s, _, b) = get(&format!("{base}/large.bin"), &[], false);
        assert_eq!(s, 200);
        assert!(b == large, "the streamed large file differs");

        let (s, h, b) = get(&format!("{base}/small.bin"), &["Range: bytes=10-19"], false);
        assert_eq!((s, b.as_slice()), (206, &small[10..20]));
        assert_eq!(header(&h, "content-range"), Some("bytes 10-19/5000".into()));
        let (s, _, b) = get(&format!("{base}/small.bin"), &["Range: bytes=-5"], false);
        assert_eq!((s, b.as_slice()), (206, &small[4995..]));
        let (s, _, b) = get(
            &format!("{base}/large.bin"),
            &["Range: bytes=1000000-"],
            false,
        );
        assert_eq!(s, 206);
        assert!(b == large[1_000_000..], "an open range of the large file");
        let (s, h, _) = get(&format!("{base}/small.bin"), &["Range: bytes=9000-"], false);
        assert_eq!(s, 416);
        assert_eq!(header(&h, "content-range"), Some("bytes */5000".into()));

        let inm = format!("If-None-Match: {etag}");
        assert_eq!(get(&format!("{base}/small.bin"), &[&inm], false).0, 304);
        let ims = format!("If-Modified-Since: {modified}");
        assert_eq!(get(&format!("{base}/small.bin"), &[&ims], false).0, 304);
        let old = "If-Modified-Since: Mon, 01 Jan 2001 00:00:00 GMT";
        assert_eq!(get(&format!("{base}/small.bin"), &[old], false).0, 200);

        let (s, h, b) = get(&format!("{base}/small.bin"), &[], true);
        assert_eq!((s, b.len()), (200, 0));
        assert_eq!(header(&h, "content-length"), Some("5000".into()));
        let (s, _, b) = get(&format!("{base}/docs/"), &[], false);
        assert_eq!((s, b.as_slice()), (200, b"<p>index</p>".as_slice()));

        for escape in [
            "/../../etc/passwd",
            "/%2e%2e/%2e%2e/etc/passwd",
            "/docs/../../x",
        ] {
            assert_eq!(
                get(&format!("{base}{escape}"), &[], false).0,
                404,
                "{escape}"
            );
        }
        assert_eq!(get(&format!("{base}/missing"), &[], false).0, 404);
    };
    tokio::task::spawn_blocking(run).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn servedir_serves_the_same_bodies() {
    if !have_curl() {
        eprintln!("SKIP: curl is not installed (scripts/setup installs it)");
        return;
    }
    let (dir, _, _) = tree();
    let (ours, theirs) = (
        start(dir.path(), false).await,
        start(dir.path(), true).await,
    );
    tokio::task::spawn_blocking(move || {
        for (path, range) in [
            ("/small.bin", None),
            ("/large.bin", None),
            ("/large.bin", Some("Range: bytes=4096-70000")),
            ("/small.bin", Some("Range: bytes=-100")),
        ] {
            let h: Vec<&str> = range.into_iter().collect();
            let a = get(&format!("{ours}{path}"), &h, false);
            let b = get(&format!("{theirs}{path}"), &h, false);
            assert_eq!(a.0, b.0, "{path} {range:?}: status");
            assert!(a.2 == b.2, "{path} {range:?}: the bodies differ");
        }
    })
    .await
    .unwrap();
}
