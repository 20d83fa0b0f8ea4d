//! Hostile bundles end to end: the real `airlock-puller sync` against the real
//! Kubernetes 1.20 API server of `hack/services.sh`, fed stores crafted to be wrong in one
//! way each (`hostile/cases.rs`). A baseline bundle is applied first, so there are live
//! objects and a state to protect; then every case must end with its exact exit code
//! (3 refused, 1 a malformed store or an error worth retrying), name its error on stderr,
//! and leave every object the puller could write with the resourceVersion it had.
//!
//! The cases share one cluster and run one after another, so the suite costs one
//! baseline and a fraction of a second per case. What the library refuses on its own is
//! pinned, variant by variant, by `bundle/tests/verify/`; this suite proves the puller
//! acts on those refusals without touching the cluster.

mod cases;
mod craft;
mod damage;

use std::time::Instant;

use airlock_e2e::Run;
use airlock_e2e::hostile_site::{BASELINE, Site, Snapshot};
use airlock_store::StoreRef;

use cases::Case;

/// The suite covers at least this many ways a bundle can be wrong.
const AT_LEAST: usize = 30;

#[tokio::test(flavor = "multi_thread")]
async fn hostile_bundles_are_refused_and_change_nothing() {
    let mut site = Site::new().await;
    let (baseline_store, before) = baseline(&mut site).await;
    let cases = cases::all(&site).await;
    assert!(cases.len() >= AT_LEAST, "{} cases, at least {AT_LEAST} wanted", cases.len());
    let failures = run_all(&site, &cases, before.clone()).await;
    assert!(failures.is_empty(), "{} of {} cases failed:\n\n{}", failures.len(), cases.len(), failures.join("\n\n"));

    // The state the cases attacked still works: the baseline is up to date, and the good
    // bundle every hostile one was made from applies, so each refusal was for its flaw.
    let again = site.sync(&baseline_store, &[]).await;
    assert!(again.code == Some(0) && again.stdout.contains(&format!("up to date at version {BASELINE}")), "{again:?}");
    assert_eq!(site.snapshot().await, before, "an up-to-date sync writes nothing");
    let next = cases::good(&site);
    let next_store = craft::write_store(StoreRef::OciLayout(site.path("next")), &site.cluster, &craft::artifact(&next)).await;
    let applied = site.sync(&next_store, &[]).await;
    let applied_next = format!("applied version {}", cases::NEXT);
    assert!(applied.code == Some(0) && applied.stdout.contains(&applied_next), "{applied:?}");
}

/// Spec 8.1: an oversized envelope is a refusal (exit 3, `envelope: envelope is larger
/// than …`), found from the store's descriptor before a byte of it is read. (It was once
/// reported as a malformed store, exit 1, and retried every run.)
#[tokio::test(flavor = "multi_thread")]
async fn an_envelope_over_the_size_cap_is_refused_unread() {
    let mut site = Site::new().await;
    let (_, before) = baseline(&mut site).await;
    let failures = run_all(&site, &[cases::oversized_envelope(&site).await], before).await;
    assert!(failures.is_empty(), "{}", failures.join("\n\n"));
}

/// Publishes the baseline bundle and applies it. Returns its store and the settled cluster.
async fn baseline(site: &mut Site) -> (String, Snapshot) {
    let bundle = site.signed(site.files(3, "baseline"), &site.release(BASELINE));
    let store = StoreRef::OciLayout(site.path("baseline"));
    let store = craft::write_store(store, &site.cluster, &craft::artifact(&bundle)).await;
    let settled = site.apply_baseline(&store).await;
    (store, settled)
}

/// Runs every case against `before` and returns what went wrong, one entry per failed case.
/// Prints one table row per case (`-- --nocapture`), as RELIABILITY.md records them.
async fn run_all(site: &Site, cases: &[Case], mut before: Snapshot) -> Vec<String> {
    let mut failures = Vec::new();
    for case in cases {
        let started = Instant::now();
        let run = site.sync(&case.source, &case.args).await;
        let after = site.snapshot().await;
        let ms = started.elapsed().as_millis();
        println!("| {} | {:?} | {ms} ms | {} |", case.name, run.code, message(&run, case));
        let problems = problems(case, &run, &before, &after);
        if !problems.is_empty() {
            failures.push(format!("{}: {}\n{run:?}", case.name, problems.join("; ")));
            // Judge the next case against what this one left behind.
            before = after;
        }
    }
    failures
}

/// What is wrong with how the puller answered `case`; empty when nothing is.
fn problems(case: &Case, run: &Run, before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let mut problems = Vec::new();
    if run.code != Some(case.exit) {
        problems.push(format!("exit {:?}, expected {}", run.code, case.exit));
    }
    if !run.stderr.contains(&case.error) {
        problems.push(format!("stderr does not name {:?}", case.error));
    }
    let changed = before.iter().filter(|(k, v)| after.get(*k) != Some(v)).map(|(k, _)| format!("{k} changed or went away"));
    let appeared = after.keys().filter(|k| !before.contains_key(*k)).map(|k| format!("{k} appeared"));
    problems.extend(changed.chain(appeared));
    problems
}

/// The puller's message for the table: the stderr line naming the expected error (else
/// the last line), without colours, timestamp, level and fields.
fn message(run: &Run, case: &Case) -> String {
    let mut lines = run.stderr.lines();
    let line = lines.clone().find(|l| l.contains(&case.error)).or_else(|| lines.next_back()).unwrap_or("");
    let mut plain = String::with_capacity(line.len());
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c == '\x1b' {
            chars.by_ref().find(|&c| c == 'm');
        } else {
            plain.push(c);
        }
    }
    let plain = plain.split_once(" ERROR ").map_or(plain.as_str(), |(_, m)| m);
    plain.split(" cluster=").next().unwrap_or(plain).to_string()
}
