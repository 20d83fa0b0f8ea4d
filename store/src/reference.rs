//! Store references (spec section 9 table): parsing and writing them. Opening the store a
//! reference names is `open`'s.

use std::fmt;
use std::path::PathBuf;
use std::str::FromStr;

use crate::error::StoreError;
use crate::userinfo::redact;
use airlock_bundle::cluster::ClusterId;

/// What a Git reference's URL path and `#BRANCH` may hold to name one repository or branch
/// per cluster (spec 9.5.1): replaced by the cluster's namespace and name.
const PLACEHOLDERS: [&str; 2] = ["{namespace}", "{name}"];

/// A parsed store reference.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoreRef {
    /// `oci://HOST[:PORT]/PREFIX` (HTTPS) or `oci+http://HOST:PORT/PREFIX`.
    OciRegistry { host: String, prefix: String, plain_http: bool },
    /// `oci-layout:PATH`
    OciLayout(PathBuf),
    /// `oci-archive:PATH`
    OciArchive(PathBuf),
    /// `git+file://`, `git+http://`, `git+https://`, with `#BRANCH` (default `main`); either
    /// may hold the placeholders `{namespace}` and `{name}` (per-cluster layout).
    Git { url: String, branch: String },
}

impl FromStr for StoreRef {
    type Err = StoreError;
    fn from_str(s: &str) -> Result<StoreRef, StoreError> {
        let bad = |message: &str| StoreError::Config { store: redact(s).0, message: message.to_string() };
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
            check_git_placeholders(url, branch).map_err(|m| bad(&m))?;
            return Ok(StoreRef::Git { url: url.to_string(), branch: branch.to_string() });
        }
        Err(bad("unknown store; expected oci://, oci+http://, oci-layout:, oci-archive: or git+…"))
    }
}

impl StoreRef {
    /// Whether the reference names one Git repository or branch per cluster (spec 9.5.1).
    pub fn is_per_cluster(&self) -> bool {
        matches!(self, StoreRef::Git { url, branch } if has_placeholder(url) || has_placeholder(branch))
    }

    /// The reference of `cluster`'s own store: the placeholders replaced by its namespace
    /// and name. A reference without placeholders is every cluster's, unchanged. Refused
    /// when the cluster's name makes an invalid branch (`{name}.lock` of `x.lock`).
    pub fn for_cluster(&self, cluster: &ClusterId) -> Result<StoreRef, StoreError> {
        let StoreRef::Git { url, branch } = self else { return Ok(self.clone()) };
        let expanded = expand(branch, cluster);
        if !git2::Reference::is_valid_name(&format!("refs/heads/{expanded}")) {
            let message = format!("#{expanded}, the branch of {cluster}, is not a valid Git branch name");
            return Err(StoreError::Config { store: self.shown(), message });
        }
        Ok(StoreRef::Git { url: expand(url, cluster), branch: expanded })
    }
}

/// `template` with the placeholders replaced by `cluster`'s namespace and name.
pub(crate) fn expand(template: &str, cluster: &ClusterId) -> String {
    template.replace(PLACEHOLDERS[0], cluster.namespace()).replace(PLACEHOLDERS[1], cluster.name())
}

pub(crate) fn has_placeholder(s: &str) -> bool {
    PLACEHOLDERS.iter().any(|p| s.contains(p))
}

/// Placeholders are known ones, in the URL's path only, and the branch they make is valid.
fn check_git_placeholders(url: &str, branch: &str) -> Result<(), String> {
    for (part, text) in [("URL", url), ("#branch", branch)] {
        let rest = PLACEHOLDERS.iter().fold(text.to_string(), |s, p| s.replace(p, ""));
        if rest.contains(['{', '}']) {
            return Err(format!("unknown placeholder in the {part}; a Git store reference takes {{namespace}} and {{name}} only"));
        }
    }
    let authority = url.split_once("://").map_or(url, |(_, rest)| rest.split('/').next().unwrap_or_default());
    if has_placeholder(authority) {
        return Err("a placeholder in the host; {namespace} and {name} belong in the URL path or the #branch".into());
    }
    // Every cluster's branch is this shape: a cluster name of a dot-free DNS label stands in.
    let sample = expand(branch, &ClusterId::new("namespace", "name").expect("a valid cluster id"));
    if !git2::Reference::is_valid_name(&format!("refs/heads/{sample}")) {
        return Err(format!("#{branch}: not a valid Git branch name once expanded (as {sample:?})"));
    }
    Ok(())
}

