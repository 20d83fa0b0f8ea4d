//! Unit tests of the Git store over file:// remotes in temporary directories.
use std::collections::BTreeSet;

use tempfile::TempDir;

use git2::{Oid, Repository, Signature};

use super::tree::{BLOB, EXECUTABLE, LINK, SUBMODULE};
use super::write::{self, put};
use super::*;
use crate::fetch::{Fetch, FetchError, fetch_verified};
use airlock_bundle::Bundle;
use airlock_bundle::sign::{PartSettings, sign};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::{Floor, VerifyError};

/// A bare `file://` remote and a store on it with its own cache.
fn remote() -> (TempDir, Repository, GitStore) {
    let dir = tempfile::tempdir().unwrap();
    let repo = Repository::init_bare(dir.path().join("remote.git")).unwrap();
    let store = store_on(&dir, "cache");
    (dir, repo, store)
}

fn store_on(dir: &TempDir, cache: &str) -> GitStore {
    let url = format!("file://{}", dir.path().join("remote.git").display());
    GitStore::with_cache(&url, "main", &dir.path().join(cache)).unwrap()
}

fn fixture(cluster: &str) -> Fixture {
    Fixture { cluster: cluster.parse().unwrap(), ..Fixture::new(1) }
}

fn with_web(content: &str) -> Vec<(String, Vec<u8>)> {
    let mut files = Fixture::files();
    files[1].1 = format!("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: {content}\n").into_bytes();
    files
}

fn tip(repo: &Repository) -> Oid {
    repo.refname_to_id("refs/heads/main").unwrap()
}

/// Commits `leaf` at `path` (below the edge-1 cluster directory) straight into the remote.
fn tamper(repo: &Repository, path: &str, leaf: Oid, mode: i32) {
    let parent = repo.find_commit(tip(repo)).unwrap();
    let full: Vec<&str> = ["clusters", "fleet", "edge-1"].into_iter().chain(path.split('/')).collect();
    let tree = put(repo, Some(&parent.tree().unwrap()), &full, leaf, mode).unwrap();
    let who = Signature::now("Mallory", "mallory@localhost").unwrap();
    repo.commit(Some("refs/heads/main"), &who, &who, "tamper", &repo.find_tree(tree).unwrap(), &[&parent]).unwrap();
}

async fn fetch(store: &GitStore, fx: &Fixture, floor: &Floor) -> Result<Fetch, FetchError> {
    fetch_verified(store, &fx.expect(floor), &Limits::SPEC).await
}

#[tokio::test]
async fn round_trip_through_verification() {
    let (_dir, repo, store) = remote();
    let (a, b) = (fixture("fleet/edge-1"), fixture("fleet/edge-2"));
    let parts = ["ClusterProfile.empty".to_string(), "ClusterProfile.web".to_string()];
    let files = vec![("ClusterProfile.web/deep/er/Namespace.web.yaml".to_string(), b"kind: Namespace\n".to_vec())];
    let with_empty = Bundle::new(parts, files, &Limits::SPEC).unwrap();
    let signed =
        [a.signed(1, Fixture::files()), sign(with_empty, &b.release(1), &|_| PartSettings::default(), &b.keys, Some(b"[]".to_vec()))];
    let meta = PublishMeta { source: Some("https://git.example/profiles".into()), revision: Some("abc123".into()) };
    store.publish(&signed, &meta).await.unwrap();

    for (fx, signed) in [(&a, &signed[0]), (&b, &signed[1])] {
        let Fetch::New(verified) = fetch(&store, fx, &Floor::default()).await.unwrap() else { panic!("not new") };
        assert_eq!(verified.bundle(), &signed.bundle);
        let fetched = store.fetch_envelope(&fx.cluster, &Limits::SPEC).await.unwrap();
        assert_eq!((&fetched.envelope, &fetched.keyring_chain), (&signed.envelope, &signed.keyring_chain));
        for profile in &signed.statement.predicate.profiles {
            let PartCopy::Tar(tar) = store.fetch_part(&fx.cluster, &fetched, profile, &Limits::SPEC).await.unwrap() else {
                panic!("git hands over plain tars")
            };
            assert_eq!(tar, signed.bundle.part(&profile.name).unwrap().tar(), "{}", profile.name);
        }
    }
    assert_eq!(store.clusters(&Limits::SPEC).await.unwrap(), [a.cluster.clone(), b.cluster.clone()]);
    let commit = repo.find_commit(tip(&repo)).unwrap();
    let message = commit.message().unwrap();
    assert!(message.starts_with("airlock: publish 2 cluster(s)\n\nfleet/edge-1 v1 sha256:"), "{message}");
    assert!(message.ends_with("\n\nSource: https://git.example/profiles\nRevision: abc123\n"), "{message}");
    assert_eq!(commit.author().name().unwrap(), "Airlock Publisher");
}

#[tokio::test]
async fn unchanged_content_makes_no_commit() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let first = tip(&repo);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    assert_eq!(tip(&repo), first);
}

