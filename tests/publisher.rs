//! `airlock-publisher publish` end to end from a fixture directory: the real binary writes
//! to an OCI layout, the real registry and the real Git server of `hack/services.sh`, and
//! the bundles are read back and verified as a puller would. After one ConfigMap used by
//! the north clusters changes, exactly those get version + 1.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use airlock_e2e::publisher::{Fixture, Keys, file, has_part, read_back, run, run_expect, summary, unique};

fn status(rows: &[(String, String, String)]) -> Vec<(&str, &str, &str)> {
    rows.iter().map(|(c, v, s)| (c.as_str(), v.as_str(), s.as_str())).collect()
}

/// Publish, change the north ConfigMap, publish again, publish once more.
async fn publish_change_republish(store: &str) {
    let fx = Fixture::new("flow");
    let keys = Keys::new("ops");
    let [e1, e2, e3] = fx.clusters();
    let publish = [
        "publish",
        "--from-dir",
        fx.path(),
        "--to",
        store,
        "--key",
        &keys.key,
        "--source",
        "https://git.example/mgmt",
        "--revision",
        "abc123",
    ];

    let first = summary(&run_expect(&publish, 0));
    let want: Vec<(String, String, String)> = [&e1, &e2, &e3].iter().map(|c| (c.to_string(), "1".into(), "published".into())).collect();
    assert_eq!(first, want);
    let b1 = read_back(store, &e1, &keys.keyring).await;
    assert_eq!(b1.predicate().version, 1);
    assert_eq!(b1.predicate().settings.watch_namespaces, Some(vec!["apps".to_string(), "kube-public".to_string()]));
    assert!(file(&b1, &format!("{}/ConfigMap.apps.zone-settings.yaml", fx.part("north"))).contains("replicas: \"3\""));
    let info = file(&b1, &format!("{}/ConfigMap.apps.cluster-info.yaml", fx.part("base")));
    assert!(info.contains(&format!("cluster: {e1}")) && info.contains("zone: NORTH") && info.contains("owner: platform"), "{info}");
    let north = b1.predicate().profiles.iter().find(|p| p.name == fx.part("north")).expect("north part");
    assert_eq!(north.depends_on, [fx.part("base")]);
    let b3 = read_back(store, &e3, &keys.keyring).await;
    assert!(file(&b3, &format!("{}/ConfigMap.apps.settings.yaml", fx.part("south"))).contains("source: south"), "lower tier wins");
    assert_eq!(b3.bundle().part(&fx.part("base")).expect("base part").files().filter(|(p, _)| p.ends_with("settings.yaml")).count(), 0);
    let b2 = read_back(store, &e2, &keys.keyring).await;
    assert!(has_part(&b2, &format!("Profile.{}.team", fx.run)) && !has_part(&b1, &format!("Profile.{}.team", fx.run)));

    fx.edit("configmaps.yaml", "replicas: \"3\"", "replicas: \"5\"");
    let second = summary(&run_expect(&publish, 0));
    assert_eq!(
        status(&second),
        [
            (e1.to_string().as_str(), "2", "published"),
            (e2.to_string().as_str(), "2", "published"),
            (e3.to_string().as_str(), "1", "unchanged")
        ]
    );
    let b1 = read_back(store, &e1, &keys.keyring).await;
    assert_eq!(b1.predicate().version, 2);
    assert!(file(&b1, &format!("{}/ConfigMap.apps.zone-settings.yaml", fx.part("north"))).contains("replicas: \"5\""));
    assert_eq!(read_back(store, &e2, &keys.keyring).await.predicate().version, 2);
    assert_eq!(read_back(store, &e3, &keys.keyring).await.predicate().version, 1);

    let third = summary(&run_expect(&publish, 0));
    assert!(third.iter().all(|(_, _, s)| s == "unchanged"), "same input, nothing to publish: {third:?}");
}

