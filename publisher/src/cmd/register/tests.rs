//! Unit tests of the registration YAML, read back from the bytes `register cluster` prints.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use airlock_bundle::{PublicKey, SigningKey};
use serde_json::{Value, json};

use super::manifests::registration_yaml;
use super::settings::tests::{flags, keyring_file};
use super::{management_objects, sveltos_cluster, write_to_dir};

/// The registration YAML for `args`, and its documents parsed back.
pub(super) fn render(args: &[&str]) -> (String, Vec<Value>) {
    let (_dir, keyring) = keyring_file();
    let reg = flags(&keyring, args).check().expect("valid flags");
    let yaml = registration_yaml(&reg).expect("renders");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&yaml).expect("output parses as YAML");
    (yaml, docs)
}

fn find<'a>(docs: &'a [Value], kind: &str, namespace: Option<&str>, name: &str) -> Option<&'a Value> {
    docs.iter().find(|d| d["kind"] == kind && d["metadata"]["name"] == name && d["metadata"]["namespace"].as_str() == namespace)
}

pub(super) fn get<'a>(docs: &'a [Value], kind: &str, namespace: Option<&str>, name: &str) -> &'a Value {
    find(docs, kind, namespace, name).unwrap_or_else(|| panic!("no {kind} {namespace:?}/{name}"))
}

fn kinds(docs: &[Value]) -> Vec<String> {
    docs.iter().map(|d| format!("{}/{}", d["kind"].as_str().unwrap(), d["metadata"]["name"].as_str().unwrap())).collect()
}

#[test]
fn without_watch_namespaces_grants_everything_cluster_wide() {
    let (_, docs) = render(&[]);
    assert_eq!(
        kinds(&docs),
        [
            "Namespace/airlock-system",
            "ServiceAccount/airlock-puller",
            "ClusterRole/airlock-puller:airlock-system",
            "ClusterRoleBinding/airlock-puller:airlock-system",
            "Role/airlock-puller-state",
            "RoleBinding/airlock-puller-state",
            "ConfigMap/airlock-puller",
            "Secret/airlock-report-key",
            "Secret/airlock-age-identity",
            "Service/airlock-puller",
            "CronJob/airlock-puller",
        ]
    );
    let rules = &get(&docs, "ClusterRole", None, "airlock-puller:airlock-system")["rules"];
    assert_eq!(rules[0], json!({"apiGroups": ["*"], "resources": ["*"], "verbs": ["*"]}));
    let binding = get(&docs, "ClusterRoleBinding", None, "airlock-puller:airlock-system");
    assert_eq!(binding["subjects"], json!([{"kind": "ServiceAccount", "name": "airlock-puller", "namespace": "airlock-system"}]));
    assert_eq!(binding["roleRef"]["kind"], "ClusterRole");

    let (_, docs) = render(&["--puller-namespace", "ops"]);
    let binding = get(&docs, "ClusterRoleBinding", None, "airlock-puller:ops");
    assert_eq!(binding["subjects"][0]["namespace"], "ops");
    get(&docs, "CronJob", Some("ops"), "airlock-puller");
}

