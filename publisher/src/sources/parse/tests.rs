use airlock_bundle::statement::{FieldNote, Support};
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde_json::{Value, json};

use super::*;
use crate::sources::model::kustomization::{KustomizeKind, ValuesFromRef};
use crate::sources::model::{
    DEFAULT_INTERVAL, KustomizationRef, ModelError, PolicyKind, PolicyRef, ProfileKind, RemoteUrl, SecretName, WATCH_NAMESPACES_ANNOTATION,
};

fn profile(metadata: Value, spec: Value) -> Value {
    json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile", "metadata": metadata, "spec": spec})
}

fn cluster(spec: Value) -> Value {
    json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
           "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"region": "eu"},
                        "annotations": {WATCH_NAMESPACES_ANNOTATION: " apps, ,monitoring "}},
           "spec": spec})
}

fn field_of(err: &ModelError) -> &str {
    match err {
        ModelError::Field { field, .. } => field,
        other => panic!("not a field error: {other}"),
    }
}

#[test]
fn reads_cluster_identity_mode_and_watch_namespaces() {
    let c = parse_cluster(&cluster(json!({"pullMode": true}))).unwrap();
    assert_eq!(c.id.to_string(), "fleet/edge-1");
    assert!(c.pull_mode && !c.paused && c.active_window.is_none());
    assert_eq!(c.watch_namespaces, Some(vec!["apps".to_string(), "monitoring".to_string()]));
    let bad = parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "metadata": {"name": "x"}})).unwrap_err();
    assert!(matches!(bad, ModelError::Malformed { .. }), "{bad}");
}

#[test]
fn an_active_window_is_relayed_and_overrides_paused() {
    let c = parse_cluster(&cluster(json!({"pullMode": true, "paused": true, "activeWindow": {"from": "0 20 * * 5", "to": "0 7 * * 1"}})))
        .unwrap();
    let window = c.active_window.unwrap();
    assert_eq!((window.from.as_str(), window.to.as_str()), ("0 20 * * 5", "0 7 * * 1"));
    assert!(!c.paused, "Sveltos writes paused from the window; the puller judges the window");
    assert!(parse_cluster(&cluster(json!({"paused": true}))).unwrap().paused);
}

#[test]
fn rejects_an_active_window_that_does_not_parse_naming_the_field() {
    for window in [json!({"from": "0 25 * * *", "to": "0 7 * * 1"}), json!({"from": "0 20 * * 5"})] {
        let err = parse_cluster(&cluster(json!({"activeWindow": window}))).unwrap_err();
        assert_eq!(field_of(&err), "spec.activeWindow", "{err}");
        assert!(err.to_string().contains("SveltosCluster fleet/edge-1"), "{err}");
    }
}

#[test]
fn cluster_push_mode_fields_are_noted() {
    let c = parse_cluster(&cluster(json!({"pullMode": true, "kubeconfigName": "k", "data": {"a": 1}}))).unwrap();
    assert_eq!(
        c.notes.iter().map(|n| (n.field.as_str(), n.support)).collect::<Vec<_>>(),
        [("spec.kubeconfigName", Support::NotApplicable)]
    );
}

