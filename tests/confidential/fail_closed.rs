//! A cluster without an age recipient, published to the real registry and Git server and
//! exported to an archive: a profile that deploys a Secret, and one whose source is marked
//! `airlock.dev/confidential`, are refused for it, naming the cluster and the two ways
//! out, while a third profile publishes; no store, history, archive, log or report holds
//! a marker of theirs, and the cluster's puller applies the third profile only. Annotated
//! `airlock.dev/plaintext-secrets: allow`, the same cluster gets the Secret in clear, which
//! proves the searches find it, and the signed statement says so.

use super::*;

#[tokio::test(flavor = "multi_thread")]
async fn a_cluster_without_a_recipient_gets_no_secret_in_clear() {
    let Stores { run, dir, keys, registry, git_url, git_store } = Stores::new("clear", "fail-closed");
    let path = |name: &str| dir.path().join(name).to_str().expect("UTF-8 temp path").to_string();
    let markers = Markers::new(&run);
    let (marked, plain) = (format!("marked-{run}-Zq8r"), format!("plain-{run}-Hy2c"));
    let (app_ns, state_ns) = (format!("{run}-app"), format!("{run}-st"));
    let _cleanup = ManagedNamespaces(vec![app_ns.clone(), state_ns.clone()]);

    std::fs::create_dir(path("management")).expect("management dir");
    let cluster = |annotations: &str| {
        format!(
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: bare\n  namespace: {run}\n  \
             labels: {{conf: \"on\"}}{annotations}\nspec: {{pullMode: true}}\n"
        )
    };
    std::fs::write(path("management/cluster.yaml"), cluster("")).expect("cluster");
    std::fs::write(path("management/profile.yaml"), markers.management_set(&run, &app_ns)).expect("Secret profile");
    let config_map = |name: &str, marker: &str| {
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {name}\n  namespace: {app_ns}\ndata:\n  marker: {marker}\n")
    };
    let profile = |name: &str, body: &str, annotations: &str| {
        let body: String = body.lines().map(|l| format!("    {l}\n")).collect();
        format!(
            "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata:\n  name: {run}-{name}\nspec:\n  \
             clusterSelector:\n    matchLabels: {{conf: \"on\"}}\n  policyRefs:\n    - {{kind: ConfigMap, namespace: {run}, name: {name}}}\n\
             ---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {name}, namespace: {run}{annotations}}}\ndata:\n  objects.yaml: |\n{body}"
        )
    };
    let others = format!(
        "{}---\n{}",
        profile("marked", &config_map("marked", &marked), ", annotations: {airlock.dev/confidential: \"true\"}"),
        profile("plain", &config_map("plain", &plain), "")
    );
    std::fs::write(path("management/others.yaml"), others).expect("other profiles");

    let publish =
        |to: &str| tool(airlock_e2e::publisher_bin(), &["publish", "--from-dir", &path("management"), "--to", to], &["--key", &keys.key]);
    let edge = format!("{run}/bare");
    let mut logs = String::new();
    for to in [&registry, &git_store] {
        let out = publish(to);
        assert_eq!(out.code, Some(2), "the cluster fails, having failed profiles: {out:?}");
        for part in [
            format!("{edge}: Secret {app_ns}/app-credentials"),
            format!("{edge}: ConfigMap {app_ns}/marked"),
            "airlock-publisher register cluster".to_string(),
            "airlock.dev/plaintext-secrets: allow".to_string(),
        ] {
            assert!(out.stderr.contains(&part) || out.stdout.contains(&part), "{part:?} in {out:?}");
        }
        logs.push_str(&format!("{}{}", out.stdout, out.stderr));
    }
    let archive = path("fleet.tar");
    export(&registry, &archive, &keys);

    // The cluster's puller, with no identity, applies what was published: the plain profile.
    let client = airlock_e2e::kube_client(&airlock_e2e::service_env(MANAGED)).await;
    for ns in [&app_ns, &state_ns] {
        airlock_e2e::create_namespace(&client, ns).await;
    }
    let report = path("reports");
    std::fs::create_dir(&report).expect("report dir");
    let sync = tool(
        airlock_e2e::puller_bin(),
        &["sync", "--source", &registry, "--cluster", &edge, "--keyring", &keys.keyring_path, "--state-namespace", &state_ns],
        &["--report-to", &report, "--kubeconfig", &airlock_e2e::service_env(MANAGED)],
    );
    assert_eq!(sync.code, Some(0), "{sync:?}");
    logs.push_str(&format!("{}{}", sync.stdout, sync.stderr));
    for entry in std::fs::read_dir(&report).expect("report dir") {
        logs.push_str(&std::fs::read_to_string(entry.expect("report").path()).expect("report text"));
    }
    let live = kubectl_ok(MANAGED, &["get", "configmap", "-n", &app_ns, "plain", "-o", "jsonpath={.data.marker}"], b"");
    assert_eq!(live, plain);
    assert_absent(&app_ns, "app-credentials");
    assert!(!kubectl(MANAGED, &["get", "configmap", "-n", &app_ns, "marked"], b"").status.success(), "the marked ConfigMap stayed out");

    let registry_data = Path::new(&airlock_e2e::service_env("AIRLOCK_STATE")).join("registry-plain/data/docker/registry/v2");
    let stored = registry_texts(&registry_data, &run);
    let history = git_history(&airlock_e2e::service_env("AIRLOCK_GIT_ROOT"), &run);
    let carried = archive_texts(Path::new(&archive));
    let mut needles = markers.secret_needles();
    needles.extend([markers.clear.clone(), marked.clone(), B64.encode(&marked)]);
    for (what, text) in [("registry storage", &stored), ("Git history", &history), ("archive", &carried), ("logs and report", &logs)] {
        if what != "logs and report" {
            assert!(text.contains(&plain), "{what}: the search must find the published profile's marker");
        }
        for needle in &needles {
            assert!(!text.contains(needle), "{what} holds a refused marker ({needle})");
        }
    }

    // Allowed in clear: the Secret is published so, and the statement signs the choice.
    std::fs::write(path("management/cluster.yaml"), cluster("\n  annotations: {airlock.dev/plaintext-secrets: allow}")).expect("cluster");
    let out = publish(&git_store);
    assert_eq!(out.code, Some(0), "{out:?}");
    assert!(
        git_history(&airlock_e2e::service_env("AIRLOCK_GIT_ROOT"), &run).contains(&markers.plain),
        "the search finds a Secret in clear"
    );
    let checkout = dir.path().join("checkout");
    git(dir.path(), &["clone", "-q", &git_url, checkout.to_str().expect("UTF-8")]);
    let payload = statement(&checkout, &run, "bare");
    assert_eq!(payload["predicate"]["allowPlaintextSecrets"], true, "signed for the puller");
}
