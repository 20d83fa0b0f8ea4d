//! Containment: with watch-namespaces, a bundle gains no permission outside them, shown
//! twice against the managed Kubernetes 1.20 apiserver. The registration of `register
//! cluster --watch-namespaces ... --allow-cluster-scoped PriorityClass.../<run>-allowed,...` is
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
//! 3. the allow-list end to end: a bundle signed with `clusterScoped` naming the two
//!    allowed PriorityClasses applies them.
//!
//! A second test sends hostile bundles at a registration with `--pod-security restricted`
//! (`containment/attacks.rs` builds them): setting the watched Namespaces' Pod Security or
//! operator-protected keys, writing Endpoints or an EndpointSlice, running a check outside
//! the namespaces, and having an object Airlock did not create deleted by force-recreate, an
//! adopted hook, a hook's re-creation, a Job check or prune. Each fails closed: its exit code, its error, and the
//! `uid/resourceVersion` of every object aimed at unchanged.

mod attacks;

use airlock_bundle::statement::ClusterScopedObject;
use airlock_e2e::probe::{Probe, Site};

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
        let allowed = allowed_priority_class(run);
        vec![
            "--allow-cluster-scoped".into(),
            format!("PriorityClass.scheduling.k8s.io/{allowed},PriorityClass.scheduling.k8s.io/{allowed}-2"),
        ]
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
    airlock_e2e::assert_exit(&policy, 3);
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
        .args(["--kubeconfig", &airlock_e2e::service_env("AIRLOCK_KUBECONFIG_MANAGED"), "delete", "priorityclass", "--ignore-not-found"])
        .args([allowed.as_str(), &format!("{run}-probe")])
        .output()
        .expect("kubectl runs");
    assert!(removed.status.success(), "{}", String::from_utf8_lossy(&removed.stderr));
    // Two of them: the grant names them, so the ownership check may read each but not list
    // their kind, and reads them one by one.
    let mut files = site.config_maps(&[watched.as_str()]);
    let mut entries = Vec::new();
    for name in [allowed.clone(), format!("{allowed}-2")] {
        let yaml = format!("apiVersion: scheduling.k8s.io/v1\nkind: PriorityClass\nmetadata:\n  name: {name}\nvalue: 1000\n");
        files.push((format!("ClusterProfile.app/PriorityClass.{name}.yaml"), yaml.into_bytes()));
        entries.push(ClusterScopedObject { group: "scheduling.k8s.io".into(), kind: "PriorityClass".into(), name });
    }
    let watch = ["--watch-namespaces", &site.watch_list()];
    let applied = site.sync_released(2, &files, &watch, |r| r.settings.cluster_scoped = entries, &|_| Default::default()).await;
    airlock_e2e::assert_exit(&applied, 0);
    for name in [allowed.clone(), format!("{allowed}-2")] {
        assert!(site.holds("priorityclass", None, &name), "the allow-listed PriorityClass {name} was applied");
    }
    assert_eq!(site.config_map_value(&watched).await.as_deref(), Some("v1"));
    assert_eq!(site.state_version().await, Some(2));
}