#[test]
fn notes_unsupported_fields_and_references() {
    let p = parse_profile(
        &profile(
            json!({"name": "web"}),
            json!({
                "helmCharts": [{"repositoryURL": "http://r", "chartName": "x", "releaseName": "x", "releaseNamespace": "x", "options": {"atomic": true}, "signatureVerification": {"provider": "Keyless"}}],
                "kustomizationRefs": [
                    {"kind": "Bucket", "namespace": "flux", "name": "k"},
                    {"remoteURL": {"url": "https://example.com/k.tar.gz"}},
                    {"kind": "ConfigMap", "namespace": "defs", "name": "local", "deploymentType": "Local"}
                ],
                "reloader": false, "continueOnConflict": false,
                "clusterRefs": [{"kind": "Cluster", "namespace": "capi", "name": "c"}],
                "policyRefs": [
                    {"kind": "ConfigMap", "namespace": "default", "name": "local", "deploymentType": "Local"},
                    {"kind": "GitRepository", "namespace": "flux", "name": "repo"},
                    {"kind": "Secret", "namespace": "", "name": "s", "deploymentType": "Remote", "tier": 5, "skipNamespaceCreation": true, "force": true}
                ]
            }),
        ),
        false,
    )
    .unwrap();
    let fields: Vec<(&str, Support)> = p.notes.iter().map(|n| (n.field.as_str(), n.support)).collect();
    assert_eq!(
        fields,
        [
            ("spec.clusterRefs[0].kind", Support::NotApplicable),
            ("spec.helmCharts[0].options.atomic", Support::NotSupported),
            ("spec.helmCharts[].signatureVerification", Support::NotSupported),
            ("spec.kustomizationRefs[0].kind", Support::NotSupported),
            ("spec.kustomizationRefs[2].deploymentType", Support::NotApplicable),
            ("spec.policyRefs[0].deploymentType", Support::NotApplicable),
            ("spec.policyRefs[1].kind", Support::NotSupported),
        ]
    );
    let built: Vec<_> =
        p.kustomization_refs.iter().map(|k| (k.index, k.kind, k.remote.as_ref().map(|r| (r.url.as_str(), r.tree)))).collect();
    assert_eq!(built, [(1, KustomizeKind::Remote, Some(("https://example.com/k.tar.gz", true)))], "only the remoteURL is built");
    let local: &FieldNote = &p.notes[4];
    assert!(local.detail.contains("Airlock publishes only what the managed cluster applies"), "{}", local.detail);
    assert_eq!(
        p.policy_refs,
        vec![PolicyRef {
            index: 2,
            kind: PolicyKind::Secret,
            namespace: String::new(),
            name: "s".into(),
            optional: false,
            tier: 5,
            skip_namespace_creation: true,
            force: true,
            remote: None,
        }]
    );
    assert!(p.cluster_refs.is_empty());
    assert_eq!((p.tier, p.sync_mode, p.stop_matching_behavior), (100, SyncMode::Continuous, StopMatchingBehavior::WithdrawPolicies));
    assert_eq!(p.part_name(), "ClusterProfile.web");
}

#[test]
fn reads_a_remote_url_reference_without_kind_or_name() {
    let refs = |remote: serde_json::Value| {
        parse_profile(&profile(json!({"name": "web"}), json!({"policyRefs": [{"remoteURL": remote, "tier": 7}]})), false)
            .map(|p| p.policy_refs)
    };
    let r = refs(json!({"url": "oci://127.0.0.1:5000/x:v1", "plainHTTP": true, "template": true, "interval": "1m30s",
                        "secretRef": {"namespace": "ops", "name": "creds"}}))
    .unwrap();
    assert_eq!((r[0].index, r[0].kind, r[0].tier, r[0].name.as_str()), (0, PolicyKind::ConfigMap, 7, ""));
    assert_eq!(
        r[0].remote,
        Some(RemoteUrl {
            url: "oci://127.0.0.1:5000/x:v1".into(),
            plain_http: true,
            insecure_skip_tls_verify: false,
            secret: Some(SecretName { namespace: "ops".into(), name: "creds".into() }),
            template: true,
            interval: std::time::Duration::from_secs(90),
            tree: false,
        })
    );
    let r = refs(json!({"url": "https://example.com/x.yaml"})).unwrap();
    assert_eq!(r[0].remote.as_ref().map(|u| u.interval), Some(DEFAULT_INTERVAL));
}

#[test]
fn rejects_a_remote_url_that_is_malformed() {
    for (remote, field, says) in [
        (json!({"url": "ftp://example.com/x"}), "url", "does not start with http://, https:// or oci://"),
        (json!({"url": "ftp://u:p@example.com/x?token=t"}), "url", "\"ftp://example.com/x\""),
        (json!({"url": "https://example.com/x", "secretRef": {"name": "s"}}), "secretRef", "needs both name and namespace"),
        (json!({"url": "https://example.com/x", "interval": "5"}), "interval", "is not a duration"),
    ] {
        let e = parse_profile(&profile(json!({"name": "web"}), json!({"policyRefs": [{"remoteURL": remote}]})), false).unwrap_err();
        let ModelError::Field { field: f, message, .. } = &e else { panic!("{e}") };
        assert_eq!(f, &format!("spec.policyRefs[0].remoteURL.{field}"), "{e}");
        assert!(message.contains(says), "{e}");
        assert!(!message.contains("token=t") && !message.contains("u:p"), "{e}");
    }
    let both = json!({"policyRefs": [{"kind": "ConfigMap", "name": "x", "remoteURL": {"url": "https://example.com/x"}}]});
    let e = parse_profile(&profile(json!({"name": "web"}), both), false).unwrap_err();
    assert_eq!(field_of(&e), "spec.policyRefs[0].kind", "{e}");
}

