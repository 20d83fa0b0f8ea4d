//! The Git store against the real smart-HTTP server of `hack/git-server.sh`
//! (`git http-backend` on `$AIRLOCK_GIT_HTTP`). Every test pushes to a fresh repository
//! of its own and keeps its cache in a temporary directory.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::Command;
use std::sync::atomic::{AtomicU32, Ordering};

use airlock_bundle::Limits;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::{Floor, SignedBundle};
use airlock_store::{Fetch, GitStore, PublishMeta, Store, fetch_verified};

/// A new empty repository on the test server; its http URL.
fn new_repo(test: &str) -> String {
    static COUNTER: AtomicU32 = AtomicU32::new(0);
    let base = airlock_e2e::service_env("AIRLOCK_GIT_HTTP");
    let name = format!("airlock-e2e-{test}-{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../hack/git-server.sh");
    let out = Command::new(&script).args(["new-repo", &name]).output().expect("hack/git-server.sh runs");
    assert!(out.status.success(), "{} new-repo failed: {}", script.display(), String::from_utf8_lossy(&out.stderr));
    format!("{}/{name}.git", base.trim_end_matches('/'))
}

fn git(dir: &Path, args: &[&str]) -> String {
    let out = Command::new("git").arg("-C").arg(dir).args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("git prints UTF-8")
}

fn fixture(cluster: &str) -> Fixture {
    Fixture { cluster: cluster.parse().expect("valid id"), ..Fixture::new(1) }
}

/// The fixture's files with the Namespace manifest's name changed.
fn files(namespace: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = Fixture::files();
    files[1].1 = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {namespace}\n").into_bytes();
    files
}

async fn assert_verified(store: &GitStore, fx: &Fixture, floor: &Floor, want: &SignedBundle) {
    match fetch_verified(store, &fx.expect(floor), &Limits::SPEC).await {
        Ok(Fetch::New(verified)) => {
            assert_eq!(verified.bundle(), &want.bundle, "{}", fx.cluster);
            assert_eq!(verified.envelope().predicate().version, want.version(), "{}", fx.cluster);
        }
        other => panic!("{}: {other:?}", fx.cluster),
    }
}

