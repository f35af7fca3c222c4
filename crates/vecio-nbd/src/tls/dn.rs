//! The subject of a client certificate as a string: the identity `--tls-authz` rules match
//! and the refusal log names.
//!
//! RFC 4514's form, which GnuTLS (and so qemu's `authz-list`) prints: the relative names from
//! the most specific to the least (`CN=client-a,O=Example,C=GB`, the reverse of the order in
//! the certificate), the attribute names RFC 4514 defines (CN, L, ST, O, OU, C, STREET, DC,
//! UID), GnuTLS' `EMAIL` for the e-mail address, OpenSSL's short name or the dotted OID for
//! anything else; `,` `+` `"` `\` `<` `>` `;`, a leading `#` or space and a trailing space
//! escaped with a backslash.

use openssl::nid::Nid;
use openssl::x509::{X509NameEntryRef, X509};

/// The subject DN of the DER certificate `der`; `None` when it cannot be parsed.
pub(crate) fn subject(der: &[u8]) -> Option<String> {
    let cert = X509::from_der(der).ok()?;
    let entries: Vec<&X509NameEntryRef> = cert.subject_name().entries().collect();
    let parts: Vec<String> = entries.iter().rev().map(|e| entry(e)).collect();
    Some(parts.join(","))
}

fn entry(e: &X509NameEntryRef) -> String {
    let obj = e.object();
    let name = match obj.nid() {
        Nid::COMMONNAME => "CN".to_string(),
        Nid::LOCALITYNAME => "L".into(),
        Nid::STATEORPROVINCENAME => "ST".into(),
        Nid::ORGANIZATIONNAME => "O".into(),
        Nid::ORGANIZATIONALUNITNAME => "OU".into(),
        Nid::COUNTRYNAME => "C".into(),
        Nid::STREETADDRESS => "STREET".into(),
        Nid::DOMAINCOMPONENT => "DC".into(),
        Nid::USERID => "UID".into(),
        Nid::PKCS9_EMAILADDRESS => "EMAIL".into(),
        nid => nid
            .short_name()
            .map_or_else(|_| obj.to_string(), str::to_string),
    };
    let value = match e.data().to_string() {
        Ok(s) => escape(&s),
        Err(_) => escape(&String::from_utf8_lossy(e.data().as_slice())),
    };
    format!("{name}={value}")
}

/// RFC 4514 section 2.4 escaping of an attribute value.
fn escape(v: &str) -> String {
    let mut out = String::with_capacity(v.len());
    let last = v.chars().count().saturating_sub(1);
    for (i, c) in v.chars().enumerate() {
        let special = matches!(c, ',' | '+' | '"' | '\\' | '<' | '>' | ';')
            || (i == 0 && (c == '#' || c == ' '))
            || (i == last && c == ' ');
        if c == '\0' {
            out.push_str("\\00");
            continue;
        }
        if special {
            out.push('\\');
        }
        out.push(c);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use openssl::x509::X509NameBuilder;

    fn cert(fields: &[(&str, &str)]) -> Vec<u8> {
        let mut name = X509NameBuilder::new().unwrap();
        for (k, v) in fields {
            name.append_entry_by_text(k, v).unwrap();
        }
        let name = name.build();
        let key =
            openssl::pkey::PKey::from_rsa(openssl::rsa::Rsa::generate(1024).unwrap()).unwrap();
        let mut b = X509::builder().unwrap();
        b.set_version(2).unwrap();
        let serial = openssl::bn::BigNum::from_u32(1)
            .unwrap()
            .to_asn1_integer()
            .unwrap();
        b.set_serial_number(&serial).unwrap();
        let now = openssl::asn1::Asn1Time::days_from_now(0).unwrap();
        let later = openssl::asn1::Asn1Time::days_from_now(1).unwrap();
        b.set_not_before(&now).unwrap();
        b.set_not_after(&later).unwrap();
        b.set_subject_name(&name).unwrap();
        b.set_issuer_name(&name).unwrap();
        b.set_pubkey(&key).unwrap();
        b.sign(&key, openssl::hash::MessageDigest::sha256())
            .unwrap();
        b.build().to_der().unwrap()
    }

    #[test]
    fn most_specific_first_with_rfc4514_names_and_escapes() {
        let der = cert(&[
            ("C", "GB"),
            ("O", "Example, Inc"),
            ("emailAddress", "ops@example.org"),
            ("CN", " client+a "),
        ]);
        assert_eq!(
            subject(&der).unwrap(),
            "CN=\\ client\\+a\\ ,EMAIL=ops@example.org,O=Example\\, Inc,C=GB"
        );
        assert!(subject(b"not a certificate").is_none());
        assert_eq!(escape("#x"), "\\#x");
    }
}