#[test]
fn reads_every_setting_the_bundle_relays() {
    let p = parse_profile(
        &profile(
            json!({"name": "web", "annotations": {"profile.projectsveltos.io/paused": "true"}}),
            json!({
                "continueOnConflict": true, "continueOnError": true, "maxConsecutiveFailures": 3,
                "setRefs": ["prod"],
                "driftExclusions": [{"paths": ["/spec/replicas"], "target": {"kind": "Deployment", "name": ""}}],
                "patches": [{"patch": "- op: add\n  path: /x\n  value: 1\n", "target": {"kind": "Deployment", "name": "web.*"}}],
                "patchesFrom": [{"kind": "ConfigMap", "name": "{{ .ClusterName }}-patches", "optional": true}],
                "templateResourceRefs": [{"resource": {"kind": "ConfigMap", "name": "x"}, "identifier": "X", "ignoreStatusChanges": true}]
            }),
        ),
        false,
    )
    .unwrap();
    assert!(p.paused && p.continue_on_conflict && p.continue_on_error);
    assert_eq!((p.max_consecutive_failures, p.set_refs.as_slice()), (Some(3), &["prod".to_string()][..]));
    let drift = &p.drift_exclusions[0];
    assert_eq!(drift.paths, ["/spec/replicas"]);
    let target = drift.target.as_ref().unwrap();
    assert_eq!((target.kind.as_deref(), target.name.as_deref()), (Some("Deployment"), None), "empty selectors are left out");
    assert_eq!(p.patches[0].target.as_ref().unwrap().name.as_deref(), Some("web.*"));
    assert_eq!((p.patches_from[0].name.as_str(), p.patches_from[0].optional), ("{{ .ClusterName }}-patches", true));
    assert!(p.template_refs[0].ignore_status_changes && p.template_refs[0].api_version == "v1");
    assert!(p.notes.is_empty(), "{:?}", p.notes);
}

#[test]
fn scopes_a_profile_to_its_namespace() {
    let p = parse_profile(
        &json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "Profile", "metadata": {"name": "db", "namespace": "team-a"}, "spec": {
            "clusterRefs": [{"kind": "SveltosCluster", "name": "c1"}, {"kind": "SveltosCluster", "namespace": "other", "name": "c2"}],
            "policyRefs": [{"kind": "ConfigMap", "name": "cm"}, {"kind": "ConfigMap", "namespace": "team-b", "name": "cm2"}],
            "tier": 50, "syncMode": "DryRun", "stopMatchingBehavior": "LeavePolicies", "dependsOn": ["base"]
        }}),
        true,
    )
    .unwrap();
    assert_eq!(p.kind, ProfileKind::Profile { namespace: "team-a".into() });
    assert_eq!(p.part_name(), "Profile.team-a.db");
    assert_eq!(p.dependency_part("base"), "Profile.team-a.base");
    // As Sveltos's limitReferencesToNamespace: the Profile's namespace replaces theirs.
    assert_eq!(p.cluster_refs, vec!["team-a/c1".parse().unwrap(), "team-a/c2".parse().unwrap()]);
    assert!(p.policy_refs.iter().all(|r| r.namespace == "team-a"));
    assert_eq!((p.tier, p.sync_mode, p.stop_matching_behavior), (50, SyncMode::DryRun, StopMatchingBehavior::LeavePolicies));
}