#[tokio::test]
async fn publish_fetch_and_bump_over_http() {
    let url = new_repo("bump");
    let tmp = tempfile::tempdir().expect("tempdir");
    let store = GitStore::with_cache(&url, "main", &tmp.path().join("cache")).expect("store opens");
    let (a, b) = (fixture("fleet/a"), fixture("fleet/b"));
    let (a1, b1) = (a.signed(1, files("web")), b.signed(1, files("web")));
    let meta = PublishMeta { source: None, revision: Some("r1".into()) };
    store.publish(&[a1.clone(), b1.clone()], &meta).await.expect("first publish");
    assert_verified(&store, &a, &Floor::default(), &a1).await;
    assert_verified(&store, &b, &Floor::default(), &b1).await;

    let a2 = a.signed(2, files("web2"));
    store.publish(&[a2.clone(), b1.clone()], &meta).await.expect("second publish");
    let floor = Floor { applied: Some((1, a1.digest())), highest_issued_at: None, keyring_version: None };
    assert_verified(&store, &a, &floor, &a2).await;
    assert_eq!(store.clusters(&Limits::SPEC).await.expect("clusters"), [a.cluster.clone(), b.cluster.clone()]);

    let clone = tmp.path().join("clone");
    let out = Command::new("git").args(["clone", "-q", &url]).arg(&clone).output().expect("git runs");
    assert!(out.status.success(), "git clone: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&clone, &["log", "--format=%s"]), "airlock: publish 1 cluster(s)\nairlock: publish 2 cluster(s)\n");
    let changed: BTreeSet<String> = git(&clone, &["diff", "--name-only", "HEAD~1", "HEAD"]).lines().map(String::from).collect();
    let expected = ["clusters/fleet/a/envelope.json", "clusters/fleet/a/ClusterProfile.web/Namespace.web.yaml"];
    assert_eq!(changed, expected.into_iter().map(String::from).collect());
    let diff = git(&clone, &["diff", "HEAD~1", "HEAD", "--", expected[1]]);
    assert!(diff.contains("-  name: web\n+  name: web2\n"), "not a readable YAML diff:\n{diff}");
    assert!(git(&clone, &["log", "-1", "--format=%B"]).contains("fleet/a v2 sha256:"));
}

#[tokio::test]
async fn racing_publishers_both_land() {
    const ROUNDS: u64 = 4;
    let url = new_repo("race");
    let tmp = tempfile::tempdir().expect("tempdir");
    let one = GitStore::with_cache(&url, "main", &tmp.path().join("one")).expect("store opens");
    let two = GitStore::with_cache(&url, "main", &tmp.path().join("two")).expect("store opens");
    let (a, b) = (fixture("fleet/a"), fixture("fleet/b"));
    let meta = PublishMeta::default();
    let mut last = None;
    for version in 1..=ROUNDS {
        let content = format!("v{version}");
        let (sa, sb) = ([a.signed(version, files(&content))], [b.signed(version, files(&content))]);
        let (ra, rb) = tokio::join!(one.publish(&sa, &meta), two.publish(&sb, &meta));
        ra.expect("publisher one");
        rb.expect("publisher two");
        last = Some((sa, sb));
    }
    let (sa, sb) = last.expect("at least one round");
    assert_verified(&two, &a, &Floor::default(), &sa[0]).await;
    assert_verified(&one, &b, &Floor::default(), &sb[0]).await;

    let clone = tmp.path().join("clone");
    let out = Command::new("git").args(["clone", "-q", &url]).arg(&clone).output().expect("git runs");
    assert!(out.status.success(), "git clone: {}", String::from_utf8_lossy(&out.stderr));
    assert_eq!(git(&clone, &["rev-list", "--count", "HEAD"]).trim(), (2 * ROUNDS).to_string());
}

#[tokio::test]
async fn a_new_reader_takes_the_tip_alone_and_stops_at_the_byte_cap() {
    let url = new_repo("shallow");
    let tmp = tempfile::tempdir().expect("tempdir");
    let publisher = GitStore::with_cache(&url, "main", &tmp.path().join("publisher")).expect("store opens");
    let fx = fixture("fleet/a");
    let meta = PublishMeta::default();
    for version in 1..=3 {
        publisher.publish(&[fx.signed(version, files(&format!("web{version}")))], &meta).await.expect("publish");
    }
    let tip = git(tmp.path(), &["ls-remote", &url, "refs/heads/main"]);
    let tip = tip.split_whitespace().next().expect("the branch exists").to_string();

    // A puller's first read: the tip's commit only, however long the history.
    let reader_cache = tmp.path().join("reader");
    let reader = GitStore::with_cache(&url, "main", &reader_cache).expect("store opens");
    let floor = Floor::default();
    assert_verified(&reader, &fx, &floor, &fx.signed(3, files("web3"))).await;
    let shallow = std::fs::read_to_string(shallow_file(&reader_cache).expect("the reader's cache is shallow")).expect("readable");
    assert_eq!(shallow.trim(), tip, "the reader holds the tip's commit alone");
    // Its next read fetches on top of that.
    let v4 = fx.signed(4, files("web4"));
    publisher.publish(std::slice::from_ref(&v4), &meta).await.expect("publish");
    assert_verified(
        &reader,
        &fx,
        &Floor { applied: Some((3, fx.signed(3, files("web3")).digest())), highest_issued_at: None, keyring_version: None },
        &v4,
    )
    .await;
    // The publisher, which builds on the branch, keeps its whole history.
    assert_eq!(shallow_file(&tmp.path().join("publisher")), None, "the publisher's cache is complete");

    // A server that sends more than the cap is cut off, and says so.
    let capped = GitStore::with_cache(&url, "main", &tmp.path().join("capped")).expect("store opens");
    let small = Limits { git_fetch_bytes: 1_000, ..Limits::SPEC };
    let err = capped.fetch_envelope(&fx.cluster, &small).await.expect_err("over the cap");
    assert!(err.to_string().contains("more than 1000 bytes"), "{err}");
}

/// The `shallow` file of the one repository a store keeps under `cache`, if it is shallow.
fn shallow_file(cache: &Path) -> Option<std::path::PathBuf> {
    let repos: Vec<_> = std::fs::read_dir(cache.join("git")).expect("cache dir").map(|e| e.expect("entry").path()).collect();
    assert_eq!(repos.len(), 1, "one repository per cache: {repos:?}");
    Some(repos[0].join("shallow")).filter(|p| p.exists())
}
