//! `--tls-authz`: which TLS clients may go on once the handshake has proved who they are, as
//! qemu's `authz-list` and `authz-listfile` objects decide it.
//!
//! The identity is the distinguished name of the client certificate's subject in RFC 4514
//! form, most specific part first (`CN=client-a,O=Example,C=GB`, as GnuTLS and so qemu print
//! it), or the user name of a pre-shared key. Rules are looked at in order; the first that
//! matches decides (allow or deny); when none does, the list's own policy does (deny unless
//! the list says otherwise). A rule matches exactly, or as a shell glob (`fnmatch(3)` without
//! flags, as qemu's `format=glob`: `*` also matches `,` and `=`).

use std::ffi::CString;
use std::path::Path;

use serde::Deserialize;

use crate::error::{Error, Result};

/// What a rule, or a list when no rule matched, decides.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Policy {
    /// The client goes on.
    Allow,
    /// The client is refused.
    #[default]
    Deny,
}

/// How a rule's pattern is compared with an identity.
#[derive(Copy, Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum MatchFormat {
    /// The whole identity, byte for byte.
    #[default]
    Exact,
    /// A shell glob (`fnmatch(3)`).
    Glob,
}

/// One rule of an [`Authz`] list (qemu's `QAuthZListRule`).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct AuthzRule {
    /// The identity, or the glob, this rule is about.
    #[serde(rename = "match")]
    pub pattern: String,
    /// What a match decides.
    pub policy: Policy,
    /// Exact (the default) or glob.
    #[serde(default)]
    pub format: MatchFormat,
}

impl AuthzRule {
    fn matches(&self, identity: &str) -> bool {
        match self.format {
            MatchFormat::Exact => self.pattern == identity,
            MatchFormat::Glob => glob(&self.pattern, identity),
        }
    }
}

/// An ordered list of rules and the policy for identities no rule matches (qemu's
/// `authz-list`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Authz {
    /// The rules, first match wins.
    #[serde(default)]
    pub rules: Vec<AuthzRule>,
    /// What happens to an identity no rule matches.
    #[serde(default)]
    pub policy: Policy,
}

impl Authz {
    /// A list that allows exactly `identities` and denies every other: what repeated
    /// `--tls-authz` options make. An identity written `glob:PATTERN` is a glob.
    pub fn allowing<I, S>(identities: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        let rules = identities
            .into_iter()
            .map(|s| {
                let s: String = s.into();
                let (pattern, format) = match s.strip_prefix("glob:") {
                    Some(p) => (p.to_string(), MatchFormat::Glob),
                    None => (s, MatchFormat::Exact),
                };
                AuthzRule {
                    pattern,
                    policy: Policy::Allow,
                    format,
                }
            })
            .collect();
        Authz {
            rules,
            policy: Policy::Deny,
        }
    }

    /// Parses qemu's `authz-listfile` JSON: `{"policy": "deny", "rules": [{"match":
    /// "CN=client-a,O=Example", "policy": "allow", "format": "exact"}]}`.
    pub fn from_json(text: &str) -> std::result::Result<Self, String> {
        serde_json::from_str(text).map_err(|e| e.to_string())
    }

    /// Reads an `authz-listfile` JSON file (once, at start: a changed file is read again only
    /// when the server starts again).
    pub fn load(path: &Path) -> Result<Self> {
        let text = std::fs::read_to_string(path)
            .map_err(|e| Error::Config(format!("{}: {e}", path.display())))?;
        Self::from_json(&text).map_err(|e| Error::Config(format!("{}: {e}", path.display())))
    }

    /// True when `identity` may go on.
    pub fn allows(&self, identity: &str) -> bool {
        let decided = self.rules.iter().find(|r| r.matches(identity));
        decided.map_or(self.policy, |r| r.policy) == Policy::Allow
    }
}

/// `fnmatch(3)` with no flags; a pattern or name with a NUL byte matches nothing.
fn glob(pattern: &str, name: &str) -> bool {
    let (Ok(p), Ok(n)) = (CString::new(pattern), CString::new(name)) else {
        return false;
    };
    // SAFETY: both are NUL-terminated strings that live across the call; fnmatch only reads.
    unsafe { libc::fnmatch(p.as_ptr(), n.as_ptr(), 0) == 0 }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_matching_rule_decides_then_the_list_policy() {
        let a = Authz::from_json(
            r#"{"policy": "allow", "rules": [
                {"match": "CN=mallory,O=Example", "policy": "deny"},
                {"match": "CN=*,O=Example", "policy": "allow", "format": "glob"},
                {"match": "CN=*", "policy": "deny", "format": "glob"}]}"#,
        )
        .unwrap();
        assert!(!a.allows("CN=mallory,O=Example"));
        assert!(a.allows("CN=alice,O=Example"));
        assert!(!a.allows("CN=alice,O=Other"));
        assert!(a.allows("UID=7"));
        // The default list policy is deny.
        let a = Authz::from_json(r#"{"rules": [{"match": "alice", "policy": "allow"}]}"#).unwrap();
        assert!(a.allows("alice") && !a.allows("bob") && !a.allows("alice2"));
        assert!(Authz::from_json(r#"{"rules": [{"match": "x", "policy": "maybe"}]}"#).is_err());
        assert!(Authz::from_json(r#"{"rules": [], "refresh": true}"#).is_err());
    }

    #[test]
    fn command_line_lists_allow_what_they_name() {
        let a = Authz::allowing(["CN=client-a,O=vecio tests", "glob:CN=ops-*,O=vecio tests"]);
        assert!(a.allows("CN=client-a,O=vecio tests"));
        assert!(a.allows("CN=ops-7,O=vecio tests"));
        assert!(!a.allows("CN=client-b,O=vecio tests"));
        assert!(!a.allows("CN=client-a,O=vecio tests,C=GB"));
        assert!(!glob("a\0b", "a"));
    }
}