#[test]
fn rejects_bad_values_naming_the_object_and_field() {
    let cases = [
        (json!({"syncMode": "Sometimes"}), "spec.syncMode"),
        (json!({"tier": "high"}), "spec.tier"),
        (json!({"maxConsecutiveFailures": 0}), "spec.maxConsecutiveFailures"),
        (
            json!({"policyRefs": [{"kind": "ConfigMap", "name": "a"}, {"kind": "ConfigMap", "name": "b", "tier": "low"}]}),
            "spec.policyRefs[1].tier",
        ),
        (json!({"policyRefs": [{"kind": "ConfigMap", "name": "a", "deploymentType": "Elsewhere"}]}), "spec.policyRefs[0].deploymentType"),
        (json!({"policyRefs": [{"kind": "ConfigMap"}]}), "spec.policyRefs[0].name"),
        (json!({"policyRefs": "cm"}), "spec.policyRefs"),
        (json!({"templateResourceRefs": [{"resource": {"kind": "ConfigMap"}, "identifier": "X"}]}), "spec.templateResourceRefs[0]"),
        (json!({"patchesFrom": [{"kind": "Deployment", "name": "x"}]}), "spec.patchesFrom[0].kind"),
        (json!({"driftExclusions": [{"paths": []}]}), "spec.driftExclusions[0].paths"),
        (json!({"driftExclusions": [{"paths": ["spec.replicas"]}]}), "spec.driftExclusions[0].paths"),
        (json!({"clusterSelector": {"matchLabels": {"a": 1}}}), "spec.clusterSelector"),
        (json!({"patches": [{"patch": 3}]}), "spec.patches[0].patch"),
        (json!({"validateHealths": [{"name": "a", "featureID": "Resources"}]}), "spec.validateHealths[0]"),
        (json!({"preDeployChecks": [{"name": "a", "featureID": "Flux", "version": "v1", "kind": "Pod"}]}), "spec.preDeployChecks[0]"),
        (
            json!({"validateHealths": [{"name": "a", "featureID": "Resources", "version": "v1", "kind": "Pod",
                                        "labelFilters": [{"key": "x", "operation": "Like"}]}]}),
            "spec.validateHealths[0].labelFilters[0].operation",
        ),
        (
            json!({"preDeleteChecks": [{"name": "a", "featureID": "Resources", "script": "x",
                                        "jobCheck": {"jobRef": {"kind": "ConfigMap", "name": "j", "namespace": ""}}}]}),
            "spec.preDeleteChecks[0]",
        ),
        (
            json!({"postDeleteChecks": [{"name": "a", "featureID": "Resources", "jobCheck": {"jobRef": {"kind": "Pod", "name": "j"}}}]}),
            "spec.postDeleteChecks[0].jobCheck.jobRef.kind",
        ),
        (
            json!({"validateHealths": [{"name": "a", "featureID": "Resources", "script": "x", "metricSource": {"url": "http://p"}}]}),
            "spec.validateHealths[0].metricQueries",
        ),
        (
            json!({"validateHealths": [{"name": "a", "featureID": "Resources",
                                        "jobCheck": {"jobRef": {"kind": "ConfigMap", "name": "j"}, "timeout": "soon"}}]}),
            "spec.validateHealths[0].jobCheck.timeout",
        ),
    ];
    for (spec, field) in cases {
        let err = parse_profile(&profile(json!({"name": "web"}), spec.clone()), false).unwrap_err();
        assert_eq!(field_of(&err), field, "{spec}: {err}");
        assert!(err.to_string().starts_with("ClusterProfile/web: field "), "{err}");
    }
    let err = parse_profile(&json!({"apiVersion": "config.projectsveltos.io/v1beta1", "metadata": {"name": "db"}, "spec": {}}), true)
        .unwrap_err();
    assert!(err.to_string().contains("metadata.namespace"), "{err}");
}

#[test]
fn reads_checks_with_label_filters_and_a_job_reference() {
    let p = parse_profile(
        &profile(
            json!({"name": "web"}),
            json!({
                "validateHealths": [{"name": "ready", "featureID": "Resources", "group": "apps", "version": "v1", "kind": "Deployment",
                                     "namespace": "web", "labelFilters": [{"key": "app", "operation": "Different", "value": "db"},
                                                                           {"key": "tier", "operation": "Has"}],
                                     "evaluateCEL": [{"name": "r", "rule": "true"}]}],
                "postDeleteChecks": [{"name": "smoke", "featureID": "Resources",
                                      "jobCheck": {"jobRef": {"kind": "Secret", "name": "job", "namespace": ""}, "timeout": "90s"}}]
            }),
        ),
        false,
    )
    .unwrap();
    let ready = &p.checks.validate_healths[0].check;
    let objects = ready.objects.as_ref().unwrap();
    assert_eq!((objects.kind.as_str(), objects.label_selector.as_str()), ("Deployment", "app!=db,tier"));
    let job = p.checks.post_delete[0].job.as_ref().unwrap();
    assert_eq!((job.field.as_str(), job.name.as_str(), job.timeout_seconds), ("spec.postDeleteChecks[0].jobCheck.jobRef", "job", 90));
    assert!(p.notes.is_empty(), "checks are supported: {:?}", p.notes);
}