#[test]
fn with_watch_namespaces_grants_namespaced_kinds_only_in_them() {
    let (_, docs) = render(&["--watch-namespaces", "web,monitoring"]);
    for ns in ["web", "monitoring"] {
        get(&docs, "Namespace", None, ns);
        let role = get(&docs, "Role", Some(ns), "airlock-puller:airlock-system");
        let rules = role["rules"].as_array().unwrap();
        assert_eq!(rules.len(), 2, "core kinds and built-in groups, no CRD listed: {rules:?}");
        assert_eq!(rules[0]["apiGroups"], json!([""]));
        assert!(rules[0]["resources"].as_array().unwrap().iter().all(|r| !r.as_str().unwrap().contains(['/', '*'])), "no subresource");
        for rule in rules {
            let verbs: Vec<&str> = rule["verbs"].as_array().unwrap().iter().map(|v| v.as_str().unwrap()).collect();
            assert_eq!(verbs, ["get", "list", "watch", "create", "update", "patch", "delete", "deletecollection"]);
            assert!(rule["apiGroups"].as_array().unwrap().iter().all(|g| g != "*"), "{rule}");
        }
        let binding = get(&docs, "RoleBinding", Some(ns), "airlock-puller:airlock-system");
        assert_eq!(
            binding["roleRef"],
            json!({"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "airlock-puller:airlock-system"})
        );
        assert_eq!(binding["subjects"][0]["namespace"], "airlock-system");
    }
    assert!(docs.iter().all(|d| d["metadata"]["namespace"] != "default"));
    let rules = get(&docs, "ClusterRole", None, "airlock-puller:airlock-system")["rules"].as_array().unwrap().clone();
    let resources: Vec<&str> =
        rules.iter().flat_map(|r| r["resources"].as_array().into_iter().flatten()).map(|r| r.as_str().unwrap()).collect();
    assert_eq!(resources, ["namespaces", "namespaces", "customresourcedefinitions"], "{rules:?}");
    assert_eq!(rules[2]["verbs"], json!(["get", "list", "watch"]), "no CRD listed: CRDs are read only");
    assert_eq!(rules[0]["verbs"], json!(["get", "list", "watch"]));
    assert_eq!(rules[1]["resourceNames"], json!(["web", "monitoring"]));
    assert_eq!(rules[1]["verbs"], json!(["patch", "update"]));
    assert!(rules[3]["nonResourceURLs"].as_array().unwrap().iter().all(|u| u != "*"));
    let state = get(&docs, "Role", Some("airlock-system"), "airlock-puller-state");
    assert_eq!(
        state["rules"][1],
        json!({"apiGroups": ["coordination.k8s.io"], "resources": ["leases"],
        "verbs": ["get", "list", "watch", "create", "update", "patch", "delete"]})
    );
}

#[test]
fn the_allow_list_is_granted_by_name_and_annotated() {
    let allowed =
        "PriorityClass.scheduling.k8s.io/edge-high,CustomResourceDefinition.apiextensions.k8s.io/widgets.example.com,Namespace/extra";
    let (_, docs) = render(&["--watch-namespaces", "web", "--allow-cluster-scoped", allowed]);
    let rules = get(&docs, "ClusterRole", None, "airlock-puller:airlock-system")["rules"].as_array().unwrap().clone();
    let shown: Vec<String> = rules
        .iter()
        .filter(|r| r["resources"].is_array())
        .map(|r| format!("{} {} {} {}", r["apiGroups"][0], r["resources"][0], r["verbs"], r["resourceNames"]))
        .collect();
    assert_eq!(
        shown,
        [
            r#""" "namespaces" ["get","list","watch"] null"#,
            r#""" "namespaces" ["patch","update"] ["web"]"#,
            r#""apiextensions.k8s.io" "customresourcedefinitions" ["get","list","watch"] null"#,
            r#""" "namespaces" ["create"] null"#,
            r#""" "namespaces" ["get","update","patch","delete"] ["extra"]"#,
            r#""apiextensions.k8s.io" "customresourcedefinitions" ["create"] null"#,
            r#""apiextensions.k8s.io" "customresourcedefinitions" ["get","update","patch","delete"] ["widgets.example.com"]"#,
            r#""scheduling.k8s.io" "priorityclasses" ["create"] null"#,
            r#""scheduling.k8s.io" "priorityclasses" ["get","update","patch","delete"] ["edge-high"]"#,
        ]
    );
    let role = get(&docs, "Role", Some("web"), "airlock-puller:airlock-system");
    assert_eq!(role["rules"][2]["apiGroups"], json!(["example.com"]));
    assert_eq!(role["rules"][2]["resources"], json!(["widgets"]));
}

#[test]
fn resources_are_guessed_from_kinds_as_kubernetes_does() {
    let guessed: Vec<String> =
        ["PriorityClass", "APIService", "Policy", "Gateway", "Mesh", "Box", "Switch", "ClusterRole"].map(super::rbac::resource_of).to_vec();
    assert_eq!(guessed, ["priorityclasses", "apiservices", "policies", "gateways", "meshes", "boxes", "switches", "clusterroles"]);
}

#[test]
fn cron_job_api_version_follows_the_flag() {
    let (_, docs) = render(&[]);
    assert_eq!(get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["apiVersion"], "batch/v1");
    let (_, docs) = render(&["--cronjob-api", "batch/v1beta1"]);
    assert_eq!(get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["apiVersion"], "batch/v1beta1");
}

#[test]
fn cron_job_runs_the_puller_non_root_and_read_only() {
    let (_, docs) = render(&["--schedule", "*/10 * * * *", "--image", "reg.example/puller:1"]);
    let cron = get(&docs, "CronJob", Some("airlock-system"), "airlock-puller");
    assert_eq!(cron["spec"]["schedule"], "*/10 * * * *");
    assert_eq!(cron["spec"]["concurrencyPolicy"], "Forbid");
    assert_eq!(cron["spec"]["successfulJobsHistoryLimit"], 3);
    let pod = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    assert_eq!(pod["serviceAccountName"], "airlock-puller");
    let c = &pod["containers"][0];
    assert_eq!(c["image"], "reg.example/puller:1");
    assert_eq!(c["command"], json!(["airlock-puller"]));
    assert_eq!(c["args"], json!(["sync", "--config", "/etc/airlock/config.json", "--age-identity", "/etc/airlock/age/identity.txt"]));
    let sc = &c["securityContext"];
    assert_eq!((&sc["runAsNonRoot"], &sc["runAsUser"], &sc["readOnlyRootFilesystem"]), (&json!(true), &json!(65532), &json!(true)));
    assert!(c["resources"]["requests"]["memory"].is_string() && c["resources"]["limits"]["memory"].is_string());
    let mounts: Vec<&str> = c["volumeMounts"].as_array().unwrap().iter().map(|m| m["mountPath"].as_str().unwrap()).collect();
    assert_eq!(mounts, ["/etc/airlock", "/tmp", "/var/lib/airlock/reports"]);
    let volumes = pod["volumes"].as_array().unwrap();
    assert_eq!(
        volumes[0]["projected"]["sources"],
        json!([{"configMap": {"name": "airlock-puller"}},
               {"secret": {"name": "airlock-report-key",
                           "items": [{"key": "report.key", "path": "report-key/report.key", "mode": 0o440}]}},
               {"secret": {"name": "airlock-age-identity",
                           "items": [{"key": "identity.txt", "path": "age/identity.txt", "mode": 0o440}]}}])
    );
    assert_eq!(c["volumeMounts"][0], json!({"name": "config", "mountPath": "/etc/airlock", "readOnly": true}));
    assert!(volumes[1]["emptyDir"].is_object() && volumes[2]["emptyDir"].is_object());
    let service = get(&docs, "Service", Some("airlock-system"), "airlock-puller");
    assert_eq!(service["spec"]["ports"][0]["port"], 9090);
    assert_eq!(service["spec"]["selector"], pod_labels(cron));
}

fn pod_labels(cron: &Value) -> Value {
    cron["spec"]["jobTemplate"]["spec"]["template"]["metadata"]["labels"].clone()
}

#[test]
fn config_map_holds_the_keyring_and_exactly_the_puller_settings() {
    let (_dir, keyring) = keyring_file();
    let reg = flags(&keyring, &["--watch-namespaces", "web"]).check().unwrap();
    let docs: Vec<Value> = serde_saphyr::from_multiple(&registration_yaml(&reg).unwrap()).unwrap();
    let data = &get(&docs, "ConfigMap", Some("airlock-system"), "airlock-puller")["data"];
    assert_eq!(data["keyring.json"].as_str().unwrap().as_bytes(), std::fs::read(&keyring).unwrap());
    let config: Value = serde_json::from_str(data["config.json"].as_str().unwrap()).unwrap();
    assert_eq!(
        config,
        json!({"source": "oci+http://127.0.0.1:5000/airlock", "cluster": "fleet/edge-1",
               "keyring": "/etc/airlock/keyring.json", "watchNamespaces": ["web"], "namespacePolicy": "reject",
               "stateNamespace": "airlock-system", "reportTo": "/var/lib/airlock/reports",
               "reportKey": "/etc/airlock/report-key/report.key", "pushReports": true, "reportEvery": "30m"})
    );
    let (_, docs) = render(&[]);
    let data = &get(&docs, "ConfigMap", Some("airlock-system"), "airlock-puller")["data"];
    let config: Value = serde_json::from_str(data["config.json"].as_str().unwrap()).unwrap();
    assert_eq!(config["watchNamespaces"], Value::Null);
}

#[test]
fn credentials_secret_only_with_credentials_and_mounted_as_docker_config() {
    let (_, docs) = render(&[]);
    let own_keys = ["airlock-report-key", "airlock-age-identity"];
    assert!(docs.iter().all(|d| d["kind"] != "Secret" || own_keys.iter().any(|k| d["metadata"]["name"] == *k)));
    let cron = get(&docs, "CronJob", Some("airlock-system"), "airlock-puller");
    let env = &cron["spec"]["jobTemplate"]["spec"]["template"]["spec"]["containers"][0]["env"];
    assert!(env.as_array().unwrap().iter().all(|e| e["name"] != "DOCKER_CONFIG"));

    let (dir, _) = keyring_file();
    let config = dir.path().join("config.json");
    std::fs::write(&config, r#"{"auths":{"127.0.0.1:5000":{"auth":"dTpw"}}}"#).unwrap();
    let (_, docs) = render(&["--docker-config", config.to_str().unwrap()]);
    let secret = get(&docs, "Secret", Some("airlock-system"), "airlock-store-credentials");
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    use base64::Engine;
    let decoded = base64::engine::general_purpose::STANDARD.decode(secret["data"][".dockerconfigjson"].as_str().unwrap());
    assert_eq!(decoded.unwrap(), std::fs::read(&config).unwrap());
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let c = &pod["containers"][0];
    assert!(c["env"].as_array().unwrap().contains(&json!({"name": "DOCKER_CONFIG", "value": "/var/lib/airlock/docker"})));
    assert!(c["volumeMounts"].as_array().unwrap().iter().any(|m| m["mountPath"] == "/var/lib/airlock/docker"));
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "store-credentials").unwrap();
    assert_eq!(volume["secret"]["items"], json!([{"key": ".dockerconfigjson", "path": "config.json"}]));
}

#[test]
fn output_is_deterministic_given_the_keys_and_starts_each_document_with_its_kind() {
    let (dir, keyring) = keyring_file();
    let key = report_key_file(dir.path(), 0o600);
    let identity = super::age_tests::identity_file(dir.path(), "current.txt", &[1]);
    let args = [
        "--labels",
        "tier=prod,region=eu",
        "--watch-namespaces",
        "web,monitoring",
        "--report-key-file",
        &key,
        "--age-identity-file",
        &identity,
    ];
    let yaml = || registration_yaml(&flags(&keyring, &args).check().unwrap()).unwrap();
    let (first, second) = (yaml(), yaml());
    let docs: Vec<Value> = serde_saphyr::from_multiple(&first).unwrap();
    assert_eq!(first, second);
    assert_eq!(first.matches("\n---\n").count() + 1, docs.len(), "{first}");
    assert!(first.starts_with("apiVersion: v1\nkind: Namespace\n"), "{first}");
}

#[test]
fn sveltos_cluster_carries_pull_mode_labels_and_annotation() {
    let (dir, keyring) = keyring_file();
    let reg = flags(&keyring, &["--labels", "region=eu,tier=prod", "--watch-namespaces", "web,monitoring"]).check().unwrap();
    let object = sveltos_cluster(&reg);
    let public = reg.report_key.public.to_openssh("fleet/edge-1");
    let recipient = reg.age.as_ref().expect("an age identity").recipient().to_string();
    assert_eq!(
        object,
        json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
               "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"region": "eu", "tier": "prod"},
                            "annotations": {"agent.projectsveltos.io/watch-namespaces": "web,monitoring",
                                            "airlock.dev/report-key": public, "airlock.dev/report-interval": "30m",
                                            "airlock.dev/age-recipient": recipient}},
               "spec": {"pullMode": true}})
    );
    let out = dir.path().join("clusters");
    write_to_dir(&out, std::slice::from_ref(&object)).unwrap();
    let text = std::fs::read_to_string(out.join("fleet.edge-1.sveltoscluster.yaml")).unwrap();
    assert_eq!(serde_saphyr::from_str::<Value>(&text).unwrap(), object);

    let plain = flags(&keyring, &["--no-encryption"]).check().unwrap();
    let annotations = sveltos_cluster(&plain)["metadata"]["annotations"].as_object().unwrap().clone();
    assert_eq!(
        annotations.keys().collect::<Vec<_>>(),
        ["airlock.dev/plaintext-secrets", "airlock.dev/report-interval", "airlock.dev/report-key"]
    );
    let hourly = flags(&keyring, &["--report-every", "60m"]).check().unwrap();
    assert_eq!(sveltos_cluster(&hourly)["metadata"]["annotations"]["airlock.dev/report-interval"], "1h");
    let contained =
        flags(&keyring, &["--watch-namespaces", "web", "--allow-cluster-scoped", "Namespace/zz,Namespace/extra"]).check().unwrap();
    assert_eq!(
        sveltos_cluster(&contained)["metadata"]["annotations"]["airlock.dev/cluster-scoped"],
        "Namespace/extra,Namespace/zz",
        "sorted"
    );
}

