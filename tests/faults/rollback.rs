//! What guards against going back: the state Secret (the version floor) corrupted or
//! deleted by hand, and a Git remote rewound to an older history.
//!
//! `puller.rs` already shows a state Secret of bytes that are not gzip stops the puller,
//! and that deleting it starts over; here the corruptions that get further (gzip of
//! garbage, a state of another cluster, a missing data key, a kept keyring that does not
//! parse), and what a deleted state forgets: the floor and the inventory.

use std::io::Write;
use std::process::Command;

use airlock::store::{GitStore, PublishMeta, Store};
use jiff::SignedDuration;
use k8s_openapi::ByteString;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, PostParams};

use crate::common::new_git_repo;
use crate::site::{BASELINE, Site};
use crate::{
    Version, applied_maps, assert_applied, assert_converged, assert_failed, changes, gunzip, publish_layout,
    site_with_baseline, state_version,
};

const STATE_KEY: &str = "state.json.gz";

/// A state Secret edited by hand, and the reason the puller must give for refusing it.
struct Corruption {
    what: &'static str,
    reason: &'static str,
    /// The Secret's only data key, and its value.
    key: &'static str,
    bytes: Vec<u8>,
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_corrupted_by_hand_stops_every_run_until_deleted() {
    let baseline = Version::new(BASELINE, 2, 64);
    let (site, source) = site_with_baseline("store", &baseline).await;
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let name = format!("airlock-state-{}", site.cluster.name());
    let good = secrets.get(&name).await.expect("the state Secret");
    let state: serde_json::Value =
        serde_json::from_slice(&gunzip(&good.data.as_ref().unwrap()[STATE_KEY].0)).expect("the state is JSON");
    let edited = |edit: &dyn Fn(&mut serde_json::Value)| {
        let mut state = state.clone();
        edit(&mut state);
        gzip(state.to_string().as_bytes())
    };
    let corruptions = [
        Corruption {
            what: "gzip of text that is not JSON",
            reason: "state.json.gz: expected ident",
            key: STATE_KEY,
            bytes: gzip(b"not JSON"),
        },
        Corruption {
            what: "the state of another cluster",
            reason: "it belongs to cluster e2e/another",
            key: STATE_KEY,
            bytes: edited(&|s| s["cluster"] = "e2e/another".into()),
        },
        Corruption {
            what: "the state under another key",
            reason: "no state.json.gz key",
            key: "state.json",
            bytes: state.to_string().into_bytes(),
        },
        Corruption {
            what: "a kept keyring that does not parse",
            reason: "keyring: ",
            key: STATE_KEY,
            bytes: edited(&|s| s["keyring"] = serde_json::json!({"version": "two"})),
        },
    ];

    for Corruption { what, reason, key, bytes } in corruptions {
        let mut secret = secrets.get(&name).await.expect("the state Secret");
        secret.data = Some([(key.to_string(), ByteString(bytes))].into());
        secrets.replace(&name, &PostParams::default(), &secret).await.expect("state overwritten");
        let before = site.snapshot().await;
        let run = site.sync(&source, &[]).await;
        println!("| state: {what} | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
        assert_failed(&run, 1, &format!("state Secret {}/{name} is unreadable: {reason}", site.state_ns));
        assert_failed(&run, 1, &format!("(kubectl -n {} delete secret {name})", site.state_ns));
        assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "{what}: nothing written");
    }

    // The recovery the message names.
    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let run = site.sync(&source, &[]).await;
    assert_applied(&run, BASELINE);
    assert!(run.stderr.contains("starting from an empty floor"), "{run:?}");
    assert_converged(&site, &baseline).await;
}

/// Deleting the state Secret deletes the floor: the store's bundle is then accepted if it
/// verifies and has not expired, whatever its version, with a warning naming the Secret;
/// and objects of versions applied before the deletion are no longer pruned.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_state_forgets_the_floor_and_the_inventory_and_says_so() {
    let v10 = Version::new(BASELINE, 2, 64);
    let (site, old_store) = site_with_baseline("v10", &v10).await;
    let v11 = Version::new(BASELINE + 1, 3, 64);
    let store = publish_layout(&site, "store", v11.signed(&site)).await;
    assert_applied(&site.sync(&store, &[]).await, v11.number);
    assert_converged(&site, &v11).await;

