//! Tenants: a part whose signed settings name a ServiceAccount is applied with that
//! ServiceAccount's rights, against the managed Kubernetes 1.20 apiserver. The registration
//! of `register cluster --watch-namespaces <a>,<b> --tenant <a>/deployer` is applied, and the
//! real `airlock-puller sync` runs with the puller ServiceAccount's own token, so the API
//! server judges the puller's impersonation against the generated grant:
//!
//! 1. a part `RoleRequest.team-a`, applied as the puller, creates the tenant's
//!    ServiceAccount, a Role allowing ConfigMaps in `<a>` and its RoleBinding (what a
//!    RoleRequest renders); the tenant's part, which depends on it, applies a ConfigMap in
//!    `<a>`; a part without a tenant applies a ConfigMap in `<b>` as the puller;
//! 2. a second tenant part holding a Secret in `<a>` and a ConfigMap in `<b>`, both of
//!    which the puller itself may write, fails with the API server's Forbidden naming the
//!    tenant, and nothing of it is written, while the other parts' changes apply;
//! 3. a part naming a ServiceAccount the puller may not impersonate fails the run before
//!    any write, naming the part and the account;
//! 4. a part naming a ServiceAccount outside the watch-namespaces is refused (exit 3);
//! 5. the tenant's part leaving the bundle is pruned as the tenant.

use airlock_bundle::PartSettings;
use airlock_bundle::statement::ServiceAccountRef;
use airlock_e2e::probe::Site;

const TENANT: &str = "deployer";
const INTRUDER: &str = "intruder";

fn file(part: &str, name: &str, yaml: String) -> (String, Vec<u8>) {
    (format!("{part}/{name}.yaml"), yaml.into_bytes())
}

fn config_map(part: &str, ns: &str, name: &str, value: &str) -> (String, Vec<u8>) {
    let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {ns}\ndata:\n  value: {value}\n");
    file(part, &format!("ConfigMap.{ns}.{name}"), yaml)
}

/// What a RoleRequest for the tenant renders: its ServiceAccount, the Role of its
/// ConfigMap and the RoleBinding Sveltos makes for it; and an account never granted.
fn role_request(ns: &str) -> Vec<(String, Vec<u8>)> {
    let part = "RoleRequest.team-a";
    vec![
        file(part, "ServiceAccount", format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {TENANT}\n  namespace: {ns}\n")),
        file(
            part,
            "ServiceAccount.intruder",
            format!("apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: {INTRUDER}\n  namespace: {ns}\n"),
        ),
        file(
            part,
            "Role",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: Role\nmetadata:\n  name: configmaps\n  namespace: {ns}\nrules:\n\
                 - apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get, list, watch, create, update, patch, delete]\n"
            ),
        ),
        file(
            part,
            "RoleBinding",
            format!(
                "apiVersion: rbac.authorization.k8s.io/v1\nkind: RoleBinding\nmetadata:\n  name: configmaps\n  namespace: {ns}\n\
                 roleRef: {{apiGroup: rbac.authorization.k8s.io, kind: Role, name: configmaps}}\n\
                 subjects: [{{kind: ServiceAccount, name: {TENANT}, namespace: {ns}}}]\n"
            ),
        ),
    ]
}

/// Each part's settings: the tenant parts name their ServiceAccount and wait for the
/// RoleRequest's part.
fn parts(ns: String) -> impl Fn(&str) -> PartSettings {
    move |part: &str| {
        let account = |name: &str| Some(ServiceAccountRef { namespace: ns.clone(), name: name.into() });
        let (service_account, depends_on) = match part {
            "ClusterProfile.tenant" | "ClusterProfile.wide" => (account(TENANT), vec!["RoleRequest.team-a".to_string()]),
            "ClusterProfile.intruder" => (account(INTRUDER), vec!["RoleRequest.team-a".to_string()]),
            "ClusterProfile.outside" => (Some(ServiceAccountRef { namespace: "kube-system".into(), name: "default".into() }), vec![]),
            _ => (None, vec![]),
        };
        PartSettings { service_account, depends_on, ..PartSettings::default() }
    }
}

