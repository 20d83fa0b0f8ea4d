//! What guards against going back: the state Secret (the version floor) corrupted or
//! deleted by hand, and a Git remote rewound to an older history.
//!
//! `puller.rs` already shows a state Secret of bytes that are not gzip stops the puller,
//! and that deleting it starts over; here the corruptions that get further (gzip of
//! garbage, a state of another cluster, a missing data key, a kept keyring that does not
//! parse), and what a deleted state forgets: nothing while the inventory Secret and the
//! kept report ConfigMap are left, the inventory when its Secret is deleted too, the floor
//! when the kept report is. The inventory Secret's own faults are in `inventory.rs`.

use std::process::Command;

use airlock_e2e::hostile_site::{BASELINE, Site};
use airlock_e2e::new_git_repo;
use airlock_store::{GitStore, PublishMeta, Store};
use jiff::SignedDuration;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, DeleteParams};

use super::{
    Version, applied_maps, assert_applied, assert_converged, assert_failed, assert_unreadable, changes, gunzip, gzip, overwrite_secret,
    publish_layout, site_with_baseline, state_version,
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
    let state: serde_json::Value = serde_json::from_slice(&gunzip(&good.data.as_ref().unwrap()[STATE_KEY].0)).expect("the state is JSON");
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
    ];

    for Corruption { what, reason, key, bytes } in corruptions {
        overwrite_secret(&site, &name, key, bytes).await;
        let before = site.snapshot().await;
        let run = site.sync(&source, &[]).await;
        assert_unreadable(&run, &site, &before, "state", &name, what, reason).await;
    }

    // Keyring fields edited by hand are not trusted, so they do not make the state
    // unreadable either: the one an earlier release kept is not read, a kept chain that
    // does not follow from the keyring file is dropped with a warning.
    let keyrings = edited(&|s| {
        s["keyring"] = serde_json::json!({"version": "two"});
        s["keyringChain"] = serde_json::json!([{"payload": "x"}]);
    });
    overwrite_secret(&site, &name, STATE_KEY, keyrings).await;
    let run = site.sync(&source, &[]).await;
    assert_eq!(run.code, Some(0), "{run:?}");
    assert!(run.stdout.contains(&format!("is up to date at version {BASELINE}")), "{run:?}");
    assert!(run.stderr.contains("the state's keyring chain does not follow from the keyring file: ignored"), "{run:?}");

    // The recovery the message names. The failed runs kept the applied version in the
    // kept report, which is now the floor; its own version is applied again as new.
    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let run = site.sync(&source, &[]).await;
    assert_applied(&run, BASELINE);
    assert!(run.stderr.contains(&format!("the rollback floor is version {BASELINE} (sha256:")), "{run:?}");
    assert_converged(&site, &baseline).await;
    assert_eq!(state_version(&site).await, Some(BASELINE), "the state is written again");
}