impl StoreRef {
    /// How messages and logs name it: a Git URL without its `user:password@`, which
    /// `Display` keeps because registration writes the reference out whole.
    pub fn shown(&self) -> String {
        redact(&self.to_string()).0
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
    fn shown_names_a_git_reference_without_its_credentials() {
        let r: StoreRef = "git+http://ops:s3cret@127.0.0.1:8418/fleet.git#main".parse().unwrap();
        assert_eq!(r.shown(), "git+http://127.0.0.1:8418/fleet.git#main");
        assert!(r.to_string().contains("ops:s3cret@"), "Display keeps it, for the registration YAML");
        let oci: StoreRef = "oci://reg.example/x".parse().unwrap();
        assert_eq!(oci.shown(), oci.to_string());
    }

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

    #[test]
    fn per_cluster_git_references_expand_for_their_cluster() {
        let cluster: ClusterId = "fleet/edge-1".parse().unwrap();
        let repo: StoreRef = "git+http://127.0.0.1:8418/fleet/{namespace}/{name}.git".parse().unwrap();
        assert!(repo.is_per_cluster());
        assert_eq!(
            repo.for_cluster(&cluster).unwrap(),
            StoreRef::Git { url: "http://127.0.0.1:8418/fleet/fleet/edge-1.git".into(), branch: "main".into() }
        );
        let branch: StoreRef = "git+file:///srv/fleet.git#airlock/{namespace}/{name}".parse().unwrap();
        assert_eq!(branch.to_string(), "git+file:///srv/fleet.git#airlock/{namespace}/{name}");
        assert_eq!(
            branch.for_cluster(&cluster).unwrap(),
            StoreRef::Git { url: "file:///srv/fleet.git".into(), branch: "airlock/fleet/edge-1".into() }
        );
        let shared: StoreRef = "git+http://h/fleet.git#prod".parse().unwrap();
        assert!(!shared.is_per_cluster());
        assert_eq!(shared.for_cluster(&cluster).unwrap(), shared);
        let dotted: StoreRef = "git+http://h/fleet.git#airlock/{name}".parse().unwrap();
        let err = dotted.for_cluster(&"fleet/edge.lock".parse().unwrap()).unwrap_err();
        assert!(
            matches!(&err, StoreError::Config { store, message }
            if store == "git+http://h/fleet.git#airlock/{name}" && message.contains("airlock/edge.lock")),
            "{err:?}"
        );
        assert!(!"oci-layout:/srv/{name}".parse::<StoreRef>().unwrap().is_per_cluster(), "only Git references have placeholders");
    }

    #[test]
    fn rejects_bad_placeholders_naming_the_reference() {
        for (bad, why) in [
            ("git+http://h/{cluster}.git", "unknown placeholder"),
            ("git+http://h/x.git#{namespace", "unknown placeholder"),
            ("git+http://{namespace}.git.example/x.git", "in the host"),
            ("git+http://{name}@h/x.git", "in the host"),
            ("git+http://h/x.git#{name}..x", "not a valid Git branch name"),
            ("git+http://h/x.git#{name}.lock", "not a valid Git branch name"),
        ] {
            match bad.parse::<StoreRef>() {
                Err(StoreError::Config { store, message }) => {
                    // User info is left out of messages as a credential would be.
                    assert_eq!(store, bad.replace("{name}@", ""));
                    assert!(message.contains(why), "{bad}: {message}");
                }
                other => panic!("{bad}: {other:?}"),
            }
        }
    }

    #[test]
    fn errors_name_the_reference_without_its_credentials() {
        for (bad, named) in [
            ("git+http://alice:s3cret@h/x.git?q#main", "git+http://h/x.git?q#main"),
            ("git+ftp://alice:s3cret@h/x.git", "git+ftp://h/x.git"),
            ("oci://alice:s3cret@reg/Upper", "oci://reg/Upper"),
        ] {
            match bad.parse::<StoreRef>() {
                Err(StoreError::Config { store, .. }) => assert_eq!(store, named),
                other => panic!("{bad}: {other:?}"),
            }
        }
        let template: StoreRef = "git+http://alice:s3cret@h/fleet.git#airlock/{name}".parse().unwrap();
        match template.for_cluster(&"fleet/edge.lock".parse().unwrap()) {
            Err(StoreError::Config { store, .. }) => assert_eq!(store, "git+http://h/fleet.git#airlock/{name}"),
            other => panic!("{other:?}"),
        }
    }
}
