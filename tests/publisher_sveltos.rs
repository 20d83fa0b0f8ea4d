//! `airlock-publisher publish` reading Sveltos profiles that use what Sveltos offers beyond
//! plain ConfigMaps, from the live management apiserver of `hack/services.sh`: a templated
//! policyRef name, Lua, patches and patchesFrom, the Namespaces Sveltos creates
//! implicitly, a prerequisite deployed where its dependent goes, a paused profile, an
//! active window relayed to the puller, a field noted as not supported; then one broken
//! profile failing alone, keeping its last good part, and a paused profile keeping what
//! clusters hold of it. The fixture is `publisher/tests/fixtures/sveltos`.

use airlock_bundle::VerifiedBundle;
use airlock_bundle::statement::ProfileEntry;
use airlock_e2e::locks::AirlockCrds;
use airlock_e2e::publisher::{Keys, file, kubectl, kubectl_ok, read_back, run_expect, summary, unique};
use airlock_e2e::root;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

/// The fixture, with its run id, applied to the management cluster; removed on drop.
struct Applied {
    dir: tempfile::TempDir,
    run: String,
    _crds: AirlockCrds,
}

impl Applied {
    fn new(test: &str) -> Applied {
        let crds = airlock_e2e::publisher::install_crds();
        let run = unique(test);
        let dir = tempfile::tempdir().expect("tempdir");
        for entry in std::fs::read_dir(root().join("publisher/tests/fixtures/sveltos")).expect("fixture exists") {
            let path = entry.expect("fixture entry").path();
            let text = std::fs::read_to_string(&path).expect("fixture reads");
            std::fs::write(dir.path().join(path.file_name().expect("a name")), text.replace("run-id", &run)).expect("fixture writes");
        }
        kubectl_ok(MANAGEMENT, &["create", "namespace", &run], b"");
        let applied = Applied { dir, run, _crds: crds };
        applied.apply();
        applied
    }

    /// Applies the fixture. kubectl validates against the OpenAPI the apiserver publishes,
    /// which lags a CRD update by a few seconds: an unknown field is retried meanwhile.
    fn apply(&self) {
        let args = ["apply", "--server-side", "-f", self.dir.path().to_str().expect("UTF-8")];
        for _ in 0..30 {
            let out = kubectl(MANAGEMENT, &args, b"");
            if out.status.success() {
                return;
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert!(stderr.contains("unknown field"), "kubectl {args:?}: {stderr}");
            std::thread::sleep(std::time::Duration::from_secs(1));
        }
        kubectl_ok(MANAGEMENT, &args, b"");
    }

    /// Replaces `from` (which must occur) by `to` in one file, and applies it again.
    fn edit(&self, file: &str, from: &str, to: &str) {
        let path = self.dir.path().join(file);
        let text = std::fs::read_to_string(&path).expect("fixture reads");
        assert!(text.contains(from), "{file} has no {from:?}");
        std::fs::write(&path, text.replacen(from, to, 1)).expect("fixture writes");
        self.apply();
    }

    fn part(&self, profile: &str) -> String {
        format!("ClusterProfile.{}-{profile}", self.run)
    }

    fn cluster(&self, name: &str) -> String {
        format!("{}/{name}", self.run)
    }

    /// An OCI layout and a cache under `dir`, and the publish of both clusters into it.
    fn publish_command(&self, keys: &Keys, dir: &std::path::Path) -> (String, Vec<String>) {
        let store = format!("oci-layout:{}", dir.join("layout").display());
        let (kc, cache) = (airlock_e2e::service_env(MANAGEMENT), dir.join("cache").display().to_string());
        let args = ["publish", "--kubeconfig", &kc, "--to", &store, "--key", &keys.key, "--cache-dir", &cache];
        let mut command: Vec<String> = args.iter().map(|a| a.to_string()).collect();
        for name in ["edge-1", "edge-2"] {
            command.extend(["--cluster".to_string(), self.cluster(name)]);
        }
        (store, command)
    }
}

impl Drop for Applied {
    fn drop(&mut self) {
        let profiles: Vec<String> = ["web", "base", "idle"].iter().map(|p| format!("{}-{p}", self.run)).collect();
        let mut args = vec!["delete", "clusterprofiles.config.projectsveltos.io", "--ignore-not-found"];
        args.extend(profiles.iter().map(String::as_str));
        let _ = std::panic::catch_unwind(|| kubectl_ok(MANAGEMENT, &args, b""));
        let _ = std::panic::catch_unwind(|| kubectl_ok(MANAGEMENT, &["delete", "namespace", &self.run, "--wait=false"], b""));
    }
}

fn entry<'b>(bundle: &'b VerifiedBundle, part: &str) -> &'b ProfileEntry {
    bundle.predicate().profiles.iter().find(|p| p.name == part).unwrap_or_else(|| panic!("no part {part}"))
}

fn part_tar(bundle: &VerifiedBundle, part: &str) -> Vec<u8> {
    bundle.bundle().part(part).unwrap_or_else(|| panic!("no part {part}")).tar()
}

