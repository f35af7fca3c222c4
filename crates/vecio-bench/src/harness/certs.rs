//! X.509 certificates for servers measured over TLS, made with `openssl` in a scratch
//! directory (docs/report.md, "The harness").

use std::path::{Path, PathBuf};
use std::process::Command;

use anyhow::{bail, Context, Result};

use crate::harness::server::find_program;

/// A CA and a server certificate signed by it.
#[derive(Debug, Clone)]
pub struct Certificates {
    server: PathBuf,
    client: PathBuf,
}

impl Certificates {
    /// Makes `dir/server` (`ca-cert.pem`, `server-cert.pem`, `server-key.pem`; the CA's key
    /// stays in `dir/ca`) and `dir/client` (`ca-cert.pem`). Fails with openssl's message.
    pub fn make(dir: &Path) -> Result<Certificates> {
        let (ca, server, client) = (dir.join("ca"), dir.join("server"), dir.join("client"));
        for d in [&ca, &server, &client] {
            std::fs::create_dir_all(d).with_context(|| format!("creating {}", d.display()))?;
        }
        make_ca(&ca)?;
        make_server(&ca, &server)?;
        std::fs::copy(ca.join("ca-cert.pem"), client.join("ca-cert.pem"))
            .context("copying the CA certificate for the client")?;
        Ok(Certificates { server, client })
    }

    /// The server's directory (`--tls-certificates` of nbdkit and vecio nbd, `dir=` of
    /// qemu's `tls-creds-x509`).
    pub fn server_dir(&self) -> &Path {
        &self.server
    }

    /// The client's directory (libnbd's `tls-certificates`): the CA's certificate.
    pub fn client_dir(&self) -> &Path {
        &self.client
    }
}

/// Why certificates cannot be made here, if they cannot: the openssl command is missing.
pub fn openssl_missing() -> Option<String> {
    find_program("openssl")
        .is_none()
        .then(|| "openssl is not installed (it makes the certificates)".to_string())
}

/// `ca/ca-cert.pem` and `ca/ca-key.pem`: a self-signed CA.
fn make_ca(ca: &Path) -> Result<()> {
    let mut c = openssl("req");
    c.args([
        "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2", "-keyout",
    ])
    .arg(ca.join("ca-key.pem"))
    .arg("-out")
    .arg(ca.join("ca-cert.pem"))
    .args(["-subj", "/CN=vecio bench CA"])
    .args(["-addext", "basicConstraints=critical,CA:TRUE"])
    .args(["-addext", "keyUsage=critical,keyCertSign,cRLSign"]);
    run(c)
}

/// `server/server-key.pem` and `server/server-cert.pem` signed by the CA in `ca`, and the
/// CA's certificate beside them.
fn make_server(ca: &Path, server: &Path) -> Result<()> {
    let csr = ca.join("server.csr");
    let ext = ca.join("server.ext");
    std::fs::write(
        &ext,
        "subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n\
         basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n",
    )
    .with_context(|| format!("writing {}", ext.display()))?;
    let mut req = openssl("req");
    req.args(["-newkey", "rsa:2048", "-nodes", "-keyout"])
        .arg(server.join("server-key.pem"))
        .arg("-out")
        .arg(&csr)
        .args(["-subj", "/CN=localhost"]);
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
        .arg(server.join("server-cert.pem"));
    run(sign)?;
    std::fs::copy(ca.join("ca-cert.pem"), server.join("ca-cert.pem"))
        .context("copying the CA certificate for the server")?;
    Ok(())
}

/// `openssl COMMAND`, to be given its arguments.
fn openssl(command: &str) -> Command {
    let mut c = Command::new("openssl");
    c.arg(command);
    c
}

/// Runs an openssl command; fails with the start of its stderr.
fn run(mut cmd: Command) -> Result<()> {
    let what = format!(
        "openssl {}",
        cmd.get_args().next().unwrap_or_default().to_string_lossy()
    );
    let out = cmd.output().with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        let err =
            crate::harness::server::diagnostics(&String::from_utf8_lossy(&out.stderr), 4, false);
        bail!("{what} failed ({}): {err}", out.status);
    }
    Ok(())
}