/// A PKCS#8 key file with a fixed key and `mode`; its path.
fn report_key_file(dir: &Path, mode: u32) -> String {
    let path = dir.join(format!("report-{mode:o}.key"));
    std::fs::write(&path, SigningKey::from_seed([4; 32]).to_pkcs8_pem()).unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
    path.to_str().unwrap().to_string()
}

#[test]
fn each_registration_makes_a_report_key_whose_public_half_goes_on_the_cluster() {
    let (_dir, keyring) = keyring_file();
    let (a, b) = (flags(&keyring, &[]).check().unwrap(), flags(&keyring, &[]).check().unwrap());
    assert_ne!(a.report_key.public, b.report_key.public, "a fresh key per registration");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&registration_yaml(&a).unwrap()).unwrap();
    let secret = get(&docs, "Secret", Some("airlock-system"), "airlock-report-key");
    assert_eq!(secret["type"], "Opaque");
    use base64::Engine;
    let pem = base64::engine::general_purpose::STANDARD.decode(secret["data"]["report.key"].as_str().unwrap()).unwrap();
    let private = SigningKey::from_pkcs8_pem(std::str::from_utf8(&pem).unwrap()).unwrap();
    assert_eq!(private.public(), a.report_key.public);
    let annotation = sveltos_cluster(&a)["metadata"]["annotations"]["airlock.dev/report-key"].as_str().unwrap().to_string();
    assert!(annotation.starts_with("ssh-ed25519 ") && annotation.ends_with(" fleet/edge-1"), "{annotation}");
    assert_eq!(PublicKey::parse(&annotation).unwrap(), private.public());
    assert!(!format!("{a:?}").contains("PRIVATE KEY"), "Debug never shows the private key");
}