#[tokio::test]
async fn publishes_what_sveltos_would_deploy() {
    let fx = Applied::new("sveltos");
    let (keys, tmp) = (Keys::new("ops"), tempfile::tempdir().expect("tempdir"));
    let (store, command) = fx.publish_command(&keys, tmp.path());
    let publish: Vec<&str> = command.iter().map(String::as_str).collect();
    let (e1, e2) = (fx.cluster("edge-1"), fx.cluster("edge-2"));
    let rows = summary(&run_expect(&publish, 0));
    assert!(rows.iter().all(|(_, v, s)| v == "1" && s == "published"), "{rows:?}");

    let (web, base) = (fx.part("web"), fx.part("base"));
    let b1 = read_back(&store, &e1.parse().unwrap(), &keys.keyring).await;
    let b2 = read_back(&store, &e2.parse().unwrap(), &keys.keyring).await;
    let page = file(&b1, &format!("{web}/ConfigMap.apps.web.yaml"));
    assert!(page.contains("zone: north") && page.contains("cluster: edge-1") && page.contains("owner: platform"), "{page}");
    assert!(file(&b2, &format!("{web}/ConfigMap.apps.web.yaml")).contains("zone: south"), "the policyRef name is a template");
    let lua = file(&b1, &format!("{web}/ConfigMap.apps.from-lua.yaml"));
    assert!(lua.contains("color: red") && lua.contains("cluster: edge-1"), "Lua reads the templated templateResourceRef: {lua}");
    assert!(file(&b2, &format!("{web}/ConfigMap.apps.from-lua.yaml")).contains("color: blue"));
    assert!(file(&b1, &format!("{base}/Namespace.cluster.apps.yaml")).contains("airlock.dev/create-only: \"true\""));
    assert!(file(&b1, &format!("{base}/ConfigMap.apps.base-info.yaml")).contains("revision: \"1\""), "base has no selector of its own");
    assert_eq!(entry(&b1, &web).depends_on, std::slice::from_ref(&base));
    let notes: Vec<&str> = entry(&b1, &web).notes.iter().map(|n| n.field.as_str()).collect();
    assert_eq!(notes, ["spec.kustomizationRefs[0].kind"]);
    assert!(!b1.predicate().profiles.iter().any(|p| p.name == fx.part("idle")), "a paused profile goes nowhere");
    let window = b1.predicate().settings.active_window.clone().expect("edge-1's window travels in its bundle");
    assert_eq!((window.from.as_str(), window.to.as_str()), ("0 20 * * 5", "0 7 * * 1"));
    assert!(b2.predicate().settings.active_window.is_none());
}

#[tokio::test]
async fn a_broken_profile_fails_alone_and_keeps_its_last_good_part() {
    let fx = Applied::new("isolation");
    let (keys, tmp) = (Keys::new("ops"), tempfile::tempdir().expect("tempdir"));
    let (store, command) = fx.publish_command(&keys, tmp.path());
    let publish: Vec<&str> = command.iter().map(String::as_str).collect();
    let (e1, e2) = (fx.cluster("edge-1"), fx.cluster("edge-2"));
    run_expect(&publish, 0);
    let (web, base) = (fx.part("web"), fx.part("base"));
    let v1 = read_back(&store, &e1.parse().unwrap(), &keys.keyring).await;

    // The Lua script breaks while base changes: base is published, web keeps version 1's part.
    fx.edit("configmaps.yaml", "function evaluate()", "function evaluate(");
    fx.edit("configmaps.yaml", "revision: \"1\"", "revision: \"2\"");
    let stdout = run_expect(&publish, 2);
    let rows = summary(&stdout);
    assert!(rows.iter().all(|(_, v, s)| v == "2" && s == "published"), "{rows:?}");
    for cluster in [&e1, &e2] {
        assert!(stdout.contains(&format!("{cluster}: {web}: lua script profile")), "the pair is named: {stdout}");
    }
    let v2 = read_back(&store, &e1.parse().unwrap(), &keys.keyring).await;
    assert!(file(&v2, &format!("{base}/ConfigMap.apps.base-info.yaml")).contains("revision: \"2\""));
    assert_eq!(part_tar(&v2, &web), part_tar(&v1, &web), "the last good part is kept");
    let failure = entry(&v2, &web).failure.clone().expect("the failure travels with the part");
    assert_eq!(failure.kept_from, Some(1));
    assert!(failure.message.contains("syntax error"), "{failure:?}");

    // Unchanged inputs, still broken: nothing new to publish.
    let rows = summary(&run_expect(&publish, 2));
    assert!(rows.iter().all(|(_, v, s)| v == "2" && s == "unchanged"), "{rows:?}");

    // Paused, web is not reconciled: fixed, it still holds what it held.
    kubectl_ok(MANAGEMENT, &["annotate", "clusterprofile", &format!("{}-web", fx.run), "profile.projectsveltos.io/paused=true"], b"");
    fx.edit("configmaps.yaml", "function evaluate(", "function evaluate()");
    let rows = summary(&run_expect(&publish, 0));
    assert!(rows.iter().all(|(_, v, s)| v == "2" && s == "unchanged"), "a paused profile keeps its part as it is: {rows:?}");
    kubectl_ok(MANAGEMENT, &["annotate", "clusterprofile", &format!("{}-web", fx.run), "profile.projectsveltos.io/paused-"], b"");
    let rows = summary(&run_expect(&publish, 0));
    assert!(rows.iter().all(|(_, v, s)| v == "3" && s == "published"), "{rows:?}");
    let v3 = read_back(&store, &e1.parse().unwrap(), &keys.keyring).await;
    assert!(entry(&v3, &web).failure.is_none());
}
