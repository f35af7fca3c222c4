//! Pre-shared key credentials: nbdkit's `--tls-psk` file and the OpenSSL context that serves it.
//!
//! The file has one `username:hexkey` line per client, as GnuTLS' `psktool` writes it and as
//! libnbd's `tls-psk-file` and qemu's `tls-creds-psk` read it. A client names its user in the
//! handshake; the server answers with that user's key, and the handshake fails unless the
//! client holds the same key.

use std::collections::HashMap;
use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use std::sync::OnceLock;

use openssl::ex_data::Index;
use openssl::ssl::{Ssl, SslContext, SslContextBuilder, SslMethod, SslOptions, SslVersion};

use crate::error::{Error, Result};

/// Longest key accepted: OpenSSL's `PSK_MAX_PSK_LEN` (512 bytes in OpenSSL 3, 256 before).
const MAX_KEY: usize = 256;

/// TLS 1.2 suites: PSK authentication with an AEAD cipher, forward-secret ones first.
const TLS12_CIPHERS: &str =
    "ECDHE-PSK+CHACHA20:DHE-PSK+AESGCM:DHE-PSK+CHACHA20:PSK+AESGCM:PSK+CHACHA20";

/// TLS 1.3 suites: an external PSK through OpenSSL's PSK callback needs a SHA-256 suite.
const TLS13_SUITES: &str = "TLS_AES_128_GCM_SHA256:TLS_CHACHA20_POLY1305_SHA256";

/// The keys of a PSK file, by user name.
pub(super) type Keys = HashMap<Vec<u8>, Vec<u8>>;

/// Parses a PSK file: `username:hexkey` lines; blank lines and `#` comments are skipped.
/// Any other line is an error naming the line (a typo must not silently lock a user out).
pub(super) fn parse(text: &str, path: &Path) -> Result<Keys> {
    let mut keys = Keys::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let bad = |why: &str| Error::Config(format!("{}:{}: {why}", path.display(), i + 1));
        let (user, hex) = line
            .rsplit_once(':')
            .ok_or_else(|| bad("expected username:hexkey"))?;
        if user.is_empty() {
            return Err(bad("empty user name"));
        }
        let key =
            decode_hex(hex).ok_or_else(|| bad("the key is not an even number of hex digits"))?;
        if key.is_empty() || key.len() > MAX_KEY {
            return Err(bad(&format!("the key must be 1 to {MAX_KEY} bytes")));
        }
        if keys.insert(user.as_bytes().to_vec(), key).is_some() {
            return Err(bad(&format!("user {user} is listed twice")));
        }
    }
    if keys.is_empty() {
        return Err(Error::Config(format!("{}: no keys", path.display())));
    }
    Ok(keys)
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

/// Reads `path` and builds the server context: TLS 1.2 and 1.3, PSK suites only, no session
/// tickets, the key looked up by the identity the client sends.
pub(super) fn server_context(path: &Path) -> Result<SslContext> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
    let keys = parse(&text, path)?;
    if let Ok(meta) = std::fs::metadata(path) {
        if meta.permissions().mode() & 0o077 != 0 {
            tracing::warn!(
                "{}: readable by other users; the keys in it should be private (chmod 600)",
                path.display()
            );
        }
    }
    build(keys).map_err(|e| Error::Config(format!("TLS-PSK: {e}")))
}

/// Where a session keeps the user name its key was found under: OpenSSL's own
/// `SSL_get_psk_identity` says nothing for a TLS 1.3 session resumed from the PSK callback.
pub(super) fn identity_index() -> Option<Index<Ssl, Vec<u8>>> {
    static INDEX: OnceLock<Option<Index<Ssl, Vec<u8>>>> = OnceLock::new();
    *INDEX.get_or_init(|| Ssl::new_ex_index().ok())
}

fn build(keys: Keys) -> std::result::Result<SslContext, openssl::error::ErrorStack> {
    let mut b = SslContextBuilder::new(SslMethod::tls_server())?;
    b.set_min_proto_version(Some(SslVersion::TLS1_2))?;
    b.set_cipher_list(TLS12_CIPHERS)?;
    b.set_ciphersuites(TLS13_SUITES)?;
    b.set_options(SslOptions::NO_RENEGOTIATION | SslOptions::CIPHER_SERVER_PREFERENCE);
    b.set_num_tickets(0)?;
    let index = identity_index();
    b.set_psk_server_callback(move |ssl, identity, out| {
        let Some(key) = identity.and_then(|id| keys.get(id)) else {
            tracing::info!(
                "TLS-PSK: unknown user {:?}",
                identity.map(String::from_utf8_lossy)
            );
            return Ok(0);
        };
        if key.len() > out.len() {
            return Ok(0);
        }
        out[..key.len()].copy_from_slice(key);
        if let (Some(i), Some(id)) = (index, identity) {
            ssl.set_ex_data(i, id.to_vec());
        }
        Ok(key.len())
    });
    Ok(b.build())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn psktool_lines_parse_and_typos_are_named() {
        let p = Path::new("k.psk");
        let keys = parse("alice:00ff10\n\n# note\nbob:ABCDEF01\n", p).unwrap();
        assert_eq!(keys[b"alice".as_slice()], vec![0x00, 0xff, 0x10]);
        assert_eq!(keys[b"bob".as_slice()], vec![0xab, 0xcd, 0xef, 0x01]);
        for (text, want) in [
            ("alice", "k.psk:1: expected username:hexkey"),
            ("alice:abc", "k.psk:1: the key is not"),
            ("x:00\nalice:zz", "k.psk:2: the key is not"),
            (":00", "empty user name"),
            ("alice:", "1 to 256 bytes"),
            ("a:00\na:01", "listed twice"),
            ("\n# only a comment\n", "k.psk: no keys"),
        ] {
            let e = parse(text, p).unwrap_err().to_string();
            assert!(e.contains(want), "{text:?}: {e}");
        }
    }
}