#[tokio::test]
async fn a_new_version_is_a_readable_diff() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    let v1 = fx.signed(1, Fixture::files());
    store.publish(std::slice::from_ref(&v1), &PublishMeta::default()).await.unwrap();
    store.publish(&[fx.signed(2, with_web("web2"))], &PublishMeta::default()).await.unwrap();

    let new = repo.find_commit(tip(&repo)).unwrap();
    let old = new.parent(0).unwrap();
    let diff = repo.diff_tree_to_tree(Some(&old.tree().unwrap()), Some(&new.tree().unwrap()), None).unwrap();
    let changed: BTreeSet<_> = diff.deltas().map(|d| d.new_file().path().unwrap().to_str().unwrap().to_string()).collect();
    let dir = "clusters/fleet/edge-1";
    let yaml = format!("{dir}/ClusterProfile.web/Namespace.web.yaml");
    assert_eq!(changed, BTreeSet::from([format!("{dir}/envelope.json"), yaml.clone()]));
    let blob = new.tree().unwrap().get_path(Path::new(&yaml)).unwrap().to_object(&repo).unwrap();
    assert_eq!(blob.as_blob().unwrap().content(), b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web2\n");

    let floor = Floor { applied: Some((1, v1.digest())), highest_issued_at: None, keyring_version: None };
    let Fetch::New(verified) = fetch(&store, &fx, &floor).await.unwrap() else { panic!("not new") };
    assert_eq!(verified.envelope().predicate().version, 2);
}

#[tokio::test]
async fn links_submodules_and_executables_are_malformed() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let blob = repo.blob(b"kind: Secret\n").unwrap();
    for (mode, leaf) in [(LINK, blob), (EXECUTABLE, blob), (SUBMODULE, tip(&repo))] {
        tamper(&repo, "ClusterProfile.web/odd.yaml", leaf, mode);
        match fetch(&store, &fx, &Floor::default()).await {
            Err(FetchError::Store(StoreError::Malformed { what, .. })) => {
                assert_eq!(what, "clusters/fleet/edge-1/ClusterProfile.web/odd.yaml")
            }
            other => panic!("mode {mode:o}: {other:?}"),
        }
        tamper(&repo, "ClusterProfile.web/odd.yaml", blob, BLOB);
    }
}

