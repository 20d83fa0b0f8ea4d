//! Server quirks handled before applying, so users never see them: list-map key defaults
//! and quantities that Kubernetes 1.20's server-side apply refuses, and Secret `stringData`.
//!
//! 1.20 rejects a Service port or a container port without `protocol` with "associative
//! list with keys has an element that omits key field" (`protocol` is part of the list's
//! key and its default is applied only after the merge). It also rejects a quantity
//! written as a YAML number (`cpu: 0.5`) with "expected string" where `kubectl apply`
//! accepts it; such numbers become strings. A CRD's `status` (charts of that era ship
//! CRDs with one) is the API server's to write; applied, 1.20 records its fields for the
//! applier, and every later apply conflicts with the server's own status writes, so it is
//! left out. `stringData` is write-only: it
//! never appears on the live object, so a drift check would see it missing forever; it is
//! folded into `data`, which is what the API server does with it anyway.
//!
//! Only the manifest changes here; nothing is validated (the API server does that).

use base64::Engine;
use serde_json::Value;

use crate::engine::model::object::ObjectId;

/// The protocol Kubernetes defaults ports to.
const DEFAULT_PROTOCOL: &str = "TCP";

/// Fills the defaults `id`'s kind needs, in place.
pub(crate) fn fill(id: &ObjectId, manifest: &mut Value) {
    match (id.group.as_str(), id.kind.as_str()) {
        ("", "Service") => default_protocols(manifest.pointer_mut("/spec/ports")),
        ("", "Secret") => fold_string_data(manifest),
        ("", "PersistentVolumeClaim") => resource_quantities(manifest.pointer_mut("/spec/resources")),
        ("", "ResourceQuota") => quantities(manifest.pointer_mut("/spec/hard")),
        ("", "LimitRange") => {
            for limit in items(manifest.pointer_mut("/spec/limits")) {
                for field in ["max", "min", "default", "defaultRequest", "maxLimitRequestRatio"] {
                    quantities(limit.get_mut(field));
                }
            }
        }
        ("apiextensions.k8s.io", "CustomResourceDefinition") => {
            if let Some(object) = manifest.as_object_mut() {
                object.remove("status");
            }
        }
        ("apps", "StatefulSet") => {
            for claim in items(manifest.pointer_mut("/spec/volumeClaimTemplates")) {
                resource_quantities(claim.pointer_mut("/spec/resources"));
            }
        }
        _ => {}
    }
    if let Some(pod_spec) = pod_spec_path(&id.group, &id.kind).and_then(|path| manifest.pointer_mut(path)) {
        for list in ["containers", "initContainers"] {
            for container in items(pod_spec.get_mut(list)) {
                default_protocols(container.get_mut("ports"));
                resource_quantities(container.get_mut("resources"));
            }
        }
        for volume in items(pod_spec.get_mut("volumes")) {
            if let Some(size) = volume.pointer_mut("/emptyDir/sizeLimit") {
                quantity(size);
            }
        }
    }
}

/// `limits` and `requests` of a resource requirements object.
fn resource_quantities(resources: Option<&mut Value>) {
    if let Some(resources) = resources {
        quantities(resources.get_mut("limits"));
        quantities(resources.get_mut("requests"));
    }
}

/// Every value of a map of quantities.
fn quantities(map: Option<&mut Value>) {
    for value in map.and_then(Value::as_object_mut).into_iter().flat_map(|m| m.values_mut()) {
        quantity(value);
    }
}

fn quantity(value: &mut Value) {
    if let Value::Number(n) = value {
        *value = Value::String(n.to_string());
    }
}

/// Where the pod spec of a workload kind sits.
fn pod_spec_path(group: &str, kind: &str) -> Option<&'static str> {
    match (group, kind) {
        ("", "Pod") => Some("/spec"),
        ("", "PodTemplate") => Some("/template/spec"),
        ("", "ReplicationController")
        | ("apps" | "extensions", "Deployment" | "StatefulSet" | "DaemonSet" | "ReplicaSet")
        | ("batch", "Job") => Some("/spec/template/spec"),
        ("batch", "CronJob") => Some("/spec/jobTemplate/spec/template/spec"),
        _ => None,
    }
}

fn items(list: Option<&mut Value>) -> impl Iterator<Item = &mut Value> {
    list.and_then(Value::as_array_mut).into_iter().flatten()
}

fn default_protocols(ports: Option<&mut Value>) {
    for port in items(ports).filter_map(Value::as_object_mut) {
        if port.get("protocol").is_none_or(Value::is_null) {
            port.insert("protocol".into(), DEFAULT_PROTOCOL.into());
        }
    }
}

