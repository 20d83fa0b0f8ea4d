//! Parsing the Sveltos v1beta1 objects into `model`'s typed values: [`parse_cluster`] for a
//! SveltosCluster, [`parse_profile`] for a ClusterProfile or Profile. Spec fields the
//! publisher does not support become warnings on the profile, so nothing is dropped
//! silently; what cannot be used at all is a [`ModelError`] naming the object and field.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use airlock_bundle::statement::DEFAULT_TIER;
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde::Deserialize;
use serde_json::Value;

use super::model::{ModelError, PolicyKind, PolicyRef, Profile, ProfileKind, SveltosCluster, TemplateRef, WATCH_NAMESPACES_ANNOTATION};
use super::selector::Selector;

#[derive(Deserialize)]
struct Metadata {
    name: String,
    #[serde(default)]
    namespace: Option<String>,
    #[serde(default)]
    labels: BTreeMap<String, String>,
    #[serde(default)]
    annotations: BTreeMap<String, String>,
}

#[derive(Deserialize)]
struct ClusterObject {
    metadata: Metadata,
    #[serde(default)]
    spec: ClusterSpec,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ClusterSpec {
    #[serde(default)]
    pull_mode: bool,
    #[serde(default)]
    paused: bool,
}

/// Parses a SveltosCluster object.
pub fn parse_cluster(value: &Value) -> Result<SveltosCluster, ModelError> {
    let obj: ClusterObject = from_value(value, "SveltosCluster")?;
    let ns = obj.metadata.namespace.unwrap_or_default();
    let object = format!("SveltosCluster {ns}/{}", obj.metadata.name);
    let id = ClusterId::new(&ns, &obj.metadata.name).map_err(|e| ModelError::Malformed { object, message: e.to_string() })?;
    let watch_namespaces = obj.metadata.annotations.get(WATCH_NAMESPACES_ANNOTATION).and_then(|v| {
        let list: Vec<String> = v.split(',').map(str::trim).filter(|s| !s.is_empty()).map(String::from).collect();
        (!list.is_empty()).then_some(list)
    });
    Ok(SveltosCluster {
        id,
        labels: obj.metadata.labels,
        pull_mode: obj.spec.pull_mode,
        paused: obj.spec.paused,
        watch_namespaces,
        object: value.clone(),
    })
}

#[derive(Deserialize)]
struct ProfileObject {
    metadata: Metadata,
    #[serde(default)]
    spec: Spec,
}

/// The raw spec shared by ClusterProfile and Profile.
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct Spec {
    #[serde(default)]
    cluster_selector: Option<Value>,
    #[serde(default)]
    cluster_refs: Vec<RawObjectRef>,
    #[serde(default)]
    policy_refs: Vec<RawPolicyRef>,
    #[serde(default)]
    sync_mode: Option<SyncMode>,
    #[serde(default)]
    tier: Option<u32>,
    #[serde(default)]
    depends_on: Vec<String>,
    #[serde(default)]
    stop_matching_behavior: Option<StopMatchingBehavior>,
    #[serde(default)]
    extra_labels: BTreeMap<String, String>,
    #[serde(default)]
    extra_annotations: BTreeMap<String, String>,
    #[serde(default)]
    template_resource_refs: Vec<RawTemplateRef>,
    /// Everything else: reported as unsupported when set.
    #[serde(flatten)]
    rest: BTreeMap<String, Value>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawObjectRef {
    #[serde(default)]
    api_version: String,
    #[serde(default)]
    kind: String,
    #[serde(default)]
    namespace: String,
    #[serde(default)]
    name: String,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawPolicyRef {
    kind: String,
    #[serde(default)]
    namespace: String,
    name: String,
    #[serde(default)]
    deployment_type: Option<String>,
    #[serde(default)]
    path: Option<String>,
    #[serde(default)]
    optional: bool,
}

#[derive(Deserialize)]
struct RawTemplateRef {
    resource: RawObjectRef,
    identifier: String,
    #[serde(default)]
    optional: bool,
}

/// Parses a ClusterProfile (`namespaced == false`) or a Profile.
pub fn parse_profile(value: &Value, namespaced: bool) -> Result<Profile, ModelError> {
    let what = if namespaced { "Profile" } else { "ClusterProfile" };
    let obj: ProfileObject = from_value(value, what)?;
    let (kind, object) = match (namespaced, obj.metadata.namespace.filter(|n| !n.is_empty())) {
        (false, _) => (ProfileKind::ClusterProfile, format!("ClusterProfile/{}", obj.metadata.name)),
        (true, Some(namespace)) => {
            let object = format!("Profile/{namespace}/{}", obj.metadata.name);
            (ProfileKind::Profile { namespace }, object)
        }
        (true, None) => {
            let object = format!("Profile/{}", obj.metadata.name);
            return Err(ModelError::Malformed { object, message: "a Profile needs metadata.namespace".into() });
        }
    };
    let field = |field: &str, message: String| ModelError::Field { object: object.clone(), field: field.into(), message };
    let spec = obj.spec;
    let selector = match spec.cluster_selector {
        None | Some(Value::Null) => None,
        Some(v) => Selector::parse(&v).map_err(|m| field("spec.clusterSelector", m))?,
    };
    let mut warnings = unsupported_fields(&spec.rest);
    let own_namespace = match &kind {
        ProfileKind::Profile { namespace } => Some(namespace.as_str()),
        ProfileKind::ClusterProfile => None,
    };
    let mut cluster_refs = Vec::new();
    for (i, r) in spec.cluster_refs.iter().enumerate() {
        let at = format!("spec.clusterRefs[{i}]");
        if r.kind != "SveltosCluster" {
            warnings.push(format!("{at}: kind {:?} is not supported (only SveltosCluster); ignored", r.kind));
            continue;
        }
        let ns = match (own_namespace, r.namespace.as_str()) {
            (Some(own), "") => own,
            (Some(own), ns) if ns != own => {
                warnings.push(format!("{at}: a Profile only matches clusters in its namespace {own}; {ns}/{} ignored", r.name));
                continue;
            }
            (_, ns) => ns,
        };
        cluster_refs.push(ClusterId::new(ns, &r.name).map_err(|e| field(&at, e.to_string()))?);
    }
    let mut policy_refs = Vec::new();
    for (i, r) in spec.policy_refs.into_iter().enumerate() {
        let at = format!("spec.policyRefs[{i}]");
        let kind = match r.kind.as_str() {
            "ConfigMap" => PolicyKind::ConfigMap,
            "Secret" => PolicyKind::Secret,
            other => {
                warnings.push(format!("{at}: kind {other} ({}) is not supported (only ConfigMap and Secret); ignored", r.name));
                continue;
            }
        };
        match r.deployment_type.as_deref() {
            None | Some("Remote") => {}
            Some(other) => {
                warnings.push(format!("{at}: deploymentType {other} ({} {}) is not supported; ignored", r.kind, r.name));
                continue;
            }
        }
        if r.path.as_deref().is_some_and(|p| !p.is_empty()) {
            warnings.push(format!("{at}: path applies to Flux sources only; ignored"));
        }
        let namespace = scoped_namespace(own_namespace, r.namespace).map_err(|m| field(&at, m))?;
        policy_refs.push(PolicyRef { kind, namespace, name: r.name, optional: r.optional });
    }
    let template_refs = spec
        .template_resource_refs
        .into_iter()
        .enumerate()
        .map(|(i, r)| {
            let at = format!("spec.templateResourceRefs[{i}]");
            if r.resource.kind.is_empty() || r.resource.name.is_empty() || r.identifier.is_empty() {
                return Err(field(&at, "needs resource.kind, resource.name and identifier".into()));
            }
            let api_version = if r.resource.api_version.is_empty() { "v1".into() } else { r.resource.api_version };
            let namespace = scoped_namespace(own_namespace, r.resource.namespace).map_err(|m| field(&at, m))?;
            Ok(TemplateRef {
                api_version,
                kind: r.resource.kind,
                namespace,
                name: r.resource.name,
                identifier: r.identifier,
                optional: r.optional,
            })
        })
        .collect::<Result<_, _>>()?;
    Ok(Profile {
        kind,
        name: obj.metadata.name,
        selector,
        cluster_refs,
        policy_refs,
        template_refs,
        sync_mode: spec.sync_mode.unwrap_or_default(),
        tier: spec.tier.unwrap_or(DEFAULT_TIER),
        depends_on: spec.depends_on,
        stop_matching_behavior: spec.stop_matching_behavior.unwrap_or_default(),
        extra_labels: spec.extra_labels,
        extra_annotations: spec.extra_annotations,
        warnings,
    })
}

/// The namespace a reference of a profile resolves in: a Profile's own namespace (it may
/// not reach into another), or for a ClusterProfile what the reference says.
fn scoped_namespace(own: Option<&str>, namespace: String) -> Result<String, String> {
    match own {
        Some(own) if !namespace.is_empty() && namespace != own => {
            Err(format!("a Profile resolves references only in its namespace {own}, not {namespace}"))
        }
        Some(own) => Ok(own.to_string()),
        None => Ok(namespace),
    }
}

/// Spec fields outside what the publisher honours. A field left at its zero value (as CRD
/// defaulting writes `continueOnConflict: false`) changes nothing and is not reported.
fn unsupported_fields(rest: &BTreeMap<String, Value>) -> Vec<String> {
    rest.iter()
        .filter(|(_, v)| match v {
            Value::Null | Value::Bool(false) => false,
            Value::String(s) => !s.is_empty(),
            Value::Array(a) => !a.is_empty(),
            Value::Object(o) => !o.is_empty(),
            _ => true,
        })
        .map(|(k, _)| format!("spec.{k} is not supported by airlock-publisher; ignored"))
        .collect()
}

fn from_value<T: serde::de::DeserializeOwned>(value: &Value, kind: &str) -> Result<T, ModelError> {
    T::deserialize(value).map_err(|e| {
        let meta = &value["metadata"];
        let object = match (meta["namespace"].as_str(), meta["name"].as_str()) {
            (Some(ns), Some(n)) => format!("{kind} {ns}/{n}"),
            (None, Some(n)) => format!("{kind} {n}"),
            _ => format!("{kind} without metadata.name"),
        };
        ModelError::Malformed { object, message: e.to_string() }
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_cluster_identity_mode_and_watch_namespaces() {
        let c = parse_cluster(&json!({
            "apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"region": "eu"},
                         "annotations": {WATCH_NAMESPACES_ANNOTATION: " apps, ,monitoring "}},
            "spec": {"pullMode": true}
        }))
        .unwrap();
        assert_eq!(c.id.to_string(), "fleet/edge-1");
        assert!(c.pull_mode && !c.paused);
        assert_eq!(c.watch_namespaces, Some(vec!["apps".to_string(), "monitoring".to_string()]));
        let bad = parse_cluster(&json!({"metadata": {"name": "x"}})).unwrap_err();
        assert!(matches!(bad, ModelError::Malformed { .. }), "{bad}");
    }

    #[test]
    fn reports_unsupported_fields_and_references() {
        let p = parse_profile(
            &json!({"metadata": {"name": "web"}, "spec": {
                "helmCharts": [{"chartName": "x"}], "kustomizationRefs": [{"name": "k"}],
                "setRefs": ["s"], "validateHealths": [{"name": "h"}], "patches": [{"patch": "p"}],
                "continueOnConflict": false, "reloader": false,
                "clusterRefs": [{"kind": "Cluster", "namespace": "capi", "name": "c"}],
                "policyRefs": [
                    {"kind": "ConfigMap", "namespace": "default", "name": "local", "deploymentType": "Local"},
                    {"kind": "GitRepository", "namespace": "flux", "name": "repo"},
                    {"kind": "Secret", "namespace": "", "name": "s", "deploymentType": "Remote"}
                ]
            }}),
            false,
        )
        .unwrap();
        let text = p.warnings.join("\n");
        for field in
            ["helmCharts", "kustomizationRefs", "setRefs", "validateHealths", "patches", "Local", "GitRepository", "kind \"Cluster\""]
        {
            assert!(text.contains(field), "no warning for {field}: {text}");
        }
        assert!(!text.contains("continueOnConflict") && !text.contains("reloader"), "{text}");
        assert_eq!(
            p.policy_refs,
            vec![PolicyRef { kind: PolicyKind::Secret, namespace: String::new(), name: "s".into(), optional: false }]
        );
        assert_eq!((p.tier, p.sync_mode, p.stop_matching_behavior), (100, SyncMode::Continuous, StopMatchingBehavior::WithdrawPolicies));
        assert_eq!(p.part_name(), "ClusterProfile.web");
    }

    #[test]
    fn scopes_a_profile_to_its_namespace() {
        let p = parse_profile(
            &json!({"metadata": {"name": "db", "namespace": "team-a"}, "spec": {
                "clusterRefs": [{"kind": "SveltosCluster", "name": "c1"}, {"kind": "SveltosCluster", "namespace": "other", "name": "c2"}],
                "policyRefs": [{"kind": "ConfigMap", "name": "cm"}],
                "templateResourceRefs": [{"resource": {"kind": "ConfigMap", "name": "x"}, "identifier": "X"}],
                "tier": 50, "syncMode": "DryRun", "stopMatchingBehavior": "LeavePolicies", "dependsOn": ["base"]
            }}),
            true,
        )
        .unwrap();
        assert_eq!(p.part_name(), "Profile.team-a.db");
        assert_eq!(p.dependency_part("base"), "Profile.team-a.base");
        assert_eq!(p.cluster_refs, vec!["team-a/c1".parse().unwrap()]);
        assert_eq!(p.policy_refs[0].namespace, "team-a");
        assert_eq!(p.template_refs[0].namespace, "team-a");
        assert_eq!((p.tier, p.sync_mode, p.stop_matching_behavior), (50, SyncMode::DryRun, StopMatchingBehavior::LeavePolicies));
        assert_eq!(p.warnings.len(), 1, "{:?}", p.warnings);
        let cross = parse_profile(
            &json!({"metadata": {"name": "db", "namespace": "team-a"}, "spec": {"policyRefs": [{"kind": "ConfigMap", "namespace": "team-b", "name": "cm"}]}}),
            true,
        );
        assert!(matches!(cross, Err(ModelError::Field { ref field, .. }) if field == "spec.policyRefs[0]"), "{cross:?}");
        let cross = parse_profile(
            &json!({"metadata": {"name": "db", "namespace": "team-a"}, "spec": {"templateResourceRefs": [
                {"resource": {"kind": "ConfigMap", "namespace": "team-b", "name": "x"}, "identifier": "X"}]}}),
            true,
        );
        assert!(matches!(cross, Err(ModelError::Field { ref field, .. }) if field == "spec.templateResourceRefs[0]"), "{cross:?}");
    }

    #[test]
    fn rejects_bad_enums_with_the_object_named() {
        let err = parse_profile(&json!({"metadata": {"name": "web"}, "spec": {"syncMode": "Sometimes"}}), false).unwrap_err();
        assert!(err.to_string().contains("ClusterProfile web"), "{err}");
        let err = parse_profile(&json!({"metadata": {"name": "db"}, "spec": {}}), true).unwrap_err();
        assert!(err.to_string().contains("metadata.namespace"), "{err}");
    }
}
