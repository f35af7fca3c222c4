//! The file handler over `vecio_tokio::fs`: GET and HEAD of files under a root, with
//! `Range: bytes=` (one range), `If-None-Match` / `If-Modified-Since` (304), `ETag` and
//! `Last-Modified`, `index.html` for directories, and no way out of the root.

use std::io::SeekFrom;
use std::path::{Component, Path, PathBuf};
use std::sync::Arc;
use std::time::SystemTime;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, Method, StatusCode};
use axum::response::Response;
use axum::Router;
use tokio::io::{AsyncReadExt, AsyncSeekExt};
use vecio_tokio::fs::File;

/// Bodies up to this size are read in one call (served from the page cache on the task when
/// cached); larger ones are streamed.
const WHOLE: u64 = 256 << 10;

/// The router serving `root`.
pub fn router(root: PathBuf) -> Router {
    Router::new().fallback(serve).with_state(Arc::new(root))
}

async fn serve(State(root): State<Arc<PathBuf>>, req: Request) -> Response {
    if req.method() != Method::GET && req.method() != Method::HEAD {
        return status(StatusCode::METHOD_NOT_ALLOWED);
    }
    let Some(path) = resolve(&root, req.uri().path()) else {
        return status(StatusCode::NOT_FOUND);
    };
    match respond(&path, req.headers(), req.method() == Method::HEAD).await {
        Ok(r) => r,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => status(StatusCode::NOT_FOUND),
        Err(e) if e.kind() == std::io::ErrorKind::PermissionDenied => status(StatusCode::FORBIDDEN),
        Err(_) => status(StatusCode::INTERNAL_SERVER_ERROR),
    }
}

/// The file a URI path names under `root`: percent-decoded, only normal components (no `..`,
/// no absolute parts), `index.html` for a directory.
fn resolve(root: &Path, uri_path: &str) -> Option<PathBuf> {
    let decoded = percent_decode(uri_path.trim_start_matches('/'))?;
    let mut path = root.to_path_buf();
    for c in Path::new(&decoded).components() {
        match c {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            _ => return None,
        }
    }
    if path.is_dir() {
        path.push("index.html");
    }
    Some(path)
}

fn percent_decode(s: &str) -> Option<String> {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = std::str::from_utf8(bytes.get(i + 1..i + 3)?).ok()?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

async fn respond(path: &Path, headers: &HeaderMap, head: bool) -> std::io::Result<Response> {
    let mut file = File::open(path).await?;
    let meta = file.metadata().await?;
    if !meta.is_file() {
        return Ok(status(StatusCode::NOT_FOUND));
    }
    let len = meta.len();
    let modified = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
    let etag = etag(len, modified);
    if not_modified(headers, &etag, modified) {
        let mut r = status(StatusCode::NOT_MODIFIED);
        r.headers_mut().insert(header::ETAG, etag);
        return Ok(r);
    }
    let (code, start, count) = match range(headers, len) {
        Range::Whole => (StatusCode::OK, 0, len),
        Range::Part(start, end) => (StatusCode::PARTIAL_CONTENT, start, end - start + 1),
        Range::Unsatisfiable => {
            let mut r = status(StatusCode::RANGE_NOT_SATISFIABLE);
            let v = HeaderValue::from_str(&format!("bytes */{len}")).ok();
            r.headers_mut()
                .extend(v.map(|v| (header::CONTENT_RANGE, v)));
            return Ok(r);
        }
    };
    let body = if head || count == 0 {
        Body::empty()
    } else if count <= WHOLE {
        let (n, mut buf) = file
            .positional()?
            .read_at(vec![0u8; count as usize], start)
            .await;
        buf.truncate(n?);
        Body::from(buf)
    } else {
        file.seek(SeekFrom::Start(start)).await?;
        let stream = tokio_util::io::ReaderStream::with_capacity(file.take(count), 256 << 10);
        Body::from_stream(stream)
    };
    let mut r = Response::new(body);
    *r.status_mut() = code;
    let h = r.headers_mut();
    h.insert(header::CONTENT_LENGTH, HeaderValue::from(count));
    h.insert(header::ACCEPT_RANGES, HeaderValue::from_static("bytes"));
    h.insert(header::ETAG, etag);
    if let Ok(v) = HeaderValue::from_str(&httpdate::fmt_http_date(modified)) {
        h.insert(header::LAST_MODIFIED, v);
    }
    if code == StatusCode::PARTIAL_CONTENT {
        let v = format!("bytes {start}-{}/{len}", start + count - 1);
        h.extend(
            HeaderValue::from_str(&v)
                .ok()
                .map(|v| (header::CONTENT_RANGE, v)),
        );
    }
    Ok(r)
}

fn status(code: StatusCode) -> Response {
    let mut r = Response::new(Body::empty());
    *r.status_mut() = code;
    r
}

/// A weak validator from the size and the modification time.
fn etag(len: u64, modified: SystemTime) -> HeaderValue {
    let ns = modified
        .duration_since(SystemTime::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    HeaderValue::from_str(&format!("W/\"{len:x}-{ns:x}\""))
        .unwrap_or(HeaderValue::from_static("W/\"0\""))
}

/// `If-None-Match` (which wins when present) or `If-Modified-Since` says the client's copy is
/// current.
fn not_modified(headers: &HeaderMap, etag: &HeaderValue, modified: SystemTime) -> bool {
    if let Some(inm) = headers
        .get(header::IF_NONE_MATCH)
        .and_then(|v| v.to_str().ok())
    {
        let ours = etag.to_str().unwrap_or("");
        let bare = |t: &str| t.trim().trim_start_matches("W/").to_string();
        return inm
            .split(',')
            .any(|t| t.trim() == "*" || bare(t) == bare(ours));
    }
    let since = headers
        .get(header::IF_MODIFIED_SINCE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| httpdate::parse_http_date(v).ok());
    let secs = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs())
    };
    since.is_some_and(|s| secs(modified) <= secs(s))
}

enum Range {
    Whole,
    Part(u64, u64),
    Unsatisfiable,
}

/// One `bytes=` range (`a-b`, `a-`, `-n`); several ranges or another unit serve the whole file.
fn range(headers: &HeaderMap, len: u64) -> Range {
    let Some(spec) = headers
        .get(header::RANGE)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().strip_prefix("bytes="))
    else {
        return Range::Whole;
    };
    if spec.contains(',') {
        return Range::Whole;
    }
    let Some((a, b)) = spec.split_once('-') else {
        return Range::Whole;
    };
    let (a, b) = (a.trim(), b.trim());
    let parsed = match (a.parse::<u64>(), b.parse::<u64>()) {
        (Ok(start), Ok(end)) if start <= end => Some((start, end.min(len.saturating_sub(1)))),
        (Ok(start), Err(_)) if b.is_empty() => Some((start, len.saturating_sub(1))),
        (Err(_), Ok(n)) if a.is_empty() && n > 0 => {
            Some((len.saturating_sub(n), len.saturating_sub(1)))
        }
        _ => return Range::Whole,
    };
    match parsed {
        Some((start, end)) if start < len && start <= end => Range::Part(start, end),
        _ => Range::Unsatisfiable,
    }
}