#[test]
fn keeps_the_report_key_file_given_and_refuses_a_readable_one() {
    let (dir, keyring) = keyring_file();
    let key = report_key_file(dir.path(), 0o600);
    let reg = flags(&keyring, &["--report-key-file", &key]).check().unwrap();
    assert_eq!(reg.report_key.public, SigningKey::from_seed([4; 32]).public());
    let open = report_key_file(dir.path(), 0o644);
    let err = format!("{:#}", flags(&keyring, &["--report-key-file", &open]).check().unwrap_err());
    assert!(err.contains("--report-key-file") && err.contains("too open") && err.contains("report-644.key"), "{err}");
}

/// A registration with `--token` and registry credentials, and its YAML documents.
fn token_registration(extra: &[&str]) -> (super::settings::Registration, Vec<Value>) {
    let (dir, keyring) = keyring_file();
    let password = dir.path().join("password");
    std::fs::write(&password, "t0ken").unwrap();
    let mut args = vec!["--registry-username", "puller", "--registry-password-file", password.to_str().unwrap()];
    args.extend_from_slice(extra);
    let reg = flags(&keyring, &args).check().expect("valid flags");
    let docs = serde_saphyr::from_multiple(&registration_yaml(&reg).unwrap()).unwrap();
    (reg, docs)
}

