//! What an `EventSource` found on the cluster (spec 14.3 `evaluations[].collected`): the
//! objects that make its event, by name, and with `collectResources` whole. Bounded, so a
//! busy cluster cannot swell the signed report: at most [`MAX_MATCHING`] objects and
//! [`MAX_COLLECTED_BYTES`] of collected JSON per definition, and
//! [`MAX_REPORT_COLLECTED_BYTES`] over one report. A collected `Secret` goes without
//! `data` and `stringData`, and no collected object keeps `metadata.managedFields`.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::seal::is_secret;

/// Matching objects one definition may report: an event is a handful of objects, not an
/// inventory.
pub const MAX_MATCHING: usize = 256;
/// Compact JSON of the objects one definition collects, at most.
pub const MAX_COLLECTED_BYTES: usize = 256 * 1024;
/// Compact JSON of the objects every definition of one report collects, at most: half
/// of the report envelope limit.
pub const MAX_REPORT_COLLECTED_BYTES: usize = 2 * 1024 * 1024;

/// The objects that make one event.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Collected {
    /// Each matching object by name, in the order the selectors listed them.
    pub matching_resources: Vec<ObjectRef>,
    /// With `collectResources`: the same objects whole, in the same order.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub resources: Vec<Value>,
}

/// An object by name, as Sveltos's EventReport lists it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ObjectRef {
    pub api_version: String,
    pub kind: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub namespace: Option<String>,
    pub name: String,
}

impl ObjectRef {
    pub fn of(object: &Value) -> ObjectRef {
        let text = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default().to_string();
        let namespace = Some(text("/metadata/namespace")).filter(|n| !n.is_empty());
        ObjectRef { api_version: text("/apiVersion"), kind: text("/kind"), namespace, name: text("/metadata/name") }
    }
}

impl Collected {
    /// The event made of `objects`, whole when `collect`; an error when it is beyond the
    /// bounds.
    pub fn of(objects: &[Value], collect: bool) -> Result<Collected, String> {
        let collected = Collected {
            matching_resources: objects.iter().map(ObjectRef::of).collect(),
            resources: if collect { objects.iter().map(withheld).collect() } else { Vec::new() },
        };
        collected.check()?;
        Ok(collected)
    }

    /// Whether it is within the bounds, as its reader checks too.
    pub fn check(&self) -> Result<(), String> {
        if self.matching_resources.len() > MAX_MATCHING {
            return Err(format!("{} objects match, at most {MAX_MATCHING} are reported", self.matching_resources.len()));
        }
        if !self.resources.is_empty() && self.resources.len() != self.matching_resources.len() {
            return Err(format!("{} objects collected for {} matching", self.resources.len(), self.matching_resources.len()));
        }
        let bytes = self.collected_bytes();
        if bytes > MAX_COLLECTED_BYTES {
            return Err(format!("the objects collected take {bytes} bytes, at most {MAX_COLLECTED_BYTES}"));
        }
        if let Some(secret) = self.resources.iter().find(|r| is_secret(r) && (r.get("data").is_some() || r.get("stringData").is_some())) {
            return Err(format!("the Secret {} is collected with its data", ObjectRef::of(secret).name));
        }
        Ok(())
    }

    /// Size of the compact JSON of the collected objects.
    pub fn collected_bytes(&self) -> usize {
        self.resources.iter().map(|r| serde_json::to_vec(r).map_or(0, |b| b.len())).sum()
    }
}

/// `object` as a report may carry it: a Secret without its data, and no object with its
/// `managedFields`, which are the API server's bookkeeping.
pub fn withheld(object: &Value) -> Value {
    let mut object = object.clone();
    if let Some(map) = object.as_object_mut() {
        if is_secret(&Value::Object(map.clone())) {
            map.remove("data");
            map.remove("stringData");
        }
        if let Some(metadata) = map.get_mut("metadata").and_then(Value::as_object_mut) {
            metadata.remove("managedFields");
        }
    }
    object
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn service(name: &str) -> Value {
        json!({"apiVersion": "v1", "kind": "Service", "metadata": {"namespace": "web", "name": name, "managedFields": [{}]}, "spec": {"type": "LoadBalancer"}})
    }

    #[test]
    fn names_every_matching_object_and_collects_them_only_when_asked() {
        let named = Collected::of(&[service("a")], false).unwrap();
        let expected = ObjectRef { api_version: "v1".into(), kind: "Service".into(), namespace: Some("web".into()), name: "a".into() };
        assert_eq!((named.matching_resources, named.resources.len()), (vec![expected], 0));
        let whole = Collected::of(&[service("a")], true).unwrap();
        assert_eq!(whole.resources[0]["spec"]["type"], "LoadBalancer");
        assert!(whole.resources[0]["metadata"].get("managedFields").is_none());
        let json = serde_json::to_string(
            &Collected::of(&[json!({"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}})], false).unwrap(),
        );
        assert_eq!(json.unwrap(), r#"{"matchingResources":[{"apiVersion":"v1","kind":"Node","name":"n"}]}"#);
    }

    #[test]
    fn a_collected_secret_goes_without_its_data() {
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "a", "name": "s"}, "data": {"k": "c2VjcmV0"}, "stringData": {"k": "secret"}, "type": "Opaque"});
        let collected = Collected::of(std::slice::from_ref(&secret), true).unwrap();
        assert_eq!(
            collected.resources[0],
            json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"namespace": "a", "name": "s"}, "type": "Opaque"})
        );
        let carried = Collected { matching_resources: vec![ObjectRef::of(&secret)], resources: vec![secret] };
        assert!(carried.check().unwrap_err().contains("Secret s is collected with its data"));
    }

    #[test]
    fn rejects_too_many_objects_or_too_many_bytes() {
        let many: Vec<Value> = (0..=MAX_MATCHING).map(|i| service(&format!("s{i}"))).collect();
        assert!(Collected::of(&many, false).unwrap_err().contains("257 objects match, at most 256"));
        assert!(Collected::of(&many[..MAX_MATCHING], false).is_ok());
        let big =
            json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "big"}, "data": {"k": "x".repeat(MAX_COLLECTED_BYTES)}});
        assert!(Collected::of(std::slice::from_ref(&big), false).is_ok(), "named only, the size does not count");
        assert!(Collected::of(&[big], true).unwrap_err().contains("at most 262144"));
    }
}
