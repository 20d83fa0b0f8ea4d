//! `spec.maxUpdate` over publishes, with the real binaries: four pull-mode clusters made by
//! `register cluster --to-dir`, a ClusterProfile changed under `maxUpdate: 50%`; two
//! bundles take the change and two keep their part, held back; once the first two's signed
//! reports are `ingest`ed the next publish updates the other two. Nothing here needs the
//! services: the management set is a directory and the store an OCI layout.

use airlock_bundle::{SigningKey, VerifiedBundle};
use airlock_e2e::publisher::reports::{report_key_of, signed_report};
use airlock_e2e::publisher::{Keys, file, read_back, run, run_expect, summary};

const SITES: [&str; 4] = ["site-a", "site-b", "site-c", "site-d"];
const PART: &str = "ClusterProfile.web";

/// The profile and its manifests, at `revision`, with `maxUpdate` when given.
fn profile(revision: u32, max_update: Option<&str>) -> String {
    let max = max_update.map_or(String::new(), |m| format!("  maxUpdate: {m:?}\n"));
    format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: web}}\nspec:\n{max}  \
         clusterSelector:\n    matchLabels: {{rollout: e2e}}\n  policyRefs:\n    - {{kind: ConfigMap, namespace: fleet, name: web}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: web, namespace: fleet}}\ndata:\n  web.yaml: |\n    \
         apiVersion: v1\n    kind: ConfigMap\n    metadata: {{name: web, namespace: apps}}\n    data: {{revision: \"{revision}\"}}\n"
    )
}

struct Fleet {
    dir: tempfile::TempDir,
    store: String,
    keys: Keys,
    report_keys: Vec<SigningKey>,
}

impl Fleet {
    fn new() -> Fleet {
        let (dir, keys) = (tempfile::tempdir().expect("tempdir"), Keys::new("ops"));
        let store = format!("oci-layout:{}", dir.path().join("layout").display());
        let mgmt = dir.path().join("mgmt");
        std::fs::create_dir(&mgmt).expect("mkdir");
        let report_keys = SITES
            .iter()
            .map(|site| {
                let out = run(&[
                    "register",
                    "cluster",
                    "--namespace",
                    "fleet",
                    "--cluster",
                    site,
                    "--pullmode",
                    "--labels",
                    "rollout=e2e",
                    "--source",
                    &store,
                    "--keyring",
                    &keys.keyring_path,
                    "--to-dir",
                    mgmt.to_str().expect("UTF-8 path"),
                ]);
                assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
                report_key_of(&out.stdout)
            })
            .collect();
        Fleet { dir, store, keys, report_keys }
    }

    fn mgmt(&self) -> String {
        self.dir.path().join("mgmt").display().to_string()
    }

    fn set_profile(&self, revision: u32, max_update: Option<&str>) {
        std::fs::write(self.dir.path().join("mgmt/profile.yaml"), profile(revision, max_update)).expect("write profile");
    }

    /// Publishes; the summary's (cluster, version, status) rows.
    fn publish(&self) -> Vec<(String, String, String)> {
        summary(&run_expect(&["publish", "--from-dir", &self.mgmt(), "--to", &self.store, "--key", &self.keys.key], 0))
    }

    async fn bundle(&self, site: &str) -> VerifiedBundle {
        read_back(&self.store, &format!("fleet/{site}").parse().expect("cluster id"), &self.keys.keyring).await
    }

    /// The revision of the profile's object each site's bundle carries (`-` for none).
    async fn revisions(&self) -> Vec<String> {
        let mut out = Vec::new();
        for site in SITES {
            let b = self.bundle(site).await;
            let has = b.bundle().part(PART).is_some_and(|p| p.files().count() > 0);
            out.push(if has { file(&b, &format!("{PART}/ConfigMap.apps.web.yaml")) } else { "-".into() });
        }
        out.iter().map(|y| y.lines().find(|l| l.contains("revision")).map_or("-".into(), |l| l.trim().to_string())).collect()
    }

