//! Containment: with watch-namespaces, a bundle gains no permission outside them, shown
//! twice against the managed Kubernetes 1.20 apiserver. The registration of `register
//! cluster --watch-namespaces ... --allow-cluster-scoped PriorityClass.../<run>-allowed` is
//! applied, and the real `airlock-puller sync` runs as the puller's ServiceAccount
//! (impersonated, as in `rbac.rs`):
//!
//! 1. the policy: a bundle holding a ClusterRoleBinding to cluster-admin, a
//!    ValidatingWebhookConfiguration, a PriorityClass not in the allow-list and the report
//!    key Secret in the puller's own namespace is refused before any write: exit 3, every
//!    one named, nothing created or changed, no state written;
//! 2. the grant: the same requests sent as the ServiceAccount, as if the policy were
//!    bypassed, get 403 from the API server, and so do a RoleBinding to cluster-admin in a
//!    watched namespace, a `serviceaccounts/token` request and (asked by
//!    SubjectAccessReview) `impersonate`, `bind` and `escalate`; an ordinary object in a
//!    watched namespace and the allow-listed PriorityClass are allowed;
//! 3. the allow-list end to end: a bundle signed with `clusterScoped` naming that
//!    PriorityClass applies it.

mod common;
// Shared with the least-privilege suite; each uses part of it.
#[allow(dead_code)]
#[path = "rbac/probe.rs"]
mod probe;
#[path = "publisher_support/mod.rs"]
mod publisher_support;

use airlock_bundle::statement::ClusterScopedObject;
use probe::{Probe, Site};

fn allowed_priority_class(run: &str) -> String {
    format!("{run}-allowed")
}

/// The attack: cluster-scoped objects that widen the grant, and the puller's own key.
fn attack(site: &Site) -> Vec<(String, Vec<u8>)> {
    let run = &site.run;
    let file = |name: &str, yaml: String| (format!("ClusterProfile.attack/{name}.yaml"), yaml.into_bytes());
    vec![
        file(
            "ClusterRoleBinding",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRoleBinding\nmetadata:\n  name: {run}-bundle\n\
                 roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: cluster-admin}}\n\
                 subjects: [{{kind: ServiceAccount, name: default, namespace: default}}]\n"
            ),
        ),
        file(
            "ValidatingWebhookConfiguration",
            format!("apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata:\n  name: {run}-bundle\n"),
        ),
        file(
            "PriorityClass",
            format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {run}-bundle\nvalue: 1000\n"),
        ),
        file(
            "Secret",
            format!(
                "apiVersion: v1\nkind: Secret\nmetadata:\n  name: airlock-report-key\n  namespace: {}\ndata:\n  report.key: cGxhbnRlZA==\n",
                site.puller_ns
            ),
        ),
    ]
}

