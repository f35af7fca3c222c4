//! X.509 certificates made by the `openssl` command, in the layout nbdkit, qemu, libnbd and
//! `vecio nbd --tls-certificates` read: `ca-cert.pem`, and `NAME-cert.pem` with `NAME-key.pem`
//! (`server-*` for a server, `client-*` for a client). The bench's TLS rows and the TLS tests
//! make theirs here; both last two days.

use std::path::Path;
use std::process::Command;

use crate::{Context, Error, Result};

/// Why certificates cannot be made here, if they cannot: the openssl command does not run.
pub fn openssl_missing() -> Option<String> {
    let runs = Command::new("openssl")
        .arg("version")
        .output()
        .is_ok_and(|o| o.status.success());
    (!runs).then(|| "openssl is not installed (scripts/setup installs it)".to_string())
}

/// A self-signed CA in `dir` (made if missing): `ca-cert.pem` and `ca-key.pem`, subject
/// `/CN=cn`.
pub fn ca(dir: &Path, cn: &str) -> Result<()> {
    std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    let mut req = openssl("req");
    req.args(["-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2"])
        .arg("-keyout")
        .arg(dir.join("ca-key.pem"))
        .arg("-out")
        .arg(dir.join("ca-cert.pem"))
        .arg("-subj")
        .arg(format!("/CN={cn}"))
        .args(["-addext", "basicConstraints=critical,CA:TRUE"])
        .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    run(req)
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
pub fn cert(ca: &Path, dir: &Path, role: Role, subject: &str, ips: &[&str]) -> Result<()> {
    std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    copy_ca(ca, dir)?;
    let (name, usage) = match role {
        Role::Server => ("server", "serverAuth"),
        Role::Client => ("client", "clientAuth"),
    };
    let file = |suffix: &str| dir.join(format!("{name}{suffix}"));
    let (csr, ext) = (file(".csr"), file(".ext"));
    let mut san = String::from("DNS:localhost,IP:127.0.0.1,IP:::1");
    for ip in ips {
        san.push_str(&format!(",IP:{ip}"));
    }
    let text = format!(
        "subjectAltName={san}\nextendedKeyUsage={usage}\nbasicConstraints=CA:FALSE\n\
         keyUsage=digitalSignature,keyEncipherment\n"
    );
    std::fs::write(&ext, text).ctx(|| format!("writing {}", ext.display()))?;
    let mut req = openssl("req");
    req.args(["-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(file("-key.pem"))
        .arg("-out")
        .arg(&csr)
        .args(["-subj", subject]);
    run(req)?;
    let mut sign = openssl("x509");
    sign.args(["-req", "-days", "2", "-CAcreateserial", "-in"])
        .arg(&csr)
        .arg("-CA")
        .arg(ca.join("ca-cert.pem"))
        .arg("-CAkey")
        .arg(ca.join("ca-key.pem"))
        .arg("-extfile")
        .arg(&ext)
        .arg("-out")
        .arg(file("-cert.pem"));
    run(sign)
}

/// `dir/ca-cert.pem`: a copy of the certificate of the CA in `ca`, which is all a peer that
/// checks the other side needs.
pub fn copy_ca(ca: &Path, dir: &Path) -> Result<()> {
    std::fs::create_dir_all(dir).ctx(|| format!("creating {}", dir.display()))?;
    let (from, to) = (ca.join("ca-cert.pem"), dir.join("ca-cert.pem"));
    std::fs::copy(&from, &to).ctx(|| format!("copying {} to {}", from.display(), to.display()))?;
    Ok(())
}

/// `openssl COMMAND`, to be given its arguments.
fn openssl(command: &str) -> Command {
    let mut c = Command::new("openssl");
    c.arg(command);
    c
}

/// Runs an openssl command; fails with the first lines of its stderr.
fn run(mut cmd: Command) -> Result<()> {
    let what = format!(
        "openssl {}",
        cmd.get_args().next().unwrap_or_default().to_string_lossy()
    );
    let out = cmd.output().ctx(|| format!("running {what}"))?;
    if out.status.success() {
        return Ok(());
    }
    let stderr = String::from_utf8_lossy(&out.stderr);
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    let said = lines[..lines.len().min(4)].join(" | ");
    Err(Error::Other(format!(
        "{what} failed ({}): {said}",
        out.status
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    // Certificates that verify are checked by the bench's harness tests and used by every TLS
    // test; here, what goes wrong.
    #[test]
    fn a_missing_ca_is_an_error_naming_it() {
        let dir = tempfile::tempdir().unwrap();
        let missing = dir.path().join("no-ca");
        let err = cert(&missing, &dir.path().join("x"), Role::Client, "/CN=x", &[]).unwrap_err();
        assert!(err.to_string().contains("no-ca/ca-cert.pem"), "{err}");
    }
}