/// Deleting the state Secret leaves the floor in the kept report ConfigMap: an older
/// version, validly signed and unexpired, is refused as a rollback, with a warning naming
/// both objects; and the inventory in its own Secret, so the next version still prunes.
/// Deleting the inventory Secret too forgets what to prune: objects of versions applied
/// before are left behind. Deleting the kept report too forgets the floor: the store's
/// bundle is then accepted if it verifies and has not expired, whatever its version.
#[tokio::test(flavor = "multi_thread")]
async fn a_deleted_state_keeps_the_floor_of_the_kept_report_and_the_inventory_of_its_secret() {
    let v10 = Version::new(BASELINE, 2, 64);
    let (site, old_store) = site_with_baseline("v10", &v10).await;
    let v11 = Version::new(BASELINE + 1, 3, 64);
    let store = publish_layout(&site, "store", v11.signed(&site)).await;
    assert_applied(&site.sync(&store, &[]).await, v11.number);
    assert_converged(&site, &v11).await;

    let name = format!("airlock-state-{}", site.cluster.name());
    let inventory = format!("airlock-inventory-{}", site.cluster.name());
    let report = format!("airlock-report-{}", site.cluster.name());
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");

    // The older version 10, still valid, is refused as any rollback is. (The site's
    // snapshot needs a state Secret; the applied ConfigMaps carry their resourceVersions.)
    let live = applied_maps(&site).await;
    let logged = ["--log-format", "json", "--log", "warn,kube_client=debug"].map(String::from);
    let run = site.sync(&old_store, &logged).await;
    println!("| state deleted, v10 after v11 | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 3, &format!("rollback: version {BASELINE} is older than the applied version {}", v11.number));
    let warning = format!("the rollback floor is version {} (sha256:", v11.number);
    assert!(run.stderr.contains(&warning) && run.stderr.contains(&name) && run.stderr.contains(&report), "{run:?}");
    // The kept report is read once: for the floor, and to keep this run's report against.
    let report_reads = run
        .stderr
        .lines()
        .filter_map(|line| serde_json::from_str::<serde_json::Value>(line).ok())
        .filter(|event| event["message"] == "requesting" && event["span"]["http.method"] == "GET")
        .filter(|event| event["span"]["http.url"].as_str().is_some_and(|url| url.contains(&format!("/configmaps/{report}"))))
        .count();
    assert_eq!(report_reads, 1, "{run:?}");
    assert_eq!((applied_maps(&site).await, state_version(&site).await), (live, None), "a refusal changes nothing");

    // cm-2 of version 11 is still in the inventory Secret: the next version prunes it.
    let v12 = Version::new(BASELINE + 2, 2, 64);
    publish_layout(&site, "store", v12.signed(&site)).await;
    let run = site.sync(&store, &[]).await;
    assert_applied(&run, v12.number);
    assert!(run.stderr.contains(&format!("inventory Secret {}/{inventory} of version {} is left", site.state_ns, v11.number)), "{run:?}");
    assert_converged(&site, &v12).await;

    // The state and the inventory deleted: cm-1 of version 12 is in no inventory now, and
    // the next version does not prune it.
    for secret in [&name, &inventory] {
        secrets.delete(secret, &DeleteParams::default()).await.expect("Secret deleted");
    }
    let v13 = Version::new(BASELINE + 3, 1, 64);
    publish_layout(&site, "store", v13.signed(&site)).await;
    let run = site.sync(&store, &[]).await;
    assert_applied(&run, v13.number);
    assert!(run.stderr.contains("(a first run, or both deleted): objects an earlier run applied"), "{run:?}");
    let mut live = applied_maps(&site).await;
    let orphan = live.remove("cm-1").expect("cm-1 of version 12 is left behind");
    assert_eq!(orphan.version, v12.number.to_string());
    assert_eq!(live.keys().collect::<Vec<_>>(), ["cm-0"]);
    assert!(live.values().all(|a| a.version == v13.number.to_string()), "{live:?}");
    assert_eq!(state_version(&site).await, Some(v13.number));

    // The state and the kept report deleted: the floor is gone.
    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &site.state_ns);
    config_maps.delete(&report, &DeleteParams::default()).await.expect("kept report deleted");
    let live = applied_maps(&site).await;

    // An older version that has expired is still refused: expiry needs no state.
    let expired = Version::new(BASELINE - 1, 2, 64).signed_as(&site, |r| {
        r.issued_at -= SignedDuration::from_hours(2);
        r.expires = r.issued_at + SignedDuration::from_hours(1);
    });
    let expired_store = publish_layout(&site, "v9", expired).await;
    let run = site.sync(&expired_store, &[]).await;
    let last = run.stderr.lines().last().unwrap_or_default();
    println!("| state and report deleted, v9 expired | {:?} | {last} |", run.code);
    assert_failed(&run, 3, "bundle expired at ");
    assert_eq!((applied_maps(&site).await, state_version(&site).await), (live, None), "nothing written");
    // That refusal is kept in a new report ConfigMap, which names no applied version.

    let run = site.sync(&old_store, &[]).await;
    let last = run.stderr.lines().last().unwrap_or_default();
    println!("| state and report deleted, v10 after v13 | {:?} | {last} |", run.code);
    assert_applied(&run, v10.number);
    let warning = "no applied version in the kept report ConfigMap: starting from an empty floor";
    assert!(run.stderr.contains(warning) && run.stderr.contains(&name), "{run:?}");
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
    git_out(&["-C", clone.to_str().expect("UTF-8 path"), "push", "-q", "--force", "origin", &format!("{old_tip}:main")]);
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