#[tokio::test(flavor = "multi_thread")]
async fn a_bundle_cannot_leave_its_namespaces_by_policy_nor_by_grant() {
    let site = Site::registered("contain", true, |run| {
        vec!["--allow-cluster-scoped".into(), format!("PriorityClass.scheduling.k8s.io/{}", allowed_priority_class(run))]
    })
    .await;
    let [watched, other_watched] = site.watched();
    let run = site.run.clone();
    let key_before = site.secret_data(&site.puller_ns, "airlock-report-key").await;
    assert!(key_before.is_some(), "registration wrote the report key");

    // 1. The policy refuses the whole bundle before the first write.
    let mut files = site.config_maps(&[watched.as_str()]);
    files.extend(attack(&site));
    let policy = site.sync(1, &files, &["--watch-namespaces", &site.watch_list()]).await;
    common::assert_exit(&policy, 3);
    for named in [
        format!("ClusterRoleBinding.rbac.authorization.k8s.io {run}-bundle"),
        format!("ValidatingWebhookConfiguration.admissionregistration.k8s.io {run}-bundle"),
        format!("PriorityClass.scheduling.k8s.io {run}-bundle"),
    ] {
        assert!(policy.stderr.contains(&format!("{named} (")), "{named} named: {policy:?}");
    }
    assert!(policy.stderr.contains("cluster-scoped and not in clusterScoped"), "{policy:?}");
    assert!(
        policy.stderr.contains(&format!("Secret {}/airlock-report-key (", site.puller_ns))
            && policy.stderr.contains(&format!("namespace {} is the puller's own", site.puller_ns)),
        "{policy:?}"
    );
    for (resource, name) in [
        ("clusterrolebinding", format!("{run}-bundle")),
        ("validatingwebhookconfiguration", format!("{run}-bundle")),
        ("priorityclass", format!("{run}-bundle")),
    ] {
        assert!(!site.holds(resource, None, &name), "{resource} {name} was not created");
    }
    assert_eq!(site.config_map_value(&watched).await, None, "nothing applied, the ordinary ConfigMap neither");
    assert_eq!(site.secret_data(&site.puller_ns, "airlock-report-key").await, key_before, "the report key is unchanged");
    assert_eq!(site.state_version().await, None, "no state written");

    // 2. The grant refuses the same, as if the policy had been bypassed.
    let puller = site.client_as(&site.service_account()).await;
    let mut p = Probe::default();
    p.allowed("apply a ConfigMap in a watched namespace", puller.apply_config_map(&other_watched, "probe").await);
    p.allowed("apply the allow-listed PriorityClass", puller.apply_priority_class(&allowed_priority_class(&run)).await);
    // Server-side apply needs `patch` on the name as well as `create`: another name is
    // refused. A plain POST needs only `create`, which RBAC cannot restrict by name: there
    // only the policy holds, as part 1 showed.
    p.refused("apply another PriorityClass", puller.apply_priority_class(&format!("{run}-probe")).await);
    p.allowed("POST another PriorityClass (RBAC cannot name what is created)", puller.post_priority_class(&format!("{run}-probe")).await);
    p.refused("apply a PriorityClass's neighbour kind, a StorageClass", puller.apply_storage_class(&run).await);
    p.refused("bind cluster-admin cluster-wide", puller.apply_cluster_role_binding(&run).await);
    p.refused("bind cluster-admin in a watched namespace", puller.apply_role_binding_to_cluster_admin(&watched, &run).await);
    p.refused("apply a ValidatingWebhookConfiguration", puller.apply_webhook_configuration(&run).await);
    p.refused("create a ClusterRole", puller.apply_cluster_role(&run).await);
    p.refused("request a ServiceAccount token in a watched namespace", puller.create_token(&watched, "default").await);
    p.assert_all();
    for (verb, group, resource, namespace) in [
        ("impersonate", "", "users", None),
        ("impersonate", "", "serviceaccounts", Some(watched.as_str())),
        ("impersonate", "", "groups", None),
        ("bind", "rbac.authorization.k8s.io", "clusterroles", Some(watched.as_str())),
        ("escalate", "rbac.authorization.k8s.io", "roles", Some(watched.as_str())),
        ("create", "", "serviceaccounts/token", Some(watched.as_str())),
        ("create", "apiextensions.k8s.io", "customresourcedefinitions", None),
        ("create", "apiregistration.k8s.io", "apiservices", None),
        ("create", "", "pods/exec", Some(watched.as_str())),
    ] {
        assert!(!site.authorizes(verb, group, resource, namespace).await, "{verb} {group}/{resource} in {namespace:?} is not granted");
    }
    assert!(site.authorizes("create", "", "configmaps", Some(&watched)).await, "the review itself answers yes for a granted request");

    // 3. The allow-listed PriorityClass, signed in clusterScoped, applies. The probes above
    // made it, unlabelled, as the puller's account: gone again, so the bundle creates it
    // rather than meet an object Airlock did not create.
    let allowed = allowed_priority_class(&run);
    let removed = std::process::Command::new("kubectl")
        .args(["--kubeconfig", &common::service_env("AIRLOCK_KUBECONFIG_MANAGED"), "delete", "priorityclass", "--ignore-not-found"])
        .args([allowed.as_str(), &format!("{run}-probe")])
        .output()
        .expect("kubectl runs");
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    let yaml = format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {allowed}\nvalue: 1000\n");
    let mut files = site.config_maps(&[watched.as_str()]);
    files.push(("ClusterProfile.app/PriorityClass.yaml".into(), yaml.into_bytes()));
    let entry = ClusterScopedObject { group: "scheduling.k8s.io".into(), kind: "PriorityClass".into(), name: allowed.clone() };
    let applied = site.sync_released(2, &files, &["--watch-namespaces", &site.watch_list()], |r| r.cluster_scoped = vec![entry]).await;
    common::assert_exit(&applied, 0);
    assert!(site.holds("priorityclass", None, &allowed), "the allow-listed PriorityClass was applied");
    assert_eq!(site.config_map_value(&watched).await.as_deref(), Some("v1"));
    assert_eq!(site.state_version().await, Some(2));
}
