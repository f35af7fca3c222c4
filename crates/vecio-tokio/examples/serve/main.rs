//! A static file server, two ways: through `vecio_tokio::fs` (this example's own handler, with
//! range requests and conditional GET), or through tower-http's `ServeDir` (tokio::fs), so the
//! two can be loaded side by side (`vecio bench tokio --http`).
//!
//! ```sh
//! cargo run --release -p vecio-tokio --example serve -- DIR [--addr 127.0.0.1:8080] [--via vecio|servedir]
//! ```
//!
//! It prints `listening on ADDR` once it accepts connections, and serves until killed.

mod files;

use std::net::SocketAddr;
use std::path::PathBuf;

fn usage() -> ! {
    eprintln!("usage: serve DIR [--addr HOST:PORT] [--via vecio|servedir] [--workers N]");
    std::process::exit(2)
}

struct Args {
    root: PathBuf,
    addr: SocketAddr,
    via: String,
    workers: usize,
}

fn args() -> Args {
    let mut it = std::env::args().skip(1);
    let mut a = Args {
        root: PathBuf::new(),
        addr: SocketAddr::from(([127, 0, 0, 1], 8080)),
        via: "vecio".into(),
        workers: 2,
    };
    while let Some(arg) = it.next() {
        match arg.as_str() {
            "--addr" => {
                a.addr = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            "--via" => a.via = it.next().unwrap_or_else(|| usage()),
            "--workers" => {
                a.workers = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .unwrap_or_else(|| usage())
            }
            _ if a.root.as_os_str().is_empty() && !arg.starts_with('-') => a.root = arg.into(),
            _ => usage(),
        }
    }
    if a.root.as_os_str().is_empty() || !matches!(a.via.as_str(), "vecio" | "servedir") {
        usage();
    }
    a
}

fn main() -> std::io::Result<()> {
    let a = args();
    if !a.root.is_dir() {
        eprintln!("serve: {}: not a directory", a.root.display());
        std::process::exit(1);
    }
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(a.workers)
        .enable_all()
        .build()?;
    rt.block_on(async {
        let app = match a.via.as_str() {
            "vecio" => files::router(a.root.clone()),
            _ => axum::Router::new().fallback_service(tower_http::services::ServeDir::new(&a.root)),
        };
        let listener = tokio::net::TcpListener::bind(a.addr).await?;
        println!("listening on {} (via {})", listener.local_addr()?, a.via);
        // TCP_NODELAY on every connection, for both servers: a body sent after its headers
        // in a second write (ServeDir's stream) would otherwise wait for the client's delayed
        // ACK (40 ms), and the comparison would measure Nagle's algorithm, not the files.
        use axum::serve::ListenerExt;
        let listener = listener.tap_io(|tcp| {
            let _ = tcp.set_nodelay(true);
        });
        axum::serve(listener, app).await
    })
}