    let name = format!("airlock-state-{}", site.cluster.name());
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let live = applied_maps(&site).await;

    // An older version that has expired is still refused: expiry needs no state.
    let expired = Version::new(BASELINE - 1, 2, 64).signed_as(&site, |r| {
        r.issued_at -= SignedDuration::from_hours(2);
        r.expires = r.issued_at + SignedDuration::from_hours(1);
    });
    let expired_store = publish_layout(&site, "v9", expired).await;
    let run = site.sync(&expired_store, &[]).await;
    println!("| state deleted, v9 expired | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 3, "bundle expired at ");
    assert_eq!((applied_maps(&site).await, state_version(&site).await), (live, None), "nothing written");

    // The older version 10, still valid, is applied: the floor went with the Secret.
    let run = site.sync(&old_store, &[]).await;
    println!("| state deleted, v10 after v11 | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_applied(&run, v10.number);
    let warning = "no state Secret (a first run, or it was deleted): starting from an empty floor";
    assert!(run.stderr.contains(warning) && run.stderr.contains(&name), "{run:?}");

    // cm-2 of version 11 is in no inventory now: the next version does not prune it.
    let v12 = Version::new(BASELINE + 2, 2, 64);
    publish_layout(&site, "store", v12.signed(&site)).await;
    assert_applied(&site.sync(&store, &[]).await, v12.number);
    let mut live = applied_maps(&site).await;
    let orphan = live.remove("cm-2").expect("cm-2 of version 11 is left behind");
    assert_eq!(orphan.version, v11.number.to_string());
    assert_eq!(live.keys().collect::<Vec<_>>(), ["cm-0", "cm-1"]);
    assert!(live.values().all(|a| a.version == v12.number.to_string()), "{live:?}");
    assert_eq!(state_version(&site).await, Some(v12.number));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_git_remote_rewound_to_an_older_history_is_refused() {
    let mut site = Site::new().await;
    let url = new_git_repo(&format!("faults-{}", site.cluster.name()));
    let source = format!("git+{url}");
    let git = GitStore::with_cache(&url, "main", &site.path("git-cache")).expect("Git store opens");
    git.publish(&[Version::new(BASELINE, 2, 64).signed(&site)], &PublishMeta::default()).await.expect("published");
    site.apply_baseline(&source).await;
    let old_tip = git_out(&["ls-remote", &url, "refs/heads/main"]);
    let old_tip = old_tip.split_whitespace().next().expect("a tip").to_string();
    let v11 = Version::new(BASELINE + 1, 3, 64);
    git.publish(&[v11.signed(&site)], &PublishMeta::default()).await.expect("published");
    assert_applied(&site.sync(&source, &[]).await, v11.number);

    // Force-push the older commit over the branch.
    let clone = site.path("clone");
    git_out(&["clone", "-q", "--bare", &url, clone.to_str().expect("UTF-8 path")]);
    git_out(&[
        "-C",
        clone.to_str().expect("UTF-8 path"),
        "push",
        "-q",
        "--force",
        "origin",
        &format!("{old_tip}:main"),
    ]);
    let before = site.snapshot().await;
    let run = site.sync(&source, &[]).await;
    println!("| Git remote rewound | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 3, &format!("rollback: version {BASELINE} is older than the applied version {}", v11.number));
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "a refusal changes nothing");
    assert_eq!(state_version(&site).await, Some(v11.number));

    // The next version, published on the rewound history, applies.
    let v12 = Version::new(BASELINE + 2, 2, 64);
    git.publish(&[v12.signed(&site)], &PublishMeta::default()).await.expect("published on the rewound branch");
    assert_applied(&site.sync(&source, &[]).await, v12.number);
    assert_converged(&site, &v12).await;
}

fn git_out(args: &[&str]) -> String {
    let out = Command::new("git").args(args).output().expect("git runs");
    assert!(out.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).expect("git prints UTF-8")
}

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    gz.write_all(bytes).expect("writing to memory");
    gz.finish().expect("writing to memory")
}
