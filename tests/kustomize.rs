//! Kustomizations built with kubectl's kustomize (kubectl 1.32 from hack/helm.sh) from the
//! sources Sveltos reads: a ConfigMap holding `kustomize.tar.gz`, and a Flux GitRepository
//! on the test services' Git server (`$AIRLOCK_GIT_HTTP`), built by the library and by
//! `airlock-publisher publish` following a branch. The trees are the Sveltos
//! documentation's hello-world with a production overlay.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

use airlock_publisher::render::kustomize::{GitRef, KustomizeError, KustomizeRequest, KustomizeSource, Kustomizer, commit_of};
use base64::Engine;
use serde_json::{Value, json};

const BASE: &[(&str, &str)] = &[
    ("base/kustomization.yaml", "resources: [deployment.yaml, service.yaml, configmap.yaml]\n"),
    (
        "base/deployment.yaml",
        "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: the-deployment\n  labels:\n    region: '{{ default \"west\" .Region }}'\nspec:\n  selector:\n    matchLabels: {app: hello}\n  template:\n    metadata:\n      labels: {app: hello}\n    spec:\n      containers:\n      - name: hello\n        image: 'nginx:{{ .Version }}'\n",
    ),
    (
        "base/service.yaml",
        "apiVersion: v1\nkind: Service\nmetadata:\n  name: the-service\nspec:\n  selector: {app: hello}\n  ports:\n  - port: 80\n    protocol: TCP\n",
    ),
    ("base/configmap.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  altGreeting: Good Morning!\n"),
    ("overlays/production/kustomization.yaml", "namePrefix: production-\nresources: [../../base]\n"),
    (
        "components/replicas/kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\npatches:\n- target: {kind: Deployment}\n  patch: |\n    - op: add\n      path: /spec/replicas\n      value: 3\n",
    ),
];

fn write_tree(dir: &Path, files: &[(&str, &str)]) {
    for (path, text) in files {
        let at = dir.join(path);
        std::fs::create_dir_all(at.parent().unwrap()).unwrap();
        std::fs::write(at, text).unwrap();
    }
}

/// `tar -czf kustomize.tar.gz -C <dir> .`, as Sveltos's documentation makes it.
fn config_map(files: &[(&str, &str)]) -> Value {
    let dir = tempfile::tempdir().expect("tempdir");
    write_tree(dir.path(), files);
    let out = Command::new("tar").arg("-czf").arg("-").arg("-C").arg(dir.path()).arg(".").output().expect("tar runs");
    assert!(out.status.success());
    let encoded = base64::engine::general_purpose::STANDARD.encode(out.stdout);
    json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "kustomize", "namespace": "default"}, "binaryData": {"kustomize.tar.gz": encoded}})
}

fn names(objects: &[Value]) -> Vec<String> {
    objects
        .iter()
        .map(|o| {
            format!(
                "{}/{}/{}",
                o["kind"].as_str().unwrap(),
                o["metadata"]["namespace"].as_str().unwrap_or("-"),
                o["metadata"]["name"].as_str().unwrap()
            )
        })
        .collect()
}

fn request<'a>(source: &'a KustomizeSource, path: &'a str, values: &'a BTreeMap<String, String>) -> KustomizeRequest<'a> {
    KustomizeRequest {
        origin: "ClusterProfile/kustomize: ConfigMap default/kustomize",
        source,
        path,
        components: &[],
        target_namespace: Some("production"),
        values,
    }
}