#[test]
fn token_writes_the_management_secret_before_the_cluster_that_points_at_it() {
    let (reg, _) = token_registration(&["--token", "--token-expires-at", "2031-01-01T00:00:00Z", "--puller-namespace", "ops"]);
    let objects = management_objects(&reg);
    let kinds: Vec<&str> = objects.iter().map(|o| o["kind"].as_str().unwrap()).collect();
    assert_eq!(kinds, ["Secret", "SveltosCluster"]);
    let (secret, cluster) = (&objects[0], &objects[1]);
    assert_eq!(secret["metadata"]["name"], "edge-1-store-credentials");
    assert_eq!(secret["metadata"]["namespace"], "fleet");
    assert_eq!(secret["metadata"]["annotations"]["airlock.dev/expires-at"], "2031-01-01T00:00:00Z");
    assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
    use base64::Engine;
    let config = base64::engine::general_purpose::STANDARD.decode(secret["data"][".dockerconfigjson"].as_str().unwrap()).unwrap();
    assert_eq!(config, reg.login.as_ref().unwrap().bytes(), "seeded with the credentials the YAML carries");
    let annotations = &cluster["metadata"]["annotations"];
    assert_eq!(annotations["airlock.dev/store-credentials"], "edge-1-store-credentials");
    assert_eq!(annotations["airlock.dev/puller-namespace"], "ops");

    let dir = tempfile::tempdir().unwrap();
    write_to_dir(dir.path(), &objects).unwrap();
    let mut files: Vec<String> = std::fs::read_dir(dir.path()).unwrap().map(|e| e.unwrap().file_name().into_string().unwrap()).collect();
    files.sort();
    assert_eq!(files, ["fleet.edge-1-store-credentials.secret.yaml", "fleet.edge-1.sveltoscluster.yaml"]);
    let text = std::fs::read_to_string(dir.path().join(&files[0])).unwrap();
    assert_eq!(&serde_saphyr::from_str::<Value>(&text).unwrap(), secret);

    let (plain, _) = token_registration(&[]);
    assert_eq!(management_objects(&plain).len(), 1, "no --token: the SveltosCluster alone");
    let annotations = management_objects(&plain)[0]["metadata"]["annotations"].as_object().unwrap().clone();
    assert!(!annotations.contains_key("airlock.dev/store-credentials"));
}

