//! What a document that does not parse seems to be, read off its lines: the top-level
//! `apiVersion:` and `kind:`, and `name:` and `namespace:` under `metadata:` (block or
//! flow style). Good enough to tell which profile, cluster or ConfigMap a typo broke, so
//! that only what it touches fails; a document it cannot place touches [`Touches::Unknown`].

use airlock_bundle::ClusterId;

use crate::sources::broken::Touches;
use crate::sources::key::ObjectKey;
use crate::sources::model::{CLUSTER_GROUP, PROFILE_GROUP, ProfileKind};

/// What a document says it is; empty strings where it does not say.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Identity {
    pub api_version: String,
    pub kind: String,
    pub namespace: String,
    pub name: String,
}

/// What `piece`'s lines say it is.
pub fn identity(piece: &str) -> Identity {
    let mut id = Identity::default();
    let mut in_metadata = false;
    for line in piece.lines() {
        let top = !line.starts_with([' ', '\t']);
        let trimmed = line.trim();
        if top {
            in_metadata = false;
            if let Some(v) = value_of(trimmed, "apiVersion") {
                id.api_version = v;
            } else if let Some(v) = value_of(trimmed, "kind") {
                id.kind = v;
            } else if let Some(rest) = trimmed.strip_prefix("metadata:") {
                in_metadata = true;
                flow_fields(rest, &mut id);
            }
        } else if in_metadata {
            if let Some(v) = value_of(trimmed, "name").filter(|_| id.name.is_empty()) {
                id.name = v;
            } else if let Some(v) = value_of(trimmed, "namespace").filter(|_| id.namespace.is_empty()) {
                id.namespace = v;
            }
        }
    }
    id
}

/// `name` and `namespace` of a flow map such as `{name: a, namespace: b}`.
fn flow_fields(rest: &str, id: &mut Identity) {
    let inner = rest.trim().trim_start_matches('{').trim_end_matches('}');
    for pair in inner.split(',') {
        let pair = pair.trim();
        if let Some(v) = value_of(pair, "name") {
            id.name = v;
        } else if let Some(v) = value_of(pair, "namespace") {
            id.namespace = v;
        }
    }
}

/// The scalar of `key: value` on one line, unquoted; `None` for another key or no scalar.
fn value_of(line: &str, key: &str) -> Option<String> {
    let rest = line.strip_prefix(key)?.strip_prefix(':')?;
    let value = rest.split(" #").next().unwrap_or_default().trim().trim_matches(|c| c == '"' || c == '\'');
    (!value.is_empty() && !value.starts_with(['{', '[', '|', '>'])).then(|| value.to_string())
}

/// What an object of this identity touches when it cannot be used.
pub fn touches(id: &Identity) -> Touches {
    if id.kind.is_empty() || id.name.is_empty() {
        return Touches::Unknown;
    }
    let key = ObjectKey::new(&id.api_version, &id.kind, &id.namespace, &id.name);
    match (key.group.as_str(), key.kind.as_str()) {
        (PROFILE_GROUP, "ClusterProfile") => {
            let kind = ProfileKind::ClusterProfile;
            Touches::Profile { part: kind.part_name(&id.name), display: kind.display(&id.name) }
        }
        (PROFILE_GROUP, "Profile") if !id.namespace.is_empty() => {
            let kind = ProfileKind::Profile { namespace: id.namespace.clone() };
            Touches::Profile { part: kind.part_name(&id.name), display: kind.display(&id.name) }
        }
        (PROFILE_GROUP, _) => Touches::Unknown,
        (CLUSTER_GROUP, "SveltosCluster") => ClusterId::new(&id.namespace, &id.name).map_or(Touches::Unknown, Touches::Cluster),
        _ => Touches::Object(key),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_block_and_flow_metadata() {
        let pieces = [
            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: \"a\"\n  labels: {x: y}\n  namespace: ns\n",
            "kind: ClusterProfile\napiVersion: config.projectsveltos.io/v1beta1\nmetadata: {name: web}\nspec: [\n",
        ];
        let cm = identity(pieces[0]);
        assert_eq!((cm.kind.as_str(), cm.namespace.as_str(), cm.name.as_str()), ("ConfigMap", "ns", "a"));
        assert_eq!(touches(&cm), Touches::Object(ObjectKey::new("v1", "ConfigMap", "ns", "a")));
        assert_eq!(
            touches(&identity(pieces[1])),
            Touches::Profile { part: "ClusterProfile.web".into(), display: "ClusterProfile/web".into() }
        );
        assert_eq!(touches(&identity("kind: ConfigMap\nmetadata:\n  labels: {}\n")), Touches::Unknown);
    }
}
