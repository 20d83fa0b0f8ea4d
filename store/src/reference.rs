//! Store references (spec section 9 table): parsing and writing them. Opening the store a
//! reference names is `open`'s.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::StoreError;

/// A parsed store reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreRef {
    /// `oci://HOST[:PORT]/PREFIX` (HTTPS) or `oci+http://HOST:PORT/PREFIX`.
    OciRegistry { host: String, prefix: String, plain_http: bool },
    /// `oci-layout:PATH`
    OciLayout(PathBuf),
    /// `oci-archive:PATH`
    OciArchive(PathBuf),
    /// `git+file://`, `git+http://`, `git+https://`, with `#BRANCH` (default `main`).
    Git { url: String, branch: String },
}

impl FromStr for StoreRef {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<StoreRef, StoreError> {
        let bad = |message: &str| StoreError::Config { store: s.to_string(), message: message.to_string() };
        let path = |p: &str| if p.is_empty() { Err(bad("empty path")) } else { Ok(PathBuf::from(p)) };
        if let Some(p) = s.strip_prefix("oci-layout:") {
            return Ok(StoreRef::OciLayout(path(p)?));
        }
        if let Some(p) = s.strip_prefix("oci-archive:") {
            return Ok(StoreRef::OciArchive(path(p)?));
        }
        for (scheme, plain_http) in [("oci://", false), ("oci+http://", true)] {
            if let Some(rest) = s.strip_prefix(scheme) {
                let (host, prefix) = rest.split_once('/').unwrap_or((rest, ""));
                let prefix = prefix.trim_end_matches('/');
                if host.is_empty() {
                    return Err(bad("no registry host"));
                }
                let ok = prefix
                    .split('/')
                    .all(|c| !c.is_empty() && c.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b)));
                if !prefix.is_empty() && !ok {
                    return Err(bad("repository prefix must be lowercase path components"));
                }
                return Ok(StoreRef::OciRegistry { host: host.to_string(), prefix: prefix.to_string(), plain_http });
            }
        }
        if let Some(url) = s.strip_prefix("git+") {
            if !["file://", "http://", "https://"].iter().any(|p| url.starts_with(p)) {
                return Err(bad("git stores are git+file://, git+http:// or git+https://"));
            }
            let (url, branch) = url.split_once('#').unwrap_or((url, "main"));
            if branch.is_empty() || url.contains('?') {
                return Err(bad("empty #branch, or a query string in the URL"));
            }
            return Ok(StoreRef::Git { url: url.to_string(), branch: branch.to_string() });
        }
        Err(bad("unknown store; expected oci://, oci+http://, oci-layout:, oci-archive: or git+…"))
    }
}

impl fmt::Display for StoreRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            StoreRef::OciRegistry { host, prefix, plain_http } => {
                write!(f, "{}{host}/{prefix}", if *plain_http { "oci+http://" } else { "oci://" })
            }
            StoreRef::OciLayout(p) => write!(f, "oci-layout:{}", p.display()),
            StoreRef::OciArchive(p) => write!(f, "oci-archive:{}", p.display()),
            StoreRef::Git { url, branch } => write!(f, "git+{url}#{branch}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind() {
        let r: StoreRef = "oci+http://127.0.0.1:5000/airlock/bundles".parse().unwrap();
        assert_eq!(r, StoreRef::OciRegistry { host: "127.0.0.1:5000".into(), prefix: "airlock/bundles".into(), plain_http: true });
        assert_eq!(r.to_string(), "oci+http://127.0.0.1:5000/airlock/bundles");
        assert!(matches!("oci://reg.example/x".parse(), Ok(StoreRef::OciRegistry { plain_http: false, .. })));
        assert_eq!("oci-layout:/tmp/l".parse::<StoreRef>().unwrap(), StoreRef::OciLayout("/tmp/l".into()));
        assert_eq!("oci-archive:a.tar".parse::<StoreRef>().unwrap(), StoreRef::OciArchive("a.tar".into()));
        assert_eq!(
            "git+http://127.0.0.1:8418/b.git#prod".parse::<StoreRef>().unwrap(),
            StoreRef::Git { url: "http://127.0.0.1:8418/b.git".into(), branch: "prod".into() }
        );
        assert_eq!(
            "git+file:///srv/b.git".parse::<StoreRef>().unwrap(),
            StoreRef::Git { url: "file:///srv/b.git".into(), branch: "main".into() }
        );
    }

    #[test]
    fn rejects_unknown_and_malformed() {
        for bad in ["s3://x", "oci://", "oci://h/UPPER", "git+ssh://h/x", "git+http://h/x#", "oci-layout:", "/tmp/x"] {
            assert!(matches!(bad.parse::<StoreRef>(), Err(StoreError::Config { .. })), "{bad}");
        }
    }
}