#[tokio::test]
async fn publishes_to_an_oci_layout() {
    let tmp = tempfile::tempdir().expect("tempdir");
    publish_change_republish(&format!("oci-layout:{}", tmp.path().join("layout").display())).await;
}

#[tokio::test]
async fn publishes_to_the_registry() {
    let registry = airlock_e2e::service_env("AIRLOCK_REGISTRY");
    publish_change_republish(&format!("oci+http://{registry}/airlock-e2e/{}", unique("registry"))).await;
}

#[tokio::test]
async fn publishes_to_the_git_server() {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/git-server.sh");
    airlock_e2e::service_env("AIRLOCK_GIT_HTTP");
    let out = Command::new(&script).args(["new-repo", &unique("git")]).output().expect("hack/git-server.sh runs");
    assert!(out.status.success(), "new-repo: {}", String::from_utf8_lossy(&out.stderr));
    let url = String::from_utf8(out.stdout).expect("UTF-8 URL");
    publish_change_republish(&format!("git+{}", url.trim())).await;
}

#[tokio::test]
async fn a_tier_tie_fails_only_the_profile_that_loses_it() {
    let fx = Fixture::new("tie");
    fx.edit("profiles.yaml", "tier: 50", "tier: 100");
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let stdout = run_expect(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key], 2);
    let [e1, e2, e3] = fx.clusters();
    assert_eq!(
        status(&summary(&stdout)),
        [
            (e1.to_string().as_str(), "1", "published"),
            (e2.to_string().as_str(), "1", "published"),
            (e3.to_string().as_str(), "1", "published")
        ]
    );
    // Nothing stored decides who deployed it first: the first part by name keeps it.
    let (base, south) = (fx.part("base"), fx.part("south"));
    let line = format!("{e3}: {south}: conflict: ConfigMap apps/settings is deployed at tier 100 by {base} too");
    assert!(stdout.contains(&line), "{stdout}");
    let b3 = read_back(&store, &e3, &keys.keyring).await;
    let entry = b3.predicate().profiles.iter().find(|p| p.name == south).expect("south part");
    assert_eq!(entry.failure.as_ref().map(|f| f.kept_from), Some(None), "never rendered before: empty");
    assert!(file(&b3, &format!("{base}/ConfigMap.apps.settings.yaml")).contains("source: base"));
}

#[test]
fn dry_run_writes_nothing_and_bad_flags_fail() {
    let fx = Fixture::new("dry");
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let layout = tmp.path().join("layout");
    let store = format!("oci-layout:{}", layout.display());
    let rows = summary(&run_expect(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key, "--dry-run"], 0));
    assert!(rows.iter().all(|(_, v, s)| v == "1" && s == "would publish"), "{rows:?}");
    assert!(!layout.join("index.json").exists(), "dry run wrote to the store");

    let one = fx.cluster("edge-2").to_string();
    let rows = summary(&run_expect(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key, "--cluster", &one], 0));
    assert_eq!(status(&rows), [(one.as_str(), "1", "published")]);

    let paused = fx.cluster("edge-paused").to_string();
    let out = run(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key, "--cluster", &paused]);
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("paused"), "{}", String::from_utf8_lossy(&out.stderr));

    // Longer than a puller accepts: refused before anything is signed.
    let index = std::fs::read(layout.join("index.json")).expect("index written");
    let out = run(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key, "--expires-in", "91d"]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("--expires-in of 91.0 days: pullers refuse a bundle valid for more than 90 days"), "{stderr}");
    assert_eq!(std::fs::read(layout.join("index.json")).expect("index kept"), index, "nothing written");

    // A reference that does not parse is named without the credentials written into it.
    let out = run(&["publish", "--from-dir", fx.path(), "--to", "git+http://ops:s3cret@127.0.0.1:9/fleet.git?x", "--key", &keys.key]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains("git+http://127.0.0.1:9/fleet.git?x") && !stderr.contains("s3cret"), "{stderr}");

    std::fs::set_permissions(&keys.key, std::fs::Permissions::from_mode(0o644)).expect("chmod");
    let out = run(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key]);
    assert_eq!(out.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(stderr.contains(&format!("permissions 0644 for '{}' are too open", keys.key)), "{stderr}");
}