/// One hostile bundle: what it adds to the baseline, the checks of its part, and how the
/// puller must answer.
struct Attack {
    name: &'static str,
    files: Vec<attacks::File>,
    checks: Vec<airlock_bundle::statement::Check>,
    exit: i32,
    error: String,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_hostile_bundle_fails_closed_inside_its_namespaces() {
    use attacks::{config_map, namespace};
    let site = Site::registered("hostile", true, |_| vec!["--pod-security".into(), "restricted".into()]).await;
    let [a, b] = site.watched();
    let (x, own) = (site.unwatched(), site.puller_ns.clone());
    let watch = site.watch_list();
    let args = ["--watch-namespaces", watch.as_str(), "--protect-namespace-keys", "example.com/*"];
    let recreate = "airlock.dev/force-recreate: \"true\"";
    let (release, fires) = ("airlock.dev/helm-release: rel", "airlock.dev/hook: \"pre-install,pre-upgrade\"");
    let baseline = || {
        let mut files = site.config_maps(&[a.as_str()]);
        files.push(config_map("ClusterProfile.app", &a, "gone", "v1", "", ""));
        files.push(config_map("ClusterProfile.app", &a, "hook", "v1", fires, release));
        files.push(config_map("ClusterProfile.swap", &a, "swap", "v1", recreate, ""));
        files
    };
    let applied = site.sync_released(1, &baseline(), &args, |_| {}, &attacks::parts(Vec::new())).await;
    airlock_e2e::assert_exit(&applied, 0);
    let enforce = |ns: &str| {
        attacks::admin(&["get", "namespace", ns, "-o", "jsonpath={.metadata.labels.pod-security\\.kubernetes\\.io/enforce}"], "")
    };
    assert_eq!(enforce(&a), "restricted", "registration wrote the level");

    // What an admin made by hand: Airlock's `swap` and `hook` replaced by immutable
    // namesakes, and objects the attacks aim at.
    for name in ["swap", "hook"] {
        attacks::admin(&["delete", "configmap", name, "-n", &a], "");
        attacks::admin(&["create", "-f", "-"], &attacks::foreign_config_map(&a, name));
    }
    attacks::admin(&["create", "-f", "-"], &attacks::foreign_objects(&a));
    let aimed_at = [
        ("namespace", None, a.as_str()),
        ("namespace", None, b.as_str()),
        ("configmap", Some(a.as_str()), "cfg"),
        ("configmap", Some(a.as_str()), "swap"),
        ("configmap", Some(a.as_str()), "hook"),
        ("configmap", Some(a.as_str()), "adoptee"),
        ("endpoints", Some(a.as_str()), "web"),
        ("endpointslice", Some(a.as_str()), "web-stolen"),
        ("job", Some(a.as_str()), "migrate"),
        ("job", Some(x.as_str()), "migrate"),
    ];
    let before = attacks::snapshot(&aimed_at);

    let hook = "airlock.dev/hook: pre-install, airlock.dev/adopt: \"true\"";
    let adopt_and_recreate = format!("airlock.dev/adopt: \"true\", {recreate}");
    let protected = "protected: set by the cluster's operator, never by a bundle";
    let attacks = vec![
        Attack {
            name: "lower the watched Namespace's Pod Security level",
            files: vec![namespace(&a, "pod-security.kubernetes.io/enforce: privileged", "")],
            checks: Vec::new(),
            exit: 3,
            error: format!(
                "Namespace {a} (ClusterProfile.app/Namespace.{a}.yaml document 1): label pod-security.kubernetes.io/enforce {protected}"
            ),
        },
        Attack {
            name: "set a key the site protects",
            files: vec![namespace(&b, "", "example.com/exempt: \"true\"")],
            checks: Vec::new(),
            exit: 3,
            error: format!("Namespace {b} (ClusterProfile.app/Namespace.{b}.yaml document 1): annotation example.com/exempt {protected}"),
        },
        Attack {
            name: "redirect a Service with Endpoints",
            files: vec![attacks::endpoints(&a, "10.6.6.6")],
            checks: Vec::new(),
            exit: 3,
            error: format!(
                "Endpoints {a}/web (ClusterProfile.app/Endpoints.{a}.web.yaml document 1): Endpoints and EndpointSlices can redirect"
            ),
        },
        Attack {
            name: "redirect a Service with an EndpointSlice",
            files: vec![attacks::endpoint_slice(&a, "10.6.6.6")],
            checks: Vec::new(),
            exit: 3,
            error: format!("EndpointSlice.discovery.k8s.io {a}/web-stolen ("),
        },
        Attack {
            name: "run a check's Job outside the namespaces",
            files: Vec::new(),
            checks: vec![attacks::job_check(&x)],
            exit: 3,
            error: format!("Job {x}/migrate: namespace {x} is outside watch-namespaces {watch}"),
        },
        Attack {
            name: "query metrics outside the namespaces",
            files: Vec::new(),
            checks: vec![attacks::metrics_check(&format!("http://prometheus.{x}.svc:9090"), None)],
            exit: 3,
            error: format!("metrics source http://prometheus.{x}.svc:9090: namespace {x} is outside watch-namespaces"),
        },
        Attack {
            name: "send the puller's own Secret to a metrics source",
            files: Vec::new(),
            checks: vec![attacks::metrics_check(&format!("http://prometheus.{a}:9090"), Some((&own, "airlock-store-credentials")))],
            exit: 3,
            error: format!("Secret {own}/airlock-store-credentials: namespace {own} is the puller's own"),
        },
        Attack {
            name: "adopt a hand-made object as a Helm hook, which its policy deletes",
            files: vec![config_map("ClusterProfile.app", &a, "adoptee", "stolen", hook, "airlock.dev/helm-release: rel")],
            checks: Vec::new(),
            exit: 3,
            error: format!(
                "ConfigMap {a}/adoptee (no airlock.dev/cluster label; ClusterProfile.app/ConfigMap.{a}.adoptee.yaml document 1; a Helm hook is never adopted)"
            ),
        },
        Attack {
            name: "force-recreate a hand-made namesake of an inventory object",
            files: vec![config_map("ClusterProfile.swap", &a, "swap", "v2", recreate, "")],
            checks: Vec::new(),
            exit: 1,
            error: format!(
                "ConfigMap {a}/swap is not Airlock's for this cluster (no airlock.dev/cluster label): left in place, not deleted"
            ),
        },
        Attack {
            name: "fire a hook whose previous copy was replaced by a hand-made namesake",
            files: vec![config_map("ClusterProfile.app", &a, "hook", "v2", fires, release)],
            checks: Vec::new(),
            exit: 1,
            error: format!(
                "ConfigMap {a}/hook is not Airlock's for this cluster (no airlock.dev/cluster label): left in place, not deleted"
            ),
        },
        Attack {
            name: "adopt a hand-made object, then force-recreate it",
            files: vec![config_map("ClusterProfile.app", &a, "adoptee", "stolen", &adopt_and_recreate, "")],
            checks: Vec::new(),
            exit: 1,
            error: format!("not re-created: ConfigMap {a}/adoptee is adopted, and Airlock deletes only what it created"),
        },
        Attack {
            name: "delete a hand-made Job by a Job check of its name",
            files: Vec::new(),
            checks: vec![attacks::job_check(&a)],
            exit: 1,
            error: format!("Job {a}/migrate is not Airlock's for this cluster (no airlock.dev/cluster label): left in place, not deleted"),
        },
    ];
    let mut failures = Vec::new();
    for (version, attack) in (2..).zip(&attacks) {
        let mut files = baseline();
        // An attack's file replaces the baseline's of the same path.
        files.retain(|(path, _)| !attack.files.iter().any(|(p, _)| p == path));
        files.extend(attack.files.iter().cloned());
        let run = site.sync_released(version, &files, &args, |_| {}, &attacks::parts(attack.checks.clone())).await;
        let after = attacks::snapshot(&aimed_at);
        println!("| {} | {:?} | {} |", attack.name, run.code, run.stderr.lines().find(|l| l.contains(&attack.error)).unwrap_or("-").trim());
        let mut problems = Vec::new();
        if run.code != Some(attack.exit) {
            problems.push(format!("exit {:?}, expected {}", run.code, attack.exit));
        }
        if !run.stderr.contains(&attack.error) {
            problems.push(format!("stderr does not name {:?}", attack.error));
        }
        problems
            .extend(before.iter().filter(|(k, v)| after.get(*k) != Some(v)).map(|(k, v)| format!("{k}: {v} became {:?}", after.get(k))));
        if site.state_version().await != Some(1) {
            problems.push("the state moved".into());
        }
        if !problems.is_empty() {
            failures.push(format!("{}: {}\n{run:?}", attack.name, problems.join("; ")));
        }
    }
    assert!(failures.is_empty(), "{} of {} attacks got through:\n\n{}", failures.len(), attacks.len(), failures.join("\n\n"));
    // The grant agrees: no Endpoints nor EndpointSlices unless the registration allows them.
    assert!(!site.authorizes("create", "", "endpoints", Some(&a)).await, "Endpoints are not granted");
    assert!(!site.authorizes("patch", "discovery.k8s.io", "endpointslices", Some(&a)).await, "EndpointSlices are not granted");

    // A bundle may still label its Namespace: the forced apply takes only what it sets, so
    // the level stays the operator's. Prune leaves the hand-made namesakes of `gone` and
    // `swap`, which the bundle drops.
    attacks::admin(&["delete", "configmap", "gone", "-n", &a], "");
    attacks::admin(&["create", "-f", "-"], &attacks::foreign_config_map(&a, "gone"));
    let namesakes = [("configmap", Some(a.as_str()), "gone"), ("configmap", Some(a.as_str()), "swap")];
    let namesakes_before = attacks::snapshot(&namesakes);
    let mut files = site.config_maps(&[a.as_str()]);
    files.push(namespace(&a, "team: web", ""));
    let labelled = site.sync_released(20, &files, &args, |_| {}, &attacks::parts(Vec::new())).await;
    airlock_e2e::assert_exit(&labelled, 0);
    assert_eq!(enforce(&a), "restricted", "the forced apply left the level as it was");
    let airlock =
        attacks::admin(&["get", "namespace", &a, "-o", "jsonpath={.metadata.managedFields[?(@.manager==\"airlock\")].fieldsV1}"], "");
    assert!(airlock.contains("f:team") && !airlock.contains("pod-security"), "airlock owns its own label only: {airlock}");
    assert_eq!(attacks::snapshot(&namesakes), namesakes_before, "prune left the hand-made namesakes");
}