/// `stringData` entries win over `data` entries of the same key, as on the server.
fn fold_string_data(manifest: &mut Value) {
    let Some(root) = manifest.as_object_mut() else { return };
    let Some(Value::Object(strings)) = root.remove("stringData") else { return };
    let data = root.entry("data").or_insert_with(|| Value::Object(Default::default()));
    if data.is_null() {
        *data = Value::Object(Default::default());
    }
    let Some(data) = data.as_object_mut() else { return };
    for (key, value) in strings {
        let text = match value {
            Value::String(s) => s,
            other => other.to_string(),
        };
        data.insert(key, base64::engine::general_purpose::STANDARD.encode(text).into());
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn id(api_version: &str, kind: &str) -> ObjectId {
        let (group, version) = api_version.split_once('/').unwrap_or(("", api_version));
        ObjectId { group: group.into(), version: version.into(), kind: kind.into(), namespace: None, name: "x".into() }
    }

    #[test]
    fn service_ports_get_tcp_and_keep_an_explicit_protocol() {
        let mut service = json!({"spec": {"ports": [{"port": 80}, {"port": 53, "protocol": "UDP"}, {"port": 8, "protocol": null}]}});
        fill(&id("v1", "Service"), &mut service);
        assert_eq!(
            service["spec"]["ports"],
            json!([{"port": 80, "protocol": "TCP"}, {"port": 53, "protocol": "UDP"}, {"port": 8, "protocol": "TCP"}])
        );
    }

    #[test]
    fn container_ports_in_every_pod_template_get_tcp() {
        let container = || json!({"name": "c", "ports": [{"containerPort": 80}]});
        let cases = [
            ("v1", "Pod", json!({"spec": {"containers": [container()], "initContainers": [container()]}})),
            ("apps/v1", "Deployment", json!({"spec": {"template": {"spec": {"containers": [container()]}}}})),
            ("apps/v1", "StatefulSet", json!({"spec": {"template": {"spec": {"containers": [container()]}}}})),
            ("apps/v1", "DaemonSet", json!({"spec": {"template": {"spec": {"initContainers": [container()]}}}})),
            ("batch/v1", "Job", json!({"spec": {"template": {"spec": {"containers": [container()]}}}})),
            ("batch/v1beta1", "CronJob", json!({"spec": {"jobTemplate": {"spec": {"template": {"spec": {"containers": [container()]}}}}}})),
        ];
        for (api_version, kind, mut manifest) in cases {
            fill(&id(api_version, kind), &mut manifest);
            let text = manifest.to_string();
            assert!(text.contains(r#"{"containerPort":80,"protocol":"TCP"}"#), "{kind}: {text}");
            assert!(!text.contains(r#"{"containerPort":80}"#), "{kind}: {text}");
        }
    }

    #[test]
    fn quantities_written_as_numbers_become_strings() {
        let resources = || json!({"limits": {"cpu": 0.5, "memory": "64Mi"}, "requests": {"cpu": 1}});
        let strings = json!({"limits": {"cpu": "0.5", "memory": "64Mi"}, "requests": {"cpu": "1"}});
        let mut deployment = json!({"spec": {"template": {"spec": {
            "containers": [{"name": "c", "resources": resources()}],
            "volumes": [{"name": "v", "emptyDir": {"sizeLimit": 1000}}]}}}});
        fill(&id("apps/v1", "Deployment"), &mut deployment);
        assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["resources"], strings);
        assert_eq!(deployment["spec"]["template"]["spec"]["volumes"][0]["emptyDir"]["sizeLimit"], json!("1000"));
        let mut claim = json!({"spec": {"resources": resources()}});
        fill(&id("v1", "PersistentVolumeClaim"), &mut claim);
        assert_eq!(claim["spec"]["resources"], strings);
        let mut set = json!({"spec": {"volumeClaimTemplates": [{"spec": {"resources": resources()}}]}});
        fill(&id("apps/v1", "StatefulSet"), &mut set);
        assert_eq!(set["spec"]["volumeClaimTemplates"][0]["spec"]["resources"], strings);
        let mut quota = json!({"spec": {"hard": {"pods": 10}}});
        fill(&id("v1", "ResourceQuota"), &mut quota);
        assert_eq!(quota["spec"]["hard"]["pods"], json!("10"));
        let mut range = json!({"spec": {"limits": [{"type": "Container", "max": {"cpu": 2}, "maxLimitRequestRatio": {"cpu": 4}}]}});
        fill(&id("v1", "LimitRange"), &mut range);
        assert_eq!(range["spec"]["limits"][0], json!({"type": "Container", "max": {"cpu": "2"}, "maxLimitRequestRatio": {"cpu": "4"}}));
    }

    #[test]
    fn other_kinds_are_untouched() {
        let original =
            json!({"spec": {"ports": [{"port": 80}], "template": {"spec": {"containers": [{"ports": [{"containerPort": 1}]}]}}}});
        let mut manifest = original.clone();
        fill(&id("example.com/v1", "Service"), &mut manifest);
        fill(&id("v1", "ConfigMap"), &mut manifest);
        assert_eq!(manifest, original);
    }

    #[test]
    fn string_data_is_folded_into_data() {
        let mut secret = json!({"data": {"a": "b2xk", "keep": "eA=="}, "stringData": {"a": "new", "n": 5}});
        fill(&id("v1", "Secret"), &mut secret);
        assert_eq!(secret, json!({"data": {"a": "bmV3", "keep": "eA==", "n": "NQ=="}}));
    }
}