/// A fleet of more clusters than the publisher renders, signs and writes at a time: every
/// cluster is published once and named in the index, the last one reads back verified, and
/// a re-publish finds them all unchanged without touching a file of the layout.
#[tokio::test]
async fn a_fleet_larger_than_a_chunk_publishes_whole_and_republishes_unchanged() {
    let fleet = tempfile::tempdir().expect("tempdir");
    let generated = Command::new("python3")
        .arg(airlock_e2e::root().join("hack/bench/gen-fleet.py"))
        .args(["--clusters", "1100", "--seed", "3", "--out"])
        .arg(fleet.path())
        .status()
        .expect("python3 runs hack/bench/gen-fleet.py");
    assert!(generated.success());
    let keys = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let layout = tmp.path().join("layout");
    let store = format!("oci-layout:{}", layout.display());
    let cache = tmp.path().join("cache");
    let publish = [
        "publish",
        "--from-dir",
        fleet.path().to_str().unwrap(),
        "--to",
        &store,
        "--key",
        &keys.key,
        "--cache-dir",
        cache.to_str().unwrap(),
    ];

    let first = summary(&run_expect(&publish, 0));
    assert_eq!(first.len(), 1100);
    assert!(first.iter().all(|(_, v, s)| v == "1" && s == "published"), "{first:?}");
    let opened = airlock_store::open(&store.parse().unwrap(), &Default::default()).await.unwrap();
    assert_eq!(opened.clusters(&airlock_bundle::Limits::SPEC).await.unwrap().len(), 1100);
    let last: airlock_bundle::ClusterId = first.last().unwrap().0.parse().unwrap();
    assert_eq!(read_back(&store, &last, &keys.keyring).await.predicate().version, 1);

    let files = |dir: &Path| -> Vec<_> {
        let entries = walkdir::WalkDir::new(dir).sort_by_file_name().into_iter().map(|e| e.unwrap());
        entries.map(|e| (e.path().to_owned(), e.metadata().unwrap().len(), e.metadata().unwrap().modified().unwrap())).collect()
    };
    let before = files(&layout);
    let again = summary(&run_expect(&publish, 0));
    assert!(again.iter().all(|(_, v, s)| v == "1" && s == "unchanged"), "{again:?}");
    assert_eq!(files(&layout), before, "an unchanged re-publish wrote to the layout");
}

/// Rotation without a site visit: bundles signed by a new key, carrying the signed
/// keyring update, verify against the keyring pullers already trust.
#[tokio::test]
async fn rotated_keys_reach_pullers_through_the_chain() {
    let fx = Fixture::new("rotate");
    let (old, new) = (Keys::new("old"), Keys::new("new"));
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = format!("oci-layout:{}", tmp.path().join("layout").display());
    let next = tmp.path().join("keyring-v2.json").display().to_string();
    run_expect(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &old.key], 0);

    fn rotate<'a>(keyring: &'a str, add: &'a str, remove: &'a str, signer: &'a str, out: &'a str) -> [&'a str; 12] {
        ["keyring", "rotate", "--keyring", keyring, "--add", add, "--remove", remove, "--key", signer, "--out", out]
    }
    let refused = run(&rotate(&old.keyring_path, &new.public, &old.public, &new.key, &next));
    assert_eq!(refused.status.code(), Some(1), "a key outside the current keyring cannot sign the update");
    run_expect(&rotate(&old.keyring_path, &new.public, &old.public, &old.key, &next), 0);
    let update = format!("{next}.update");

    let mismatched = run(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &new.key, "--keyring", &old.keyring_path]);
    assert_eq!(mismatched.status.code(), Some(1), "the new key does not satisfy the old keyring");
    let rows = summary(&run_expect(
        &["publish", "--from-dir", fx.path(), "--to", &store, "--key", &new.key, "--keyring", &next, "--keyring-chain", &update],
        0,
    ));
    assert!(rows.iter().all(|(_, v, s)| v == "2" && s == "published"), "a new keyring republishes every cluster: {rows:?}");
    let bundle = read_back(&store, &fx.cluster("edge-1"), &old.keyring).await;
    assert_eq!((bundle.predicate().version, bundle.predicate().keyring_version), (2, 2));
    assert_eq!(bundle.envelope().keyring().keys()[0], new.keyring.keys()[0]);
}