#[test]
fn token_credentials_secret_carries_its_expiry_and_the_cron_job_mounts_it() {
    let (_, docs) = token_registration(&["--token", "--token-expires-at", "2031-01-01T00:00:00Z"]);
    let secret = get(&docs, "Secret", Some("airlock-system"), "airlock-store-credentials");
    assert_eq!(secret["metadata"]["annotations"]["airlock.dev/expires-at"], "2031-01-01T00:00:00Z");
    use base64::Engine;
    let expires = base64::engine::general_purpose::STANDARD.decode(secret["data"]["expires-at"].as_str().unwrap()).unwrap();
    assert_eq!(expires, b"2031-01-01T00:00:00Z");
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "store-credentials").unwrap();
    assert_eq!(
        volume["secret"]["items"],
        json!([{"key": ".dockerconfigjson", "path": "config.json"}, {"key": "expires-at", "path": "expires-at"}])
    );
    // The relayed Secret lands in the puller's own namespace, where the state Role already
    // lets the puller write Secrets, whatever the watch-namespaces.
    let (_, scoped) = token_registration(&["--token", "--token-ttl", "1h", "--watch-namespaces", "web"]);
    let state = get(&scoped, "Role", Some("airlock-system"), "airlock-puller-state");
    assert_eq!(state["rules"][0]["resources"], json!(["secrets", "configmaps"]));
    assert!(state["rules"][0]["verbs"].as_array().unwrap().contains(&json!("patch")));

    let (_, long_lived) = token_registration(&[]);
    let secret = get(&long_lived, "Secret", Some("airlock-system"), "airlock-store-credentials");
    assert!(secret["metadata"]["annotations"].is_null() && secret["data"]["expires-at"].is_null());
}

