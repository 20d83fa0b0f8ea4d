//! Least privilege: the RBAC that `airlock-publisher register cluster` generates
//! is applied to the managed Kubernetes 1.20 apiserver, then the puller's ServiceAccount is
//! impersonated (`Impersonate-User: system:serviceaccount:<ns>:airlock-puller`, the admin
//! token asking) in two ways: real API requests from a kube client, each allowed or
//! refused with 403 as the grant says, and the real `airlock-puller sync` with a kubeconfig
//! whose user carries `as:`, applying a signed bundle with exactly that RBAC.
//!
//! With `--watch-namespaces` the grant is Roles in the listed namespaces plus the
//! puller's own state; without it, a ClusterRole with every verb on every resource, as
//! Sveltos's agents have (documented in `register cluster --help`): that variant shows the
//! puller can write anywhere, and that nobody else in its namespace gains anything.

use airlock_e2e::probe::{Probe, Site};

/// Scoped registration: the puller may write in its watched namespaces and its own state,
/// and nothing else.
#[tokio::test(flavor = "multi_thread")]
async fn the_scoped_puller_can_do_its_job_and_nothing_outside_its_namespaces() {
    let site = Site::new("scoped", true).await;
    let puller = site.client_as(&site.service_account()).await;
    let [watched, other_watched] = site.watched();
    let outsider = site.unwatched();

    let mut p = Probe::default();
    p.allowed("apply a ConfigMap in a watched namespace", puller.apply_config_map(&watched, "probe").await);
    p.allowed("apply a Deployment in the other watched namespace", puller.apply_deployment(&other_watched).await);
    p.allowed("write the state Secret", puller.apply_secret(&site.puller_ns, "airlock-state-probe").await);
    p.allowed("read the state Secret", puller.get_secret(&site.puller_ns, "airlock-state-probe").await);
    p.allowed("write the report ConfigMap", puller.apply_config_map(&site.puller_ns, "airlock-report-probe").await);
    p.allowed("take the Lease", puller.apply_lease(&site.puller_ns).await);
    p.allowed("list namespaces", puller.list_namespaces().await);
    p.refused("read a Secret in kube-system", puller.get_secret("kube-system", "anything").await);
    p.refused("list Secrets in kube-system", puller.list_secrets("kube-system").await);
    p.refused("apply a ConfigMap in an unwatched namespace", puller.apply_config_map(&outsider, "probe").await);
    p.refused("apply a ConfigMap in default", puller.apply_config_map("default", "probe").await);
    p.refused("create a ClusterRoleBinding", puller.apply_cluster_role_binding(&site.run).await);
    p.refused("create a ClusterRole", puller.apply_cluster_role(&site.run).await);
    p.refused("create a Namespace", puller.apply_namespace(&format!("{}-new", site.run)).await);
    p.refused("delete an unwatched namespace", puller.delete_namespace(&outsider).await);
    p.refused("delete its own namespace", puller.delete_namespace(&site.puller_ns).await);
    // Kubernetes authorizes a request on namespace N's own object with the Roles in N: the
    // Role names its kinds, and `namespaces` is not one of them.
    p.refused("delete a watched namespace", puller.delete_namespace(&watched).await);
    p.assert_all();

    // The real puller, as the ServiceAccount: a bundle within the grant applies...
    let run =
        site.sync(1, &site.config_maps(&[watched.as_str(), other_watched.as_str()]), &["--watch-namespaces", &site.watch_list()]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(site.config_map_value(&watched).await.as_deref(), Some("v1"));
    // ...and one that adds a ClusterRole is refused by the policy before the grant is tried
    // (containment.rs shows the grant refusing it too): no state written, nothing created.
    let mut files = site.config_maps(&[watched.as_str(), other_watched.as_str()]);
    files.push(site.cluster_role_file());
    let run = site.sync(2, &files, &["--watch-namespaces", &site.watch_list()]).await;
    assert_eq!(run.code, Some(3), "{run:?}");
    assert!(run.stderr.contains("cluster-scoped and not in clusterScoped"), "the refusal is named: {run:?}");
    assert_eq!(site.state_version().await, Some(1), "the state still says version 1");
    assert!(!site.cluster_role_exists().await, "the ClusterRole was not created");
}

/// Cluster-wide registration: every kind in every namespace, by design; the grant is the
/// puller's alone.
#[tokio::test(flavor = "multi_thread")]
async fn the_cluster_wide_puller_can_write_anywhere_and_its_neighbours_nothing() {
    let site = Site::new("wide", false).await;
    let puller = site.client_as(&site.service_account()).await;
    let neighbour = site.client_as(&format!("system:serviceaccount:{}:default", site.puller_ns)).await;
    let outsider = site.unwatched();

    let mut p = Probe::default();
    p.allowed("apply a ConfigMap in any namespace", puller.apply_config_map(&outsider, "probe").await);
    p.allowed("read a Secret in kube-system (absent: 404)", puller.get_secret("kube-system", "absent").await);
    p.allowed("create a ClusterRole", puller.apply_cluster_role(&site.run).await);
    p.allowed("take the Lease", puller.apply_lease(&site.puller_ns).await);
    p.refused("neighbour: read the state Secret", neighbour.get_secret(&site.puller_ns, "airlock-state-probe").await);
    p.refused("neighbour: apply a ConfigMap", neighbour.apply_config_map(&outsider, "probe").await);
    p.refused("neighbour: take the Lease", neighbour.apply_lease(&site.puller_ns).await);
    p.assert_all();

    let mut files = site.config_maps(&[outsider.as_str()]);
    files.push(site.cluster_role_file());
    let run = site.sync(1, &files, &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert_eq!(site.config_map_value(&outsider).await.as_deref(), Some("v1"));
    assert!(site.cluster_role_exists().await, "the ClusterRole was applied");
}