    /// Ingests a successful report from each of `sites`, saying it runs its stored version.
    async fn report_applied(&self, sites: &[&str], at: &str) {
        let reports = self.dir.path().join(format!("reports-{at}.json"));
        let mut signed = Vec::new();
        for site in sites {
            let i = SITES.iter().position(|s| s == site).expect("a site");
            let version = self.bundle(site).await.predicate().version;
            let bytes = signed_report(&format!("fleet/{site}"), at, "applied", "v1.31.0", version, &self.report_keys[i]);
            signed.push(String::from_utf8(bytes).expect("JSON"));
        }
        std::fs::write(&reports, format!("[{}]", signed.join(","))).expect("write reports");
        let out = run_expect(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--to-dir", &self.mgmt()], 0);
        assert!(out.contains("ingested"), "{out}");
    }
}

#[tokio::test]
async fn max_update_rolls_a_change_out_half_the_fleet_at_a_time() {
    let fleet = Fleet::new();
    fleet.set_profile(1, None);
    assert!(fleet.publish().iter().all(|(_, v, s)| v == "1" && s == "published"));
    fleet.report_applied(&SITES, "2026-03-01T10:00:00Z").await;

    fleet.set_profile(2, Some("50%"));
    let rows = fleet.publish();
    assert!(rows.iter().all(|(_, v, s)| v == "2" && s == "published"), "the held-back note changes the others' bundles: {rows:?}");
    assert_eq!(fleet.revisions().await, ["revision: \"2\"", "revision: \"2\"", "revision: \"1\"", "revision: \"1\""]);
    for site in ["site-c", "site-d"] {
        let b = fleet.bundle(site).await;
        let entry = b.predicate().profiles.iter().find(|e| e.name == PART).expect("the part");
        let failure = entry.failure.clone().expect("held back");
        assert!(failure.message.starts_with("held back by spec.maxUpdate"), "{failure:?}");
        assert_eq!(failure.kept_from, Some(1));
    }

    // No report yet: the window is full, nothing moves.
    let rows = fleet.publish();
    assert!(rows.iter().all(|(_, _, s)| s == "unchanged"), "{rows:?}");

    // Only one of the two reports success: one more place opens.
    fleet.report_applied(&["site-a"], "2026-03-01T11:00:00Z").await;
    fleet.publish();
    assert_eq!(fleet.revisions().await[2..], ["revision: \"2\"", "revision: \"1\""]);

    fleet.report_applied(&["site-b", "site-c"], "2026-03-01T12:00:00Z").await;
    fleet.publish();
    assert_eq!(fleet.revisions().await, vec!["revision: \"2\""; 4]);
    assert!(fleet.bundle("site-d").await.predicate().profiles.iter().all(|e| e.failure.is_none()));
}

/// The descriptor of `descriptors` whose annotation `key` is `value`.
fn annotated<'a>(descriptors: &'a serde_json::Value, key: &str, value: &str) -> &'a serde_json::Value {
    let all = descriptors.as_array().expect("an array of descriptors");
    all.iter().find(|d| d["annotations"][key] == value).unwrap_or_else(|| panic!("no descriptor with {key}={value}: {all:?}"))
}

/// The blob path of the profile's part in `site`'s latest manifest in the layout.
fn part_blob(fleet: &Fleet, site: &str) -> std::path::PathBuf {
    let layout = fleet.dir.path().join("layout");
    let blob = |digest: &str| layout.join("blobs/sha256").join(digest.trim_start_matches("sha256:"));
    let index: serde_json::Value = serde_json::from_slice(&std::fs::read(layout.join("index.json")).expect("index.json")).expect("JSON");
    let wanted = format!("fleet/{site}:latest");
    let manifest = annotated(&index["manifests"], "org.opencontainers.image.ref.name", &wanted);
    let manifest: serde_json::Value =
        serde_json::from_slice(&std::fs::read(blob(manifest["digest"].as_str().expect("digest"))).expect("manifest blob")).expect("JSON");
    let title = format!("{PART}.tar.gz");
    let layer = annotated(&manifest["layers"], "org.opencontainers.image.title", &title);
    blob(layer["digest"].as_str().expect("layer digest"))
}

#[tokio::test]
async fn a_held_back_cluster_whose_stored_bundle_cannot_be_read_is_not_published() {
    let fleet = Fleet::new();
    fleet.set_profile(1, None);
    fleet.publish();
    fleet.report_applied(&SITES, "2026-03-01T10:00:00Z").await;
    fleet.set_profile(2, Some("50%"));
    fleet.publish();
    let before = fleet.revisions().await;
    assert_eq!(before[3], "revision: \"1\"", "site-d is held back");

    // The store cannot read the part site-d keeps (an I/O error, not "not found"):
    // publishing without it would empty that part and prune its objects.
    let path = part_blob(&fleet, "site-d");
    let saved = std::fs::read(&path).expect("part blob");
    std::fs::remove_file(&path).expect("remove blob");
    std::fs::create_dir(&path).expect("a directory in its place");
    fleet.set_profile(3, Some("50%"));
    let out = run(&["publish", "--from-dir", &fleet.mgmt(), "--to", &fleet.store, "--key", &fleet.keys.key]);
    assert_eq!(out.status.code(), Some(2), "{out:?}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    let row = summary(&stdout).into_iter().find(|(c, _, _)| c == "fleet/site-d").expect("site-d's row");
    assert_ne!(row.2, "published", "{stdout}");

    std::fs::remove_dir(&path).expect("remove the directory");
    std::fs::write(&path, saved).expect("restore blob");
    let b = fleet.bundle("site-d").await;
    assert_eq!(b.predicate().version, 2, "nothing was published for site-d");
    assert_eq!(fleet.revisions().await[3], "revision: \"1\"", "its kept part still holds its objects");
}
