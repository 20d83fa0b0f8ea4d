//! The bundle's active window (spec 5.6): while it is closed a sync verifies the bundle,
//! changes nothing and reports `deferred` (exit 0), `plan` and `verify` say so; once open,
//! the bundle is applied. And what the publisher noted about its parts (spec 5.9) in the
//! report, also when the bundle is already applied.

use airlock_bundle::statement::{ActiveWindow, FieldNote, RenderFailure, Support};
use airlock_bundle::{PartSettings, Release};
use airlock_e2e::assert_exit;
use airlock_e2e::puller::{Signing, Site};
use airlock_puller::reports::report::RunResult;

/// February 30th: never fires, so a window from it never opens and one to it never closes.
const NEVER: &str = "0 0 30 2 *";
const EVERY_MINUTE: &str = "* * * * *";

fn window(from: &str, to: &str) -> impl FnOnce(&mut Release) {
    let window = ActiveWindow { from: from.into(), to: to.into() };
    move |r: &mut Release| r.settings.active_window = Some(window)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_closed_window_defers_the_bundle_and_an_open_one_applies_it() {
    let site = Site::new("window").await;
    site.publish("store", &[site.signed(1, site.files(2, "one"), window(EVERY_MINUTE, NEVER))]).await;
    let first = site.sync("store").await;
    assert_exit(&first, 0);
    assert!(first.stdout.contains("applied version 1"), "{first:?}");
    let before = site.versions().await;

    // Version 2 changes one ConfigMap and drops the other, while the window is closed.
    site.publish("store", &[site.signed(2, site.files(1, "two"), window(NEVER, EVERY_MINUTE))]).await;
    for _ in 0..2 {
        let deferred = site.sync("store").await;
        assert_exit(&deferred, 0);
        assert!(deferred.stdout.contains("deferred version 2: the active window is closed"), "{deferred:?}");
        assert_eq!(site.versions().await, before, "nothing applied, nothing pruned, no state written");
    }
    let kept = site.kept_report().await.report;
    assert_eq!((kept.result, kept.applied_version, kept.bundle.map(|b| b.version)), (RunResult::Deferred, Some(1), Some(2)));
    assert!(kept.objects.is_empty(), "{:?}", kept.objects);

    let verified = site.run("verify", "store", &[]).await;
    assert_exit(&verified, 0);
    let shown = format!("activeWindow: closed (from {NEVER:?} to {EVERY_MINUTE:?}, UTC) now");
    assert!(verified.stdout.contains(&shown), "{verified:?}");
    let planned = site.run("plan", "store", &[]).await;
    assert_exit(&planned, 0);
    assert!(planned.stdout.contains("active window closed") && planned.stdout.contains("a sync now changes nothing"), "{planned:?}");
    assert_eq!(site.versions().await, before, "plan and verify write nothing");

    site.publish("store", &[site.signed(3, site.files(1, "three"), window(EVERY_MINUTE, NEVER))]).await;
    let opened = site.sync("store").await;
    assert_exit(&opened, 0);
    assert!(opened.stdout.contains("applied version 3"), "{opened:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.keys().collect::<Vec<_>>(), ["cm-0"], "cm-1 pruned once the window opened");
    assert_eq!(cms["cm-0"].data.as_ref().unwrap()["value"], "three");
    assert_eq!(site.kept_report().await.report.result, RunResult::Applied);
}

#[tokio::test(flavor = "multi_thread")]
async fn the_report_carries_what_the_publisher_noted_as_signed() {
    let site = Site::new("notes").await;
    let note = FieldNote { field: "spec.validateHealths".into(), support: Support::NotSupported, detail: "health checks not run".into() };
    let failure = RenderFailure { message: "template: missing key".into(), kept_from: None };
    let settings = PartSettings { notes: vec![note.clone()], failure: Some(failure.clone()), ..PartSettings::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "one"), Signing { settings: Some(settings), ..Signing::default() }, |_| {})])
        .await;
    assert_exit(&site.sync("store").await, 0);
    let kept = site.kept_report().await.report;
    assert_eq!(kept.profiles.len(), 1, "{:?}", kept.profiles);
    assert_eq!(
        (kept.profiles[0].name.as_str(), &kept.profiles[0].notes, &kept.profiles[0].failure),
        ("ClusterProfile.app", &vec![note], &Some(failure))
    );

    // Up to date, from the state's record of the bundle: the same notes, so the kept
    // report says the same and is not rewritten.
    let version = site.kept.report_version().await;
    let again = site.sync("store").await;
    assert_exit(&again, 0);
    assert!(again.stdout.contains("up to date"), "{again:?}");
    assert_eq!(site.kept_report().await.report.profiles, kept.profiles);
    let report = site.kept_report().await.report;
    assert_eq!(report.result, RunResult::UpToDate);
    assert_ne!(site.kept.report_version().await, version, "applied, then up to date: news once");
    let settled = site.kept.report_version().await;
    assert_exit(&site.sync("store").await, 0);
    assert_eq!(site.kept.report_version().await, settled, "then the same every run");
}
