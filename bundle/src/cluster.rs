//! Cluster identity: `<namespace>/<name>` of a SveltosCluster (spec section 1).

use std::fmt;
use std::str::FromStr;

/// The id of a managed cluster, as signed into every bundle for it.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ClusterId {
    namespace: String,
    name: String,
}

/// A cluster id that is not `<namespace>/<name>` of Kubernetes names.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("invalid cluster id {0:?}: expected NAMESPACE/NAME with lowercase Kubernetes names")]
pub struct BadClusterId(pub String);

impl ClusterId {
    pub fn new(namespace: &str, name: &str) -> Result<ClusterId, BadClusterId> {
        let bad = || BadClusterId(format!("{namespace}/{name}"));
        if !is_dns_label(namespace) || !is_dns_subdomain(name) {
            return Err(bad());
        }
        Ok(ClusterId { namespace: namespace.to_string(), name: name.to_string() })
    }
    pub fn namespace(&self) -> &str {
        &self.namespace
    }
    pub fn name(&self) -> &str {
        &self.name
    }
}

impl FromStr for ClusterId {
    type Err = BadClusterId;
    fn from_str(s: &str) -> Result<ClusterId, BadClusterId> {
        let (ns, name) = s.split_once('/').ok_or_else(|| BadClusterId(s.to_string()))?;
        ClusterId::new(ns, name)
    }
}

impl fmt::Display for ClusterId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.namespace, self.name)
    }
}

impl serde::Serialize for ClusterId {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(self)
    }
}

impl<'de> serde::Deserialize<'de> for ClusterId {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ClusterId, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        s.parse().map_err(serde::de::Error::custom)
    }
}

/// RFC 1123 label: what a namespace must be.
pub fn is_dns_label(s: &str) -> bool {
    !s.is_empty()
        && s.len() <= 63
        && s.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-')
}

/// RFC 1123 subdomain: what most object names must be.
pub fn is_dns_subdomain(s: &str) -> bool {
    !s.is_empty() && s.len() <= 253 && s.split('.').all(is_dns_label)
}

/// `[prefix/]name`: a label or annotation key, the prefix a DNS subdomain, the name as
/// [`is_label_name`].
pub fn is_label_key(key: &str) -> bool {
    match key.rsplit_once('/') {
        Some((prefix, name)) => is_dns_subdomain(prefix) && is_label_name(name),
        None => is_label_name(key),
    }
}

/// At most 63 characters of `[A-Za-z0-9._-]`, beginning and ending with a letter or digit.
pub fn is_label_name(s: &str) -> bool {
    let alnum = |c: Option<char>| c.is_some_and(|c| c.is_ascii_alphanumeric());
    s.len() <= 63 && alnum(s.chars().next()) && alnum(s.chars().last()) && s.chars().all(|c| c.is_ascii_alphanumeric() || "._-".contains(c))
}

/// A key or a family of keys: a label key, or a DNS-subdomain prefix and `/*` for every key
/// of that prefix (`pod-security.kubernetes.io/*`).
pub fn is_key_pattern(pattern: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(prefix) => is_dns_subdomain(prefix),
        None => is_label_key(pattern),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_rejects() {
        let id: ClusterId = "fleet/edge-1.eu".parse().unwrap();
        assert_eq!((id.namespace(), id.name()), ("fleet", "edge-1.eu"));
        assert_eq!(id.to_string(), "fleet/edge-1.eu");
        for bad in ["fleet", "/x", "x/", "Fleet/x", "a.b/x", "a/b/c", "a/-x", "a/x_y"] {
            assert!(bad.parse::<ClusterId>().is_err(), "{bad}");
        }
    }

    #[test]
    fn key_patterns_are_keys_or_prefixes() {
        for good in ["example.com/tier", "tier", "pod-security.kubernetes.io/*", "a.b/c_d.e"] {
            assert!(is_key_pattern(good), "{good}");
        }
        for bad in ["", "*", "/*", "Example.com/*", "example.com/", "a/b/c", "example.com/-x", "x*", "example.com/**"] {
            assert!(!is_key_pattern(bad), "{bad:?}");
        }
    }
}