#[test]
fn builds_an_overlay_from_a_config_map_tarball() {
    let kustomizer = Kustomizer::locate(Some(&airlock_e2e::kustomize_kubectl())).expect("kubectl runs");
    assert_eq!(kustomizer.kustomize_version(), "v5.5.0");
    let source = KustomizeSource::from_config_map(&config_map(BASE), "ClusterProfile/kustomize").expect("a tarball");
    let values = BTreeMap::from([("Region".to_string(), "east".to_string()), ("Version".to_string(), "v1.2.0".to_string())]);
    let objects = kustomizer.build(&request(&source, "./overlays/production/", &values)).expect("builds");
    assert_eq!(
        names(&objects),
        [
            "ConfigMap/production/production-the-map",
            "Service/production/production-the-service",
            "Deployment/production/production-the-deployment"
        ]
    );
    let deployment = &objects[2];
    assert_eq!(deployment["metadata"]["labels"]["region"], "east");
    assert_eq!(deployment["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:v1.2.0");

    // Another cluster: same build, other values; kubectl does not run again.
    let before = kustomizer.invocations();
    let west = BTreeMap::from([("Region".to_string(), String::new()), ("Version".to_string(), "v1.3.0".to_string())]);
    let objects = kustomizer.build(&request(&source, "./overlays/production/", &west)).expect("builds");
    assert_eq!(objects[2]["metadata"]["labels"]["region"], "west");
    assert_eq!(kustomizer.invocations(), before);

    // Without values nothing is templated; components are appended to the kustomization.
    let components = ["../../components/replicas".to_string()];
    let none = BTreeMap::new();
    let with = KustomizeRequest { components: &components, ..request(&source, "overlays/production", &none) };
    let objects = kustomizer.build(&with).expect("builds");
    assert_eq!(objects[2]["spec"]["replicas"], 3);
    assert_eq!(objects[2]["metadata"]["labels"]["region"], "{{ default \"west\" .Region }}");
}

#[test]
fn refuses_a_kustomization_that_reads_outside_its_tree() {
    let kustomizer = Kustomizer::locate(Some(&airlock_e2e::kustomize_kubectl())).expect("kubectl runs");
    let none = BTreeMap::new();
    for text in [
        "configMapGenerator: [{name: keys, files: [/etc/hostname]}]\n",
        "resources: [../../../../etc]\n",
        "resources: [github.com/kubernetes-sigs/kustomize//examples/helloWorld?ref=v5.5.0]\n",
    ] {
        let source = KustomizeSource::from_config_map(&config_map(&[("app/kustomization.yaml", text)]), "o").expect("a tarball");
        let err = kustomizer.build(&request(&source, "app", &none)).unwrap_err();
        assert!(matches!(err, KustomizeError::Escape { .. }), "{text}: {err}");
    }
    let source = KustomizeSource::from_config_map(&config_map(&[("app/kustomization.yml", "resources: []\n")]), "o").expect("a tarball");
    let err = kustomizer.build(&request(&source, "app", &none)).unwrap_err();
    assert!(matches!(&err, KustomizeError::Source { message, .. } if message.contains("kustomization.yaml")), "{err}");
}

/// kubectl run as the publisher runs it, through `airlock-publisher sandbox-exec`, on a
/// tree whose kustomization names a file outside it: Landlock refuses the read even with
/// the tree check out of the way, while the same kubectl unconfined reads the file, so the
/// refusal is the sandbox's.
#[test]
fn the_sandbox_keeps_kustomize_out_of_the_publishers_files() {
    let secret = tempfile::tempdir().expect("tempdir");
    let key = secret.path().join("signing.key");
    let marker = "planted-signing-key-7d1f0c";
    std::fs::write(&key, marker).expect("write the planted key");
    let tree = tempfile::tempdir().expect("tempdir");
    let kustomization = format!("configMapGenerator: [{{name: keys, files: [{}]}}]\n", key.display());
    write_tree(tree.path(), &[("kustomization.yaml", kustomization.as_str())]);
    let kubectl = airlock_e2e::kustomize_kubectl();
    let build = ["kustomize", "--load-restrictor", "LoadRestrictionsNone", "--"];

    let unconfined = Command::new(&kubectl).args(build).arg(tree.path()).output().expect("kubectl runs");
    assert!(unconfined.status.success(), "{}", String::from_utf8_lossy(&unconfined.stderr));
    assert!(String::from_utf8_lossy(&unconfined.stdout).contains(marker), "without the sandbox the attack reads the key");

    // The build through `airlock-publisher sandbox-exec`, allowed to read the tree and `more`.
    let confined = |more: Option<&Path>| {
        let mut command = Command::new(airlock_e2e::publisher_bin());
        command.args(["sandbox-exec", "--read"]).arg(tree.path());
        if let Some(dir) = more {
            command.arg("--read").arg(dir);
        }
        command.args(["--read", "/dev/null", "--"]).arg(&kubectl).args(build).arg(tree.path()).env_clear();
        command.output().expect("airlock-publisher runs")
    };

    let refused = confined(None);
    let (stdout, stderr) = (String::from_utf8_lossy(&refused.stdout), String::from_utf8_lossy(&refused.stderr));
    assert!(!refused.status.success(), "the confined build must fail: {stdout}");
    assert!(stderr.contains("permission denied"), "{stderr}");
    assert!(!stdout.contains(marker) && !stderr.contains(marker), "the key's bytes leaked: {stdout} {stderr}");

    let allowed = confined(Some(secret.path()));
    assert!(allowed.status.success(), "a file the sandbox names is read: {}", String::from_utf8_lossy(&allowed.stderr));
}

#[test]
fn builds_from_a_flux_git_repository_on_the_git_server() {
    let base = airlock_e2e::service_env("AIRLOCK_GIT_HTTP");
    let name = format!("airlock-e2e-kustomize-{}", std::process::id());
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/git-server.sh");
    let out = Command::new(&script).args(["new-repo", &name]).output().expect("hack/git-server.sh runs");
    assert!(out.status.success(), "new-repo: {}", String::from_utf8_lossy(&out.stderr));
    let url = format!("{}/{name}.git", base.trim_end_matches('/'));

    let work = tempfile::tempdir().expect("tempdir");
    write_tree(work.path(), BASE);
    airlock_e2e::git(work.path(), &["init", "-q", "-b", "main"]);
    airlock_e2e::git(work.path(), &["add", "."]);
    airlock_e2e::git(work.path(), &["commit", "-q", "-m", "hello world"]);
    airlock_e2e::git(work.path(), &["tag", "v1"]);
    std::fs::write(
        work.path().join("base/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  altGreeting: Good Evening!\n",
    )
    .unwrap();
    airlock_e2e::git(work.path(), &["commit", "-q", "-am", "evening"]);
    airlock_e2e::git(work.path(), &["tag", "-a", "-m", "annotated", "v2"]);
    airlock_e2e::git(work.path(), &["push", "-q", &url, "main", "v1", "v2"]);
    let rev_parse = |rev: &str| {
        let out = Command::new("git").arg("-C").arg(work.path()).args(["rev-parse", rev]).output().expect("git runs");
        String::from_utf8(out.stdout).expect("UTF-8").trim().to_string()
    };
    for (reference, rev) in
        [(GitRef::Branch("main".into()), "main"), (GitRef::Tag("v1".into()), "v1"), (GitRef::Tag("v2".into()), "v2^{commit}")]
    {
        assert_eq!(commit_of("o", &url, &reference).expect("the remote lists it"), rev_parse(rev), "{reference:?}");
    }
    assert!(matches!(commit_of("o", &url, &GitRef::Branch("none".into())), Err(KustomizeError::Fetch { .. })));

    let kustomizer = Kustomizer::locate(Some(&airlock_e2e::kustomize_kubectl())).expect("kubectl runs");
    let none = BTreeMap::new();
    let greeting = |reference: Value| {
        let repo = json!({"apiVersion": "source.toolkit.fluxcd.io/v1", "kind": "GitRepository", "spec": {"url": url, "ref": reference}});
        let source =
            KustomizeSource::from_flux_git_repository(&repo, "ClusterProfile/k: GitRepository flux-system/app").expect("supported");
        let req = KustomizeRequest { target_namespace: Some("eng"), ..request(&source, "./base/", &none) };
        let objects = kustomizer.build(&req).expect("builds");
        assert_eq!(names(&objects), ["ConfigMap/eng/the-map", "Service/eng/the-service", "Deployment/eng/the-deployment"]);
        objects[0]["data"]["altGreeting"].as_str().unwrap().to_string()
    };
    assert_eq!(greeting(json!({"branch": "main"})), "Good Evening!");
    assert_eq!(greeting(json!({"tag": "v1"})), "Good Morning!");

    let missing =
        json!({"spec": {"url": format!("{}/airlock-e2e-no-such-repo.git", base.trim_end_matches('/')), "ref": {"branch": "main"}}});
    let source = KustomizeSource::from_flux_git_repository(&missing, "o").expect("supported");
    let err = kustomizer.build(&request(&source, "", &none)).unwrap_err();
    assert!(matches!(err, KustomizeError::Fetch { .. }), "{err}");
}

fn profile_dir(dir: &Path, run: &str, url: &str) {
    let text = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {{name: edge, namespace: {run}, labels: {{site: north}}}}
spec: {{pullMode: true}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {{name: hello, namespace: {run}}}
spec: {{url: '{url}', ref: {{branch: main}}, interval: 1m}}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {{name: {run}-git}}
spec:
  clusterSelector: {{matchLabels: {{site: north}}}}
  kustomizationRefs:
  - {{kind: GitRepository, name: hello, path: ./base/, targetNamespace: '{{{{ .ClusterName }}}}-apps',
      values: {{Region: '{{{{ index .Cluster.metadata.labels \"site\" }}}}', Version: v1.2.0}}}}
"
    );
    std::fs::write(dir.join("fleet.yaml"), text).expect("writes the fleet");
}

/// `publish --from-dir` with a profile building a GitRepository of the test Git server: the
/// branch's commit is built; an unchanged branch publishes nothing; a new commit publishes
/// a new version; an unreachable repository fails that profile alone, naming it, and the
/// cluster keeps what the profile last rendered.
#[tokio::test]
async fn publishes_what_a_git_branch_holds_and_follows_it() {
    let run = airlock_e2e::publisher::unique("kustomize-git");
    let url = airlock_e2e::new_git_repo(&run);
    let work = tempfile::tempdir().expect("tempdir");
    write_tree(work.path(), BASE);
    airlock_e2e::git(work.path(), &["init", "-q", "-b", "main"]);
    airlock_e2e::git(work.path(), &["add", "."]);
    airlock_e2e::git(work.path(), &["commit", "-q", "-m", "hello world"]);
    airlock_e2e::git(work.path(), &["push", "-q", &url, "main"]);

    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    profile_dir(fleet.path(), &run, &url);
    let keys = airlock_e2e::publisher::Keys::new("kustomize");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let kubectl = airlock_e2e::kustomize_kubectl().display().to_string();
    let fleet_dir = fleet.path().display().to_string();
    let cache = out.path().join("cache").display().to_string();
    let publish = |code| {
        airlock_e2e::publisher::run_expect(
            &["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--kubectl", &kubectl, "--cache-dir", &cache],
            code,
        )
    };
    let cluster: airlock_bundle::ClusterId = format!("{run}/edge").parse().expect("a cluster id");
    let part = format!("ClusterProfile.{run}-git");
    let greeting = |bundle: &airlock_bundle::VerifiedBundle| {
        let map = airlock_e2e::publisher::file(bundle, &format!("{part}/ConfigMap.edge-apps.the-map.yaml"));
        map.lines().find_map(|l| l.trim().strip_prefix("altGreeting: ").map(str::to_string)).expect("a greeting")
    };

    let first = publish(0);
    assert_eq!(airlock_e2e::publisher::summary(&first)[0].2, "published", "{first}");
    let bundle = airlock_e2e::publisher::read_back(&store, &cluster, &keys.keyring).await;
    assert_eq!(greeting(&bundle), "Good Morning!");
    let deployment = airlock_e2e::publisher::file(&bundle, &format!("{part}/Deployment.edge-apps.the-deployment.yaml"));
    assert!(deployment.contains("region: north") && deployment.contains("image: nginx:v1.2.0"), "{deployment}");
    assert!(
        bundle.bundle().files().any(|(p, _)| p == format!("{part}/Namespace.cluster.edge-apps.yaml")),
        "the target namespace is created"
    );

    let again = publish(0);
    assert_eq!(airlock_e2e::publisher::summary(&again)[0].2, "unchanged", "the branch did not move: {again}");

    std::fs::write(
        work.path().join("base/configmap.yaml"),
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  altGreeting: Good Evening!\n",
    )
    .unwrap();
    airlock_e2e::git(work.path(), &["commit", "-q", "-am", "evening"]);
    airlock_e2e::git(work.path(), &["push", "-q", &url, "main"]);
    let moved = publish(0);
    assert_eq!(airlock_e2e::publisher::summary(&moved)[0].1, "2", "a new commit is a new version: {moved}");
    assert_eq!(greeting(&airlock_e2e::publisher::read_back(&store, &cluster, &keys.keyring).await), "Good Evening!");

    let gone = url.replace(&run, &format!("{run}-gone"));
    std::fs::write(fleet.path().join("fleet.yaml"), std::fs::read_to_string(fleet.path().join("fleet.yaml")).unwrap().replace(&url, &gone))
        .unwrap();
    let failed = publish(2);
    assert!(failed.contains(&format!("ClusterProfile/{run}-git")) && failed.contains(&gone), "names the profile and the URL: {failed}");
    let kept = airlock_e2e::publisher::read_back(&store, &cluster, &keys.keyring).await;
    assert_eq!(greeting(&kept), "Good Evening!", "the failed profile keeps its last good part");
}

/// The media type of the layer `flux push artifact` writes.
const FLUX_CONTENT: &str = "application/vnd.cncf.flux.content.v1.tar+gzip";

/// `publish --from-dir` with a profile building a Flux OCIRepository of the test registry:
/// the tag's artifact is built; an unmoved tag publishes nothing; the tag pushed again with
/// other content publishes a new version.
#[tokio::test]
async fn publishes_what_an_oci_artifact_holds_and_follows_its_tag() {
    let run = airlock_e2e::publisher::unique("kustomize-oci");
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY");
    let repository = format!("airlock-e2e/{run}");
    let tarball = |greeting: &str| {
        let mut files: Vec<(&str, String)> = BASE.iter().map(|(p, t)| (*p, t.to_string())).collect();
        let map = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: the-map\ndata:\n  altGreeting: {greeting}\n");
        files.iter_mut().find(|(p, _)| *p == "base/configmap.yaml").expect("the tree has a map").1 = map;
        let files: Vec<(&str, &str)> = files.iter().map(|(p, t)| (*p, t.as_str())).collect();
        let encoded = config_map(&files)["binaryData"]["kustomize.tar.gz"].as_str().expect("a tarball").to_string();
        base64::engine::general_purpose::STANDARD.decode(encoded).expect("base64")
    };
    airlock_e2e::oci::push_artifact(&registry, &repository, "v1", FLUX_CONTENT, &tarball("Good Morning!"), None).await;

    let (fleet, out) = (tempfile::tempdir().expect("tempdir"), tempfile::tempdir().expect("tempdir"));
    let text = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {{name: edge, namespace: {run}, labels: {{site: south}}}}
spec: {{pullMode: true}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {{name: hello, namespace: {run}}}
spec: {{url: 'oci://{registry}/{repository}', ref: {{tag: v1}}, insecure: true, interval: 5m,
        layerSelector: {{mediaType: {FLUX_CONTENT}, operation: extract}}}}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {{name: {run}-oci}}
spec:
  clusterSelector: {{matchLabels: {{site: south}}}}
  kustomizationRefs:
  - {{kind: OCIRepository, name: hello, path: base, targetNamespace: oci-apps, values: {{Region: south, Version: v1.2.0}}}}
  - {{remoteURL: {{url: 'oci://{registry}/{repository}:v1', plainHTTP: true}}, path: base, targetNamespace: oci-remote,
      values: {{Region: south, Version: v1.2.0}}}}
"
    );
    std::fs::write(fleet.path().join("fleet.yaml"), text).expect("writes the fleet");
    let keys = airlock_e2e::publisher::Keys::new("kustomize");
    let store = format!("oci-layout:{}", out.path().join("layout").display());
    let kubectl = airlock_e2e::kustomize_kubectl().display().to_string();
    let fleet_dir = fleet.path().display().to_string();
    let cache = out.path().join("cache").display().to_string();
    let publish = || {
        airlock_e2e::publisher::run_expect(
            &["publish", "--from-dir", &fleet_dir, "--to", &store, "--key", &keys.key, "--kubectl", &kubectl, "--cache-dir", &cache],
            0,
        )
    };
    let cluster: airlock_bundle::ClusterId = format!("{run}/edge").parse().expect("a cluster id");
    let map = format!("ClusterProfile.{run}-oci/ConfigMap.oci-apps.the-map.yaml");
    let remote_map = format!("ClusterProfile.{run}-oci/ConfigMap.oci-remote.the-map.yaml");

    let first = publish();
    assert_eq!(airlock_e2e::publisher::summary(&first)[0].2, "published", "{first}");
    let bundle = airlock_e2e::publisher::read_back(&store, &cluster, &keys.keyring).await;
    assert!(airlock_e2e::publisher::file(&bundle, &map).contains("Good Morning!"));
    assert!(airlock_e2e::publisher::file(&bundle, &remote_map).contains("Good Morning!"), "the remoteURL of the same artifact");
    let again = publish();
    assert_eq!(airlock_e2e::publisher::summary(&again)[0].2, "unchanged", "the tag did not move: {again}");
    airlock_e2e::oci::push_artifact(&registry, &repository, "v1", FLUX_CONTENT, &tarball("Good Evening!"), None).await;
    let moved = publish();
    assert_eq!(airlock_e2e::publisher::summary(&moved)[0].1, "2", "the tag moved: {moved}");
    assert!(
        airlock_e2e::publisher::file(&airlock_e2e::publisher::read_back(&store, &cluster, &keys.keyring).await, &map)
            .contains("Good Evening!")
    );
}
