//! The puller's clock moved, at process level: the real binary runs under libfaketime
//! (`LD_PRELOAD`, `FAKETIME`), so every clock read of the process is shifted, the bundle
//! checks and the TLS certificate checks alike.
//!
//! Moving it forward is the simple case: past a bundle's expiry it is refused (spec 8.10),
//! a new one and the one already applied alike (a store frozen on an old bundle, spec 11).
//! A clock set back cannot be faked below the API server's serving certificate, which
//! `hack/kube.sh` makes minutes before the tests in CI: TLS would fail first. So the test
//! runs the puller two days ahead first, lets it accept a bundle issued then, and sets it
//! back to the real time: from the puller's point of view its clock went back two days
//! behind the newest `issuedAt` it accepted, which is the case spec 8.9 and 8.10 are about.
//! The 5-minute skew of spec 8.9 needs no fake clock: bundles issued a little ahead of it.

use std::path::PathBuf;

use airlock_e2e::Run;
use airlock_e2e::hostile_site::{BASELINE, Site};
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use kube::api::Api;

use super::{
    Version, assert_applied, assert_converged, assert_failed, changes, gunzip, gzip, overwrite_secret, publish_layout, site_with_baseline,
    state_version,
};

#[tokio::test(flavor = "multi_thread")]
async fn a_clock_moved_past_expiry_refuses_the_bundle() {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, 2, 64)).await;
    // Valid for the hour of `Site::release`.
    let next = Version::new(BASELINE + 1, 3, 64);
    publish_layout(&site, "store", next.signed(&site)).await;
    let before = site.snapshot().await;

    let run = sync_with_clock(&site, &source, "+40d").await;
    println!("| clock +40d | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 3, "bundle expired at ");
    let faked = (Timestamp::now() + SignedDuration::from_hours(40 * 24)).to_string();
    assert!(run.stderr.contains(&format!("(reference time {}", &faked[..10])), "the clock did not move: {run:?}");
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "a refusal changes nothing");
    assert_eq!(state_version(&site).await, Some(BASELINE));

    assert_applied(&site.sync(&source, &[]).await, next.number);
    assert_converged(&site, &next).await;

    // A store frozen on that bundle: once the clock passes its expiry, the bundle already
    // applied is refused too (spec 11, freeze), and the cluster is left as it is.
    let before = site.snapshot().await;
    let frozen = sync_with_clock(&site, &source, "+40d").await;
    println!("| clock +40d, applied bundle | {:?} | {} |", frozen.code, frozen.stderr.lines().last().unwrap_or_default());
    assert_failed(&frozen, 3, "bundle expired at ");
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "a refusal changes nothing");
    assert_converged(&site, &next).await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_clock_behind_keeps_the_skew_and_a_clock_set_back_still_sees_expiry() {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, 2, 64)).await;
    let now = site.release(0).issued_at;
    let issued = |at: Timestamp| {
        move |r: &mut airlock_bundle::Release| {
            r.issued_at = at;
            r.expires = at + SignedDuration::from_hours(1);
        }
    };

    // The puller's clock 6 minutes behind the publisher's: over the skew of 5.
    let v11 = Version::new(BASELINE + 1, 2, 64);
    publish_layout(&site, "store", v11.signed_as(&site, issued(now + SignedDuration::from_mins(6)))).await;
    refused(&site, &source, &["is in the future", "allowed skew 300s"]).await;

    // 4 minutes behind: within it.
    let v12 = Version::new(BASELINE + 2, 2, 64);
    publish_layout(&site, "store", v12.signed_as(&site, issued(now + SignedDuration::from_mins(4)))).await;
    assert_applied(&site.sync(&source, &[]).await, v12.number);
    assert_converged(&site, &v12).await;

    // The puller's clock runs two days ahead, and it accepts a bundle issued then.
    let ahead = now + SignedDuration::from_hours(48);
    let v13 = Version::new(BASELINE + 3, 2, 64);
    publish_layout(&site, "store", v13.signed_as(&site, issued(ahead))).await;
    assert_applied(&sync_with_clock(&site, &source, "+2d").await, v13.number);
    assert_converged(&site, &v13).await;

    // Its clock is set back two days. A bundle that expired an hour before the newest
    // issuedAt it accepted is expired, though by the clock it has two days to run.
    let v14 = Version::new(BASELINE + 4, 2, 64);
    let expired = move |r: &mut airlock_bundle::Release| {
        r.issued_at = ahead - SignedDuration::from_hours(2);
        r.expires = ahead - SignedDuration::from_hours(1);
    };
    publish_layout(&site, "store", v14.signed_as(&site, expired)).await;
    refused(&site, &source, &["bundle expired at ", &format!("(reference time {ahead})")]).await;

    // A clock known wrong cannot judge "future", but the newest issuedAt accepted bounds
    // it: one validity (90 days) past it, a far-future bundle would freeze the floor.
    let far = Version::new(BASELINE + 5, 2, 64);
    publish_layout(&site, "store", far.signed_as(&site, issued(ahead + SignedDuration::from_hours(91 * 24)))).await;
    refused(&site, &source, &["more than 90 days after the newest issuedAt accepted", &format!("{ahead}")]).await;

    // A bundle issued two days ahead of the clock is not "in the future": the clock is
    // behind what the puller accepted before, so it is known wrong (spec 8.9).
    let v15 = Version::new(BASELINE + 6, 2, 64);
    publish_layout(&site, "store", v15.signed_as(&site, issued(ahead + SignedDuration::from_mins(1)))).await;
    assert_applied(&site.sync(&source, &[]).await, v15.number);
    assert_converged(&site, &v15).await;
}