/// The migration of docs/operations.md: a keyring that is its own root takes an offline root
/// of 2 of 3, each holder signing on their own; from then on the online key alone cannot
/// change the keyring, and publish refuses a root key.
#[tokio::test]
async fn a_keyring_takes_an_offline_root_signed_one_holder_at_a_time() {
    let fx = Fixture::new("root");
    let ops = Keys::new("ops");
    let tmp = tempfile::tempdir().expect("tempdir");
    let path = |name: &str| tmp.path().join(name).display().to_string();
    for holder in ["alice", "bob", "carol"] {
        let out = run_expect(&["keygen", "--role", "root", "--out-dir", &path(holder), "--name", holder], 0);
        assert!(!out.contains("keyring"), "a root key gets no keyring: {out}");
    }
    let (pubkey, key) = (|h: &str| path(&format!("{h}/{h}.pub")), |h: &str| path(&format!("{h}/{h}.key")));
    let (next, update) = (path("keyring-v2.json"), path("keyring-v2.json.update"));
    let (alice, bob, carol) = (pubkey("alice"), pubkey("bob"), pubkey("carol"));
    let take = ["keyring", "rotate", "--keyring", &ops.keyring_path, "--add-root", &alice, "--add-root", &bob, "--add-root", &carol];
    let refused = run(&[&take[..], &["--root-threshold", "2", "--key", &ops.key, "--out", &next]].concat());
    assert_eq!(refused.status.code(), Some(1), "the new root has not signed");
    assert!(String::from_utf8_lossy(&refused.stderr).contains("1 distinct key(s) of keyring version 1 and 2 of the root it names"));
    let partial = run_expect(&[&take[..], &["--root-threshold", "2", "--key", &ops.key, "--partial", "--out", &next]].concat(), 2);
    assert!(partial.contains("not yet adoptable"), "{partial}");
    let sign = |holder: &str, code| {
        run_expect(&["keyring", "sign", "--keyring", &ops.keyring_path, "--update", &update, "--key", &key(holder)], code)
    };
    assert!(sign("alice", 2).contains("not yet adoptable"));
    assert!(sign("bob", 0).contains("complete"));

    let store = format!("oci-layout:{}", path("layout"));
    let publish = ["publish", "--from-dir", fx.path(), "--to", &store, "--keyring", &next, "--keyring-chain", &update];
    run_expect(&[&publish[..], &["--key", &ops.key]].concat(), 0);
    let bundle = read_back(&store, &fx.cluster("edge-1"), &ops.keyring).await;
    let root = bundle.envelope().keyring().root().map(|r| (r.threshold(), r.keys().len()));
    assert_eq!((bundle.predicate().keyring_version, root), (2, Some((2, 3))), "pullers of the old keyring adopt the root");

    let refused = run(&[&publish[..], &["--key", &key("alice")]].concat());
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("root keys sign keyring updates only, never bundles"));
    let thief = Keys::new("thief");
    let stolen = [
        "keyring",
        "rotate",
        "--keyring",
        &next,
        "--add",
        &thief.public,
        "--remove",
        &ops.public,
        "--key",
        &ops.key,
        "--out",
        &path("v3.json"),
    ];
    let refused = run(&stolen);
    assert_eq!(refused.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("must include 2 distinct root key(s) of keyring version 2"));
    assert!(!std::path::Path::new(&path("v3.json")).exists(), "nothing written");
}