#[tokio::test]
async fn an_extra_file_is_rejected_by_verification() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    tamper(&repo, "ClusterProfile.web/extra.yaml", repo.blob(b"kind: Secret\n").unwrap(), BLOB);
    // Steps 8.11-8.12 (size, digest) come before the entry walk, so an added file
    // shows up as a longer part than signed.
    match fetch(&store, &fx, &Floor::default()).await {
        Err(FetchError::Rejected { source: VerifyError::PartLength { part, .. }, .. }) => {
            assert_eq!(part, "ClusterProfile.web")
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn stray_entries_are_malformed_and_oversized_envelopes_too_large() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let small = Limits { envelope_bytes: 100, ..Limits::SPEC };
    let err = store.fetch_envelope(&fx.cluster, &small).await.unwrap_err();
    assert!(matches!(&err, StoreError::EnvelopeTooLarge { limit: 100, .. }), "{err}");
    let mut chained = fx.signed(2, Fixture::files());
    chained.keyring_chain = Some(vec![b' '; 200]);
    store.publish(&[chained], &PublishMeta::default()).await.unwrap();
    let small_chain = Limits { keyring_chain_bytes: 100, ..Limits::SPEC };
    let err = store.fetch_envelope(&fx.cluster, &small_chain).await.unwrap_err();
    assert!(matches!(&err, StoreError::KeyringChainTooLarge { size: 200, limit: 100, .. }), "{err}");
    tamper(&repo, "README.md", repo.blob(b"hello").unwrap(), BLOB);
    let err = store.fetch_envelope(&fx.cluster, &Limits::SPEC).await.unwrap_err();
    assert!(matches!(&err, StoreError::Malformed { what, .. } if what == "clusters/fleet/edge-1/README.md"), "{err}");
}

#[tokio::test]
async fn rewound_history_is_a_rollback() {
    let (_dir, repo, store) = remote();
    let fx = Fixture::new(1);
    store.publish(&[fx.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    let v1_commit = tip(&repo);
    let v2 = fx.signed(2, with_web("web2"));
    store.publish(std::slice::from_ref(&v2), &PublishMeta::default()).await.unwrap();
    repo.reference("refs/heads/main", v1_commit, true, "rewrite history").unwrap();
    let floor = Floor { applied: Some((2, v2.digest())), highest_issued_at: None, keyring_version: None };
    match fetch(&store, &fx, &floor).await {
        Err(FetchError::Rejected { source: VerifyError::Rollback { version: 1, floor: 2 }, .. }) => {}
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn missing_branch_or_cluster_is_not_found() {
    let (_dir, _repo, store) = remote();
    let fx = Fixture::new(1);
    let not_found = |r: Result<Fetched, StoreError>| match r {
        Err(StoreError::NotFound { what, .. }) => what == "bundle for fleet/edge-1",
        _ => false,
    };
    assert!(not_found(store.fetch_envelope(&fx.cluster, &Limits::SPEC).await));
    assert_eq!(store.clusters(&Limits::SPEC).await.unwrap(), []);
    let other = fixture("fleet/other");
    store.publish(&[other.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();
    assert!(not_found(store.fetch_envelope(&fx.cluster, &Limits::SPEC).await));
}

#[tokio::test]
async fn racing_publishers_with_separate_caches_both_land() {
    let (dir, _repo, one) = remote();
    let two = store_on(&dir, "cache-two");
    let (a, b) = (fixture("fleet/a"), fixture("fleet/b"));
    let (sa, sb) = ([a.signed(1, Fixture::files())], [b.signed(1, Fixture::files())]);
    let meta = PublishMeta::default();
    let (ra, rb) = tokio::join!(one.publish(&sa, &meta), two.publish(&sb, &meta));
    ra.unwrap();
    rb.unwrap();
    assert_eq!(one.clusters(&Limits::SPEC).await.unwrap(), [a.cluster, b.cluster]);
}

#[tokio::test]
async fn a_push_on_a_stale_tip_is_refused_and_the_publish_rebuilt() {
    let (dir, repo, one) = remote();
    let two = store_on(&dir, "cache-two");
    let (a, b) = (fixture("fleet/a"), fixture("fleet/b"));
    let sa = [a.signed(1, Fixture::files())];
    one.publish(&sa, &PublishMeta::default()).await.unwrap();
    let stale = tip(&repo);
    two.publish(&[b.signed(1, Fixture::files())], &PublishMeta::default()).await.unwrap();

    let sa2 = [a.signed(2, with_web("web2"))];
    let (cache, lock) = one.target.cache().unwrap();
    let commit = write::commit(&one.target, &cache, Some(stale), &sa2, std::slice::from_ref(&a.cluster), &PublishMeta::default());
    let refused = write::push(&one.target, &cache, commit.unwrap().unwrap()).unwrap();
    assert!(refused.is_some(), "a push that would drop another publisher's commit went through");
    drop((cache, lock));

    one.publish(&sa2, &PublishMeta::default()).await.unwrap();
    assert_eq!(one.clusters(&Limits::SPEC).await.unwrap(), [a.cluster.clone(), b.cluster.clone()]);
    let Fetch::New(verified) = fetch(&one, &a, &Floor::default()).await.unwrap() else { panic!("not new") };
    assert_eq!(verified.envelope().predicate().version, 2);
}

#[tokio::test]
async fn credentials_never_show_and_unreachable_is_unavailable() {
    let dir = tempfile::tempdir().unwrap();
    let store = GitStore::with_cache("http://user:s3cret@127.0.0.1:1/r.git", "main", dir.path()).unwrap();
    assert_eq!(store.describe(), "git+http://127.0.0.1:1/r.git#main");
    let err = store.fetch_envelope(&Fixture::new(1).cluster, &Limits::SPEC).await.unwrap_err();
    assert!(matches!(err, StoreError::Unavailable { .. }) && !err.to_string().contains("s3cret"), "{err}");
    for (url, branch) in [("ssh://h/r.git", "main"), ("file:///r.git", "a..b"), ("http://h/r.git", "")] {
        assert!(matches!(GitStore::with_cache(url, branch, dir.path()), Err(StoreError::Config { .. })), "{url}#{branch}");
    }
    let https = GitStore::with_cache("https://u:p@h/r.git", "main", dir.path());
    match https {
        Err(StoreError::Config { store, message }) => {
            assert!(!git2::Version::get().https());
            assert_eq!(store, "git+https://h/r.git#main");
            assert!(message.contains("file:// and http:// only"), "{message}");
        }
        other => assert!(other.is_ok() && git2::Version::get().https()),
    }
}

#[test]
fn rejects_credentials_for_a_local_remote_or_beside_those_of_the_url() {
    let dir = tempfile::tempdir().unwrap();
    let credentials = GitCredentials::new("edge-1", "s3cret").unwrap();
    let open = |url: &str| GitStore::with_cache(url, "main", dir.path()).unwrap();
    for (url, want) in [("file:///srv/r.git", "http:// and https:// remotes only"), ("http://u:p@h/r.git", "carries credentials already")] {
        match open(url).with_credentials(credentials.clone()) {
            Err(StoreError::Config { message, .. }) => assert!(message.contains(want), "{url}: {message}"),
            other => panic!("{url}: {:?}", other.map(|s| s.describe())),
        }
    }
    let store = open("http://127.0.0.1:1/r.git").with_credentials(credentials).unwrap();
    assert_eq!(store.describe(), "git+http://127.0.0.1:1/r.git#main");
    assert!(!format!("{:?}", store.target.credentials).contains("s3cret"));
}
