//! `maxConsecutiveFailures` (spec 5.7) across runs of the real binary: each run that fails
//! a part is counted in the state, whose applied version stays; once the count reaches
//! the limit the part is left as it is (skipped, not pruned) and the rest of the bundle is
//! applied; new content of the part is tried again.

use airlock_bundle::PartSettings;
use airlock_e2e::assert_exit;
use airlock_e2e::puller::{Signing, Site};
use airlock_puller::engine::Action;

fn limited(limit: u32) -> Signing {
    Signing { settings: Some(PartSettings { max_consecutive_failures: Some(limit), ..PartSettings::default() }), ..Signing::default() }
}

#[tokio::test(flavor = "multi_thread")]
async fn max_consecutive_failures_stops_retrying_a_part_until_its_content_changes() {
    let site = Site::new("maxfail").await;
    site.publish("store", &[site.signed_as(1, site.files(2, "one"), limited(2), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);

    // Version 2 drops cm-1, changes cm-0 and adds a ConfigMap the API server refuses.
    let mut files = site.files(1, "two");
    let ns = &site.app_ns;
    files.push((
        format!("ClusterProfile.app/ConfigMap.{ns}.broken.yaml"),
        format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: broken\n  namespace: {ns}\ndata:\n  k: [1]\n").into_bytes(),
    ));
    let v2 = site.signed_as(2, files, limited(2), |_| {});
    let part = v2.statement.predicate.profiles.iter().find(|p| p.name == "ClusterProfile.app").expect("the part").digest;
    site.publish("store", &[v2]).await;
    for runs in 1..=2 {
        let failed = site.sync("store").await;
        assert_exit(&failed, 1);
        assert!(failed.stderr.contains(&format!("failed to apply: ConfigMap {ns}/broken")), "{failed:?}");
        let state = site.state().await.expect("state");
        assert_eq!(state.version, 1, "a failed run applies no version");
        assert_eq!(
            (state.failures.len(), state.failures[0].part.as_str(), state.failures[0].digest, state.failures[0].runs),
            (1, "ClusterProfile.app", part, runs)
        );
    }

    // The limit is reached: the part is left as it is, the run succeeds without it.
    let before = site.config_maps().await;
    let (held, requests) = site.counted_sync("store").await;
    assert_exit(&held, 0);
    assert!(held.stdout.contains("applied version 2"), "{held:?}");
    assert!(!requests.iter().any(|r| r.contains("/configmaps/broken") || r.contains("/configmaps/cm-")), "not tried: {requests:?}");
    let kept = site.kept_report().await.report;
    let skipped: Vec<_> = kept.objects.iter().filter(|r| r.profile == "ClusterProfile.app").collect();
    assert!(!skipped.is_empty() && skipped.iter().all(|r| r.action == Action::Skipped), "{:?}", kept.objects);
    let why = skipped[0].detail.as_deref().unwrap_or_default();
    assert!(why.contains("the last 2 runs failed") && why.contains("maxConsecutiveFailures 2"), "{why}");
    let after = site.config_maps().await;
    assert_eq!(after.keys().collect::<Vec<_>>(), ["cm-0", "cm-1"], "cm-1 of the part held back is not pruned");
    assert_eq!(after["cm-0"].metadata.resource_version, before["cm-0"].metadata.resource_version);
    let state = site.state().await.expect("state");
    assert_eq!((state.version, state.failures[0].runs), (2, 2), "the count stays while the part is held back");
    assert!(site.kept.inventory().await.expect("inventory").objects.iter().any(|e| e.id.name == "cm-1"), "and stays in the inventory");

    // New content of the part is tried again, and applies.
    site.publish("store", &[site.signed_as(3, site.files(1, "three"), limited(2), |_| {})]).await;
    let resumed = site.sync("store").await;
    assert_exit(&resumed, 0);
    assert!(resumed.stdout.contains("applied version 3"), "{resumed:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.keys().collect::<Vec<_>>(), ["cm-0"]);
    assert_eq!(cms["cm-0"].data.as_ref().unwrap()["value"], "three");
    assert!(site.state().await.expect("state").failures.is_empty(), "applied: counted no more");
}