#[tokio::test(flavor = "multi_thread")]
async fn a_tenant_part_is_applied_with_its_service_accounts_rights_only() {
    let site = Site::registered("tenants", true, |run| vec!["--tenant".into(), format!("{run}-a/{TENANT}")]).await;
    site.authenticate_with_token().await;
    let [a, b] = site.watched();
    let watch = site.watch_list();
    let args = ["--watch-namespaces", watch.as_str()];
    let settings = parts(a.clone());
    let user = format!("system:serviceaccount:{a}:{TENANT}");

    // 1. The RoleRequest's objects as the puller, the tenant's ConfigMap as the tenant, the
    // plain part as the puller.
    let mut files = role_request(&a);
    files.push(config_map("ClusterProfile.tenant", &a, "tenant", "v1"));
    files.push(config_map("ClusterProfile.app", &b, "plain", "v1"));
    let first = site.sync_released(1, &files, &args, |_| {}, &settings).await;
    airlock_e2e::assert_exit(&first, 0);
    assert_eq!(site.value(&a, "tenant").await.as_deref(), Some("v1"), "{first:?}");
    assert_eq!(site.value(&b, "plain").await.as_deref(), Some("v1"));
    assert!(site.holds("rolebinding", Some(&a), "configmaps"), "the RoleRequest's binding reached the cluster");
    assert_eq!(site.state_version().await, Some(1));

    // 2. What the tenant may not do fails as the tenant, though the puller could do it.
    assert!(site.authorizes("create", "", "secrets", Some(&a)).await && site.authorizes("create", "", "configmaps", Some(&b)).await);
    let mut files = role_request(&a);
    files.push(config_map("ClusterProfile.tenant", &a, "tenant", "v2"));
    files.push(config_map("ClusterProfile.app", &b, "plain", "v2"));
    files.push(config_map("ClusterProfile.wide", &b, "wide", "v1"));
    let secret = format!("apiVersion: v1\nkind: Secret\nmetadata:\n  name: wide\n  namespace: {a}\nstringData:\n  token: x\n");
    files.push(file("ClusterProfile.wide", "Secret", secret));
    let second = site.sync_released(2, &files, &args, |_| {}, &settings).await;
    airlock_e2e::assert_exit(&second, 1);
    for refused in [format!(r#"secrets "wide" is forbidden: User "{user}""#), format!(r#"configmaps "wide" is forbidden: User "{user}""#)] {
        assert!(second.stderr.contains(&refused), "the API server refused the tenant ({refused}): {second:?}");
    }
    assert!(!site.holds("secret", Some(&a), "wide") && !site.holds("configmap", Some(&b), "wide"), "nothing of the part written");
    assert_eq!(site.value(&a, "tenant").await.as_deref(), Some("v2"), "the tenant's other part applied");
    assert_eq!(site.value(&b, "plain").await.as_deref(), Some("v2"), "the plain part applied as the puller");

    // 3. A ServiceAccount the grant does not let the puller impersonate: nothing written.
    let mut files = role_request(&a);
    files.push(config_map("ClusterProfile.tenant", &a, "tenant", "v3"));
    files.push(config_map("ClusterProfile.app", &b, "plain", "v3"));
    files.push(config_map("ClusterProfile.intruder", &a, "intruder", "v1"));
    let third = site.sync_released(3, &files, &args, |_| {}, &settings).await;
    airlock_e2e::assert_exit(&third, 1);
    let named =
        format!("part ClusterProfile.intruder is applied as ServiceAccount {a}/{INTRUDER}, which fails: the puller may not impersonate it");
    assert!(third.stderr.contains(&named), "{third:?}");
    assert_eq!(site.value(&b, "plain").await.as_deref(), Some("v2"), "nothing applied, the plain part neither");
    assert_eq!(site.value(&a, "tenant").await.as_deref(), Some("v2"));
    assert!(!site.holds("configmap", Some(&a), INTRUDER));

    // 4. A ServiceAccount outside the watch-namespaces: refused by policy.
    let mut files = role_request(&a);
    files.push(config_map("ClusterProfile.outside", &a, "outside", "v1"));
    let fourth = site.sync_released(4, &files, &args, |_| {}, &settings).await;
    airlock_e2e::assert_exit(&fourth, 3);
    assert!(
        fourth.stderr.contains(&format!(
            "ClusterProfile.outside: ServiceAccount kube-system/default: namespace kube-system is outside watch-namespaces {watch}"
        )),
        "{fourth:?}"
    );
    assert!(!site.holds("configmap", Some(&a), "outside"));

    // 5. The tenant's part leaves: its ConfigMap is pruned, as the tenant.
    let mut files = role_request(&a);
    files.push(config_map("ClusterProfile.app", &b, "plain", "v5"));
    let fifth = site.sync_released(5, &files, &args, |_| {}, &settings).await;
    airlock_e2e::assert_exit(&fifth, 0);
    assert_eq!(site.value(&a, "tenant").await, None, "pruned: {fifth:?}");
    assert_eq!(site.value(&b, "plain").await.as_deref(), Some("v5"));
    assert_eq!(site.state_version().await, Some(5));
}
