//! Object metadata as both binaries write it, on their own objects (the Lease, the puller's
//! state and reports) and on the objects they generate (registration): name, namespace,
//! labels and annotations. Which labels and annotations an object carries is its writer's
//! business; this module only builds the metadata.

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;

/// The label naming the program that manages an object.
pub const MANAGED_BY: &str = "app.kubernetes.io/managed-by";

/// Metadata named `name` in `namespace` (none for a cluster-scoped object), with `labels`
/// and `annotations`; an empty map is left out.
pub fn object_meta<'a>(
    name: &str,
    namespace: Option<&str>,
    labels: impl IntoIterator<Item = (&'a str, &'a str)>,
    annotations: impl IntoIterator<Item = (&'a str, &'a str)>,
) -> ObjectMeta {
    ObjectMeta {
        name: Some(name.to_string()),
        namespace: namespace.map(str::to_string),
        labels: map(labels),
        annotations: map(annotations),
        ..ObjectMeta::default()
    }
}

fn map<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Option<BTreeMap<String, String>> {
    let map: BTreeMap<String, String> = pairs.into_iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
    (!map.is_empty()).then_some(map)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn leaves_out_empty_maps_and_a_missing_namespace() {
        let meta = object_meta("airlock-puller", None, [(MANAGED_BY, "airlock-puller")], []);
        assert_eq!(meta.name.as_deref(), Some("airlock-puller"));
        assert_eq!((meta.namespace, meta.annotations), (None, None));
        assert_eq!(meta.labels, Some(BTreeMap::from([(MANAGED_BY.to_string(), "airlock-puller".to_string())])));
        let meta = object_meta("lease", Some("airlock-system"), [], [("airlock.dev/cluster", "fleet/a")]);
        assert_eq!((meta.namespace.as_deref(), meta.labels), (Some("airlock-system"), None));
        assert_eq!(meta.annotations.unwrap()["airlock.dev/cluster"], "fleet/a");
    }
}
