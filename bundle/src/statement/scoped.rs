//! `clusterScoped` (spec 5.2): the cluster-scoped objects a bundle may hold on a cluster
//! with watch-namespaces, besides the Namespaces of the list. Each is named exactly, by API
//! group, kind and name; the text form `Kind[.group]/name` is how operators write them.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

/// One entry: a cluster-scoped object by API group (empty for the core group), kind and
/// exact name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ClusterScopedObject {
    pub group: String,
    pub kind: String,
    pub name: String,
}

impl ClusterScopedObject {
    /// A group is empty or a DNS subdomain; a kind is 1 to 63 ASCII letters and digits
    /// starting with an upper-case letter; a name is 1 to 253 bytes, not `.` or `..`, without
    /// `/`, `%`, `,` or control characters (RBAC names may hold `:`).
    pub fn is_well_formed(&self) -> bool {
        let group = self.group.is_empty() || crate::cluster::is_dns_subdomain(&self.group);
        let kind = self.kind.len() <= 63
            && self.kind.starts_with(|c: char| c.is_ascii_uppercase())
            && self.kind.chars().all(|c| c.is_ascii_alphanumeric());
        let name = &self.name;
        let name = !name.is_empty()
            && name.len() <= 253
            && name != "."
            && name != ".."
            && !name.contains(['/', '%', ','])
            && !name.chars().any(char::is_control);
        group && kind && name
    }
}

impl fmt::Display for ClusterScopedObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.group.as_str() {
            "" => write!(f, "{}/{}", self.kind, self.name),
            group => write!(f, "{}.{group}/{}", self.kind, self.name),
        }
    }
}

impl FromStr for ClusterScopedObject {
    type Err = String;

    /// `Kind[.group]/name`: `ClusterRole.rbac.authorization.k8s.io/view-widgets`, `Namespace/extra`.
    fn from_str(text: &str) -> Result<Self, String> {
        let bad = || format!("{text:?} is not Kind[.group]/name");
        let (kind_group, name) = text.split_once('/').ok_or_else(bad)?;
        let (kind, group) = kind_group.split_once('.').unwrap_or((kind_group, ""));
        let entry = ClusterScopedObject { group: group.into(), kind: kind.into(), name: name.into() };
        if !entry.is_well_formed() || (kind_group.contains('.') && group.is_empty()) {
            return Err(bad());
        }
        Ok(entry)
    }
}

/// A comma-separated list of entries, blanks around each ignored, in the signed order:
/// sorted, without duplicates.
pub fn parse_cluster_scoped(text: &str) -> Result<Vec<ClusterScopedObject>, String> {
    let mut entries = text.split(',').map(str::trim).filter(|e| !e.is_empty()).map(str::parse).collect::<Result<Vec<_>, _>>()?;
    entries.sort();
    entries.dedup();
    Ok(entries)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_the_text_form_sorted_and_deduplicated() {
        let list = parse_cluster_scoped(" Namespace/extra, ClusterRole.rbac.authorization.k8s.io/system:view ,,Namespace/extra").unwrap();
        let shown: Vec<String> = list.iter().map(ToString::to_string).collect();
        assert_eq!(shown, ["Namespace/extra", "ClusterRole.rbac.authorization.k8s.io/system:view"]);
        assert_eq!(
            (list[1].group.as_str(), list[1].kind.as_str(), list[1].name.as_str()),
            ("rbac.authorization.k8s.io", "ClusterRole", "system:view")
        );
        assert_eq!(parse_cluster_scoped("").unwrap(), []);
    }

    #[test]
    fn refuses_what_is_not_kind_group_name() {
        for bad in [
            "Namespace",
            "namespace/x",
            "Namespace./x",
            "ClusterRole.Bad_Group/x",
            "Namespace/",
            "Namespace/a/b",
            "Namespace/..",
            "Kind-X/y",
        ] {
            assert_eq!(bad.parse::<ClusterScopedObject>(), Err(format!("{bad:?} is not Kind[.group]/name")), "{bad}");
        }
    }
}