/// A sync of `source` is refused, naming each of `why`, and changes nothing.
async fn refused(site: &Site, source: &str, why: &[&str]) {
    let applied = state_version(site).await;
    let before = site.snapshot().await;
    let run = site.sync(source, &[]).await;
    println!("| {} | {:?} | {} |", why[0], run.code, run.stderr.lines().last().unwrap_or_default());
    for why in why {
        assert_failed(&run, 3, why);
    }
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "a refusal changes nothing");
    assert_eq!(state_version(site).await, applied);
}

/// `airlock-puller sync` with its clock shifted by `offset` (libfaketime's `FAKETIME`
/// syntax, e.g. `+40d`).
async fn sync_with_clock(site: &Site, source: &str, offset: &str) -> Run {
    let mut cmd = site.sync_command(source, &[]);
    cmd.env("LD_PRELOAD", libfaketime())
        .env("FAKETIME", offset)
        // Timers and timeouts run on the real monotonic clock.
        .env("FAKETIME_DONT_FAKE_MONOTONIC", "1");
    cmd.output().await.expect("airlock-puller runs").into()
}

/// libfaketime's preload library, where Debian's `libfaketime` package puts it (the
/// `faketime` package, which `hack/test.sh` installs, depends on it).
fn libfaketime() -> PathBuf {
    let multiarch = std::fs::read_dir("/usr/lib").into_iter().flatten().flatten().map(|e| e.path());
    std::iter::once(PathBuf::from("/usr/lib"))
        .chain(multiarch)
        .map(|dir| dir.join("faketime/libfaketime.so.1"))
        .find(|lib| lib.is_file())
        .expect("libfaketime is not installed: `apt-get install faketime` (hack/test.sh does)")
}

/// Whoever can write the state Secret edits the record of the bundle applied, which an
/// unchanged run once took instead of the envelope: an expiry in 2099 and another signer.
/// Every run verifies signed bytes (here the bytes the record kept of the layout's
/// manifest, which is unchanged), so past the bundle's real expiry it is refused all the same.
#[tokio::test(flavor = "multi_thread")]
async fn an_edited_record_cannot_hide_an_expiry() {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, 2, 64)).await;
    let name = format!("airlock-state-{}", site.cluster.name());
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let stored = secrets.get(&name).await.expect("the state Secret");
    let mut state: serde_json::Value =
        serde_json::from_slice(&gunzip(&stored.data.as_ref().expect("data")["state.json.gz"].0)).expect("the state is JSON");
    let record = &mut state["verified"];
    assert!(record["read"]["bytes"]["envelope"].is_string(), "the layout's manifest was read through and its bytes kept: {record}");
    record["expires"] = "2099-01-01T00:00:00Z".into();
    record["signers"] = serde_json::json!(["from-the-record"]);
    overwrite_secret(&site, &name, "state.json.gz", gzip(state.to_string().as_bytes())).await;
    let before = site.snapshot().await;

    let run = sync_with_clock(&site, &source, "+40d").await;
    assert_failed(&run, 3, "bundle expired at ");
    assert!(!run.stderr.contains("2099"), "the record's expiry was not read: {run:?}");
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "a refusal changes nothing");
    assert_eq!(state_version(&site).await, Some(BASELINE));
}
