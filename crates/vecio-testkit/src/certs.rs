//! X.509 certificates for TLS tests (`vecio_host::certs`, which the bench uses too), made in a
//! directory of the test's own; a failure panics with openssl's message.

use std::path::Path;

pub use vecio_host::certs::Role;

/// True when the `openssl` command runs; prints why the test is skipped otherwise.
pub fn have_openssl() -> bool {
    let missing = vecio_host::certs::openssl_missing();
    if let Some(why) = &missing {
        eprintln!("SKIP: {why}");
    }
    missing.is_none()
}

/// A CA in `dir` (made if missing): `ca-cert.pem` and `ca-key.pem`, subject `/CN=cn`.
pub fn ca(dir: &Path, cn: &str) {
    vecio_host::certs::ca(dir, cn).expect("making a CA");
}

/// `dir/server-*.pem` or `dir/client-*.pem`, signed by the CA in `ca`, with `subject` in
/// openssl's `/O=.../CN=...` form and valid for localhost, 127.0.0.1, ::1 and `ips`;
/// `dir/ca-cert.pem` is a copy of the CA's certificate.
pub fn cert(ca: &Path, dir: &Path, role: Role, subject: &str, ips: &[&str]) {
    vecio_host::certs::cert(ca, dir, role, subject, ips).expect("making a certificate");
}