#[test]
fn rejects_an_old_version_and_still_names_its_part() {
    let old = json!({"apiVersion": "config.projectsveltos.io/v1alpha1", "kind": "ClusterProfile", "metadata": {"name": "web"},
                     "spec": {"clusterSelector": "env=prod"}});
    let err = parse_profile(&old, false).unwrap_err();
    assert!(err.to_string().contains("apiVersion config.projectsveltos.io/v1alpha1"), "{err}");
    assert_eq!(part_of_unreadable(&old, false), Some(("ClusterProfile.web".to_string(), "ClusterProfile/web".to_string())));
}

#[test]
fn reads_the_clusters_a_set_selected() {
    let set = json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "Set", "metadata": {"name": "s", "namespace": "fleet"},
                     "status": {"selectedClusterRefs": [{"kind": "SveltosCluster", "name": "a"}, {"kind": "Cluster", "namespace": "x", "name": "b"},
                                                        {"kind": "SveltosCluster", "namespace": "fleet", "name": "c"}]}});
    let set = parse_set(&set, true).unwrap();
    assert_eq!((set.namespace.as_deref(), set.name.as_str()), (Some("fleet"), "s"));
    assert_eq!(set.selected, vec!["fleet/a".parse().unwrap(), "fleet/c".parse().unwrap()]);
}

#[test]
fn reads_kustomization_refs() {
    let spec = json!({"kustomizationRefs": [
        {"kind": "GitRepository", "namespace": "flux-system", "name": "{{ .ClusterName }}-repo", "path": "./overlays/{{ .ClusterName }}",
         "components": ["../../components/replicas"], "targetNamespace": "production", "tier": 20,
         "values": {"Region": "{{ index .Cluster.metadata.labels \"region\" }}"},
         "valuesFrom": [{"kind": "Secret", "name": "v", "optional": true}], "skipNamespaceCreation": true, "force": true},
        {"kind": "ConfigMap", "name": "tarball"}
    ]});
    let refs = parse_profile(&profile(json!({"name": "k"}), spec), false).unwrap().kustomization_refs;
    assert_eq!(
        refs[0],
        KustomizationRef {
            index: 0,
            kind: KustomizeKind::GitRepository,
            namespace: "flux-system".into(),
            name: "{{ .ClusterName }}-repo".into(),
            path: "./overlays/{{ .ClusterName }}".into(),
            components: vec!["../../components/replicas".into()],
            target_namespace: "production".into(),
            values: [("Region".to_string(), "{{ index .Cluster.metadata.labels \"region\" }}".to_string())].into(),
            values_from: vec![ValuesFromRef {
                field: "spec.kustomizationRefs[0].valuesFrom[0]".into(),
                kind: PolicyKind::Secret,
                namespace: String::new(),
                name: "v".into(),
                optional: true,
            }],
            optional: false,
            tier: 20,
            skip_namespace_creation: true,
            force: true,
            remote: None,
        }
    );
    assert!(refs[0].templated());
    assert_eq!((refs[1].kind, refs[1].tier, refs[1].path.as_str(), refs[1].templated()), (KustomizeKind::ConfigMap, 100, "", false));

    let bad = |r: Value| parse_profile(&profile(json!({"name": "k"}), json!({"kustomizationRefs": [r]})), false).unwrap_err();
    assert_eq!(field_of(&bad(json!({"kind": "Helm", "name": "x"}))), "spec.kustomizationRefs[0].kind");
    assert_eq!(field_of(&bad(json!({"kind": "ConfigMap"}))), "spec.kustomizationRefs[0].name");
    assert_eq!(
        field_of(&bad(json!({"kind": "ConfigMap", "name": "x", "valuesFrom": [{"kind": "Pod", "name": "p"}]}))),
        "spec.kustomizationRefs[0].valuesFrom[0].kind"
    );
    assert_eq!(field_of(&bad(json!({"kind": "ConfigMap", "name": "x", "values": {"a": 1}}))), "spec.kustomizationRefs[0].values");

    let own = json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "Profile", "metadata": {"name": "k", "namespace": "team"},
                     "spec": {"kustomizationRefs": [{"kind": "Secret", "namespace": "other", "name": "x", "valuesFrom": [{"kind": "ConfigMap", "namespace": "else", "name": "v"}]}]}});
    let refs = parse_profile(&own, true).unwrap().kustomization_refs;
    assert_eq!((refs[0].namespace.as_str(), refs[0].values_from[0].namespace.as_str()), ("team", "team"));
}
