use airlock_bundle::SyncMode;

use super::*;
use crate::engine::testing;

fn object(mode: SyncMode, hash: &str) -> DesiredObject {
    DesiredObject { sync_mode: mode, hash: hash.into(), ..testing::object("v1", "ConfigMap", Some("a"), "x") }
}

fn entry(hash: &str) -> InventoryEntry {
    InventoryEntry {
        id: object(SyncMode::Continuous, hash).id,
        profile: "ClusterProfile.p".into(),
        applied_hash: hash.into(),
        leave_on_removal: false,
        release: None,
        hook: false,
        propagation: None,
        adopted: false,
        service_account: None,
    }
}

#[test]
fn decide_follows_sync_mode_and_previous_inventory() {
    use SyncMode::*;
    let same = entry("h1");
    let older = entry("h0");
    let cases = [
        (Continuous, None, Some(Step::Apply)),
        (Continuous, Some(&older), Some(Step::Apply)),
        (Continuous, Some(&same), Some(Step::Unchanged)),
        (OneTime, None, Some(Step::Apply)),
        (OneTime, Some(&older), Some(Step::Keep(Box::new(older.clone())))),
        (OneTime, Some(&same), Some(Step::Keep(Box::new(same.clone())))),
        (ContinuousWithDriftDetection, None, Some(Step::Apply)),
        (ContinuousWithDriftDetection, Some(&older), Some(Step::Apply)),
        (ContinuousWithDriftDetection, Some(&same), None),
        (DryRun, None, Some(Step::Preview)),
        (DryRun, Some(&same), Some(Step::Preview)),
    ];
    for (mode, previous, expected) in cases {
        assert_eq!(decide(&object(mode, "h1"), previous), expected, "{mode:?} {previous:?}");
    }
}

#[test]
fn an_object_sveltos_keeps_out_of_drift_detection_is_not_compared_but_still_applied_when_it_changes() {
    let ignored = DesiredObject { drift_ignored: true, ..object(SyncMode::ContinuousWithDriftDetection, "h1") };
    assert_eq!(decide(&ignored, Some(&entry("h1"))), Some(Step::Unchanged), "not compared with its live copy");
    assert_eq!(decide(&ignored, Some(&entry("h0"))), Some(Step::Apply), "a new manifest is applied");
    assert_eq!(decide(&ignored, None), Some(Step::Apply));
}

#[test]
fn the_previous_inventory_is_found_whatever_the_api_version() {
    let mut old = entry("h");
    old.id.version = "v1beta1".into();
    let previous = [old];
    let by_key = index(&previous);
    assert!(by_key.contains_key(&object(SyncMode::Continuous, "h").id.key()));
}
