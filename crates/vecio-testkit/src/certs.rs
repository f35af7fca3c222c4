//! X.509 certificates for TLS tests, made by the `openssl` command in a directory of the test's
//! own, in the layout nbdkit, qemu and libnbd read: `ca-cert.pem`, and `NAME-cert.pem` with
//! `NAME-key.pem` (`server-*` for a server, `client-*` for a client).

use std::path::Path;
use std::process::Command;

/// True when the `openssl` command runs; prints why the test is skipped otherwise.
pub fn have_openssl() -> bool {
    let ok = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    if !ok {
        eprintln!("SKIP: the openssl command is missing (scripts/setup installs it)");
    }
    ok
}

/// Runs openssl with `args`; panics with its output on failure.
fn openssl(args: &[&str]) {
    let out = Command::new("openssl")
        .args(args)
        .output()
        .expect("run openssl");
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "openssl {args:?}: {err}");
}

fn s(p: &Path) -> String {
    p.to_str().expect("utf-8 path").to_string()
}

/// A CA in `dir` (made if missing): `ca-cert.pem` and `ca-key.pem`, subject `/CN=cn`.
pub fn ca(dir: &Path, cn: &str) {
    std::fs::create_dir_all(dir).expect("CA directory");
    let (cert, key) = (s(&dir.join("ca-cert.pem")), s(&dir.join("ca-key.pem")));
    let subj = format!("/CN={cn}");
    openssl(&[
        "req",
        "-x509",
        "-newkey",
        "rsa:2048",
        "-nodes",
        "-days",
        "2",
        "-keyout",
        &key,
        "-out",
        &cert,
        "-subj",
        &subj,
        "-addext",
        "basicConstraints=critical,CA:TRUE",
        "-addext",
        "keyUsage=critical,keyCertSign,cRLSign",
    ]);
}

/// What a certificate is for.
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub enum Role {
    /// A server's (`server-cert.pem`, extended key usage serverAuth).
    Server,
    /// A client's (`client-cert.pem`, clientAuth).
    Client,
}

/// `dir/server-*.pem` or `dir/client-*.pem`, signed by the CA in `ca`, with `subject` in
/// openssl's `/O=.../CN=...` form and valid for localhost, 127.0.0.1, ::1 and `ips`;
/// `dir/ca-cert.pem` is a copy of the CA's certificate.
pub fn cert(ca: &Path, dir: &Path, role: Role, subject: &str, ips: &[&str]) {
    std::fs::create_dir_all(dir).expect("certificate directory");
    std::fs::copy(ca.join("ca-cert.pem"), dir.join("ca-cert.pem")).expect("copy the CA");
    let (name, usage) = match role {
        Role::Server => ("server", "serverAuth"),
        Role::Client => ("client", "clientAuth"),
    };
    let key = s(&dir.join(format!("{name}-key.pem")));
    let csr = s(&dir.join(format!("{name}.csr")));
    let cert = s(&dir.join(format!("{name}-cert.pem")));
    let ext = dir.join(format!("{name}.ext"));
    let mut san = String::from("DNS:localhost,IP:127.0.0.1,IP:::1");
    for ip in ips {
        san.push_str(&format!(",IP:{ip}"));
    }
    let text = format!(
        "subjectAltName={san}\nextendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\n"
    );
    std::fs::write(&ext, text).expect("extensions file");
    openssl(&[
        "req", "-newkey", "rsa:2048", "-nodes", "-keyout", &key, "-out", &csr, "-subj", subject,
    ]);
    let (ca_cert, ca_key) = (s(&ca.join("ca-cert.pem")), s(&ca.join("ca-key.pem")));
    openssl(&[
        "x509",
        "-req",
        "-in",
        &csr,
        "-CA",
        &ca_cert,
        "-CAkey",
        &ca_key,
        "-CAcreateserial",
        "-out",
        &cert,
        "-days",
        "2",
        "-extfile",
        &s(&ext),
    ]);
}