#[test]
fn git_token_credentials_are_an_opaque_secret_mounted_as_the_git_credentials_file() {
    let (dir, keyring) = keyring_file();
    let password = dir.path().join("password");
    std::fs::write(&password, "t0ken\n").unwrap();
    let login = ["--git-username", "edge-1", "--git-password-file", password.to_str().unwrap()];
    let mut f = flags(&keyring, &[&login[..], &["--token", "--token-expires-at", "2031-01-01T00:00:00Z"]].concat());
    f.source = "git+http://127.0.0.1:8418/fleet.git#prod".into();
    let reg = f.check().expect("valid flags");
    let docs: Vec<Value> = serde_saphyr::from_multiple(&registration_yaml(&reg).unwrap()).unwrap();
    use base64::Engine;
    let decode = |v: &Value| base64::engine::general_purpose::STANDARD.decode(v.as_str().unwrap()).unwrap();
    let line = b"http://edge-1:t0ken@127.0.0.1:8418\n";
    for secret in [get(&docs, "Secret", Some("airlock-system"), "airlock-store-credentials"), &management_objects(&reg)[0]] {
        assert_eq!(secret["type"], "Opaque");
        assert_eq!(decode(&secret["data"]["git-credentials"]), line);
        assert_eq!(secret["metadata"]["annotations"]["airlock.dev/expires-at"], "2031-01-01T00:00:00Z");
    }
    let pod = &get(&docs, "CronJob", Some("airlock-system"), "airlock-puller")["spec"]["jobTemplate"]["spec"]["template"]["spec"];
    let env = pod["containers"][0]["env"].as_array().unwrap();
    assert!(env.contains(&json!({"name": "AIRLOCK_GIT_CREDENTIALS", "value": "/var/lib/airlock/git/git-credentials"})), "{env:?}");
    assert!(env.iter().all(|e| e["name"] != "DOCKER_CONFIG"));
    assert!(pod["containers"][0]["volumeMounts"].as_array().unwrap().iter().any(|m| m["mountPath"] == "/var/lib/airlock/git"));
    let volume = pod["volumes"].as_array().unwrap().iter().find(|v| v["name"] == "store-credentials").unwrap();
    assert_eq!(
        volume["secret"]["items"],
        json!([{"key": "git-credentials", "path": "git-credentials"}, {"key": "expires-at", "path": "expires-at"}])
    );
}
