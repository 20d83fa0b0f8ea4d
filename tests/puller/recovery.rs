//! The state and the Lease under stress: two pullers at once, a missing state namespace,
//! a puller killed mid-apply, a keyring rotated into the state, and a state corrupted or
//! deleted by hand.

use std::time::Duration;

use airlock_bundle::Limits;
use airlock_bundle::{Keyring, SigningKey, keyring};
use airlock_e2e::puller::{Signing, Site};
use airlock_e2e::{Run, assert_exit};
use airlock_puller::reports::report::RunResult;
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams, Patch, PatchParams};

#[tokio::test(flavor = "multi_thread")]
async fn two_pullers_at_once_do_not_both_apply() {
    let site = Site::new("two").await;
    site.publish("store", &[site.signed(1, site.files(200, "one"), |_| {})]).await;
    let (a, b) = tokio::join!(site.sync("store"), site.sync("store"));
    let applied = [&a, &b].iter().filter(|r| r.code == Some(0) && r.stdout.contains("applied version 1")).count();
    assert_eq!(applied, 1, "exactly one applies\n{a:?}\n{b:?}");
    let other = if a.stdout.contains("applied version 1") { &b } else { &a };
    let lost_lease = other.code == Some(1) && other.stderr.contains("another puller holds the lease");
    let came_after = other.code == Some(0) && other.stdout.contains("up to date");
    assert!(lost_lease || came_after, "{other:?}");
    assert_eq!(site.config_maps().await.len(), 200);
    // The puller turned away did nothing and must not replace the holder's report.
    let kept = site.kept_report().await;
    assert!([RunResult::Applied, RunResult::UpToDate].contains(&kept.report.result), "{kept:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_missing_state_namespace_is_named() {
    let site = Site::new("nons").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    let missing = format!("{}-missing", site.state_ns);
    let run = site.run("sync", "store", &["--state-namespace", &missing]).await;
    assert_exit(&run, 1);
    assert!(run.stderr.contains(&format!("state namespace {missing} does not exist")), "{run:?}");
    site.assert_untouched("nothing written").await;
}

#[tokio::test(flavor = "multi_thread")]
async fn a_puller_killed_mid_apply_converges_on_the_next_run() {
    let site = Site::new("killed").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    const COUNT: usize = 600;
    site.publish("store", &[site.signed(2, site.files(COUNT, "two"), |_| {})]).await;

    let mut child = site.command("sync", "store", &["--lease-duration", "5s"]).spawn().expect("puller starts");
    // Kill it once the apply has started and before it can have finished.
    let started = std::time::Instant::now();
    loop {
        let applied = site.config_maps().await.values().filter(|cm| cm.data.as_ref().unwrap()["value"] == "two").count();
        if applied > 0 {
            assert!(applied < COUNT, "the apply finished before it could be killed; use a larger bundle");
            break;
        }
        assert!(
            child.try_wait().unwrap().is_none(),
            "the puller exited before applying: {:?}",
            Run::from(child.wait_with_output().await.unwrap())
        );
        assert!(started.elapsed() < Duration::from_secs(60), "the apply never started");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    child.kill().await.expect("SIGKILL");
    assert_eq!(site.state_version().await, Some(1), "the state never claims a version that was not fully applied");

    // The killed puller's Lease runs out, then the next run converges.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let next = site.run("sync", "store", &["--lease-duration", "5s"]).await;
    assert_exit(&next, 0);
    assert!(next.stdout.contains("applied version 2"), "{next:?}");
    let cms = site.config_maps().await;
    assert_eq!(cms.len(), COUNT);
    assert!(cms.values().all(|cm| cm.data.as_ref().unwrap()["value"] == "two"));
    assert_eq!(site.state_version().await, Some(2));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_rotated_keyring_is_kept_in_the_state() {
    let site = Site::new("rotate").await;
    let new_key = SigningKey::from_seed([2; 32]);
    let rotated = Keyring::new(2, 1, vec![new_key.public()], &Limits::SPEC).unwrap();
    let chain = keyring::chain(&[rotated.sign_update(&site.fixture.keys)]);
    let how = Signing { keys: Some(vec![SigningKey::from_seed([2; 32])]), keyring_chain: Some(chain), ..Signing::default() };
    site.publish("store", &[site.signed_as(1, site.files(1, "one"), how, |r| r.keyring_version = 2)]).await;
    assert_exit(&site.sync("store").await, 0);
    let state = site.state().await.unwrap();
    assert_eq!(state.keyring_chain.map(|c| c.len()), Some(1), "the signed update is kept");

    // The next bundle comes without the chain: only the kept keyring can verify it, the
    // local file (version 1) cannot.
    let how = Signing { keys: Some(vec![new_key]), ..Signing::default() };
    site.publish("store", &[site.signed_as(2, site.files(1, "two"), how, |r| r.keyring_version = 2)]).await;
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains("applied version 2"), "{run:?}");
}

/// Whoever can write the state Secret writes keys into it, as a keyring JSON (the field an
/// earlier release trusted) and as a chain of updates signed by those keys themselves.
#[tokio::test(flavor = "multi_thread")]
async fn keys_written_into_the_state_are_not_trusted() {
    let site = Site::new("forged").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);

    let attacker = SigningKey::from_seed([9; 32]);
    let forged = Keyring::new(2, 1, vec![attacker.public()], &Limits::SPEC).unwrap();
    site.forge_state(|state| {
        state["keyring"] = serde_json::from_slice(&forged.to_json()).unwrap();
        state["keyringChain"] = serde_json::from_slice(&keyring::chain(&[forged.sign_update(&[SigningKey::from_seed([9; 32])])])).unwrap();
    })
    .await;
    let before = site.versions().await;

    let how = Signing { keys: Some(vec![attacker]), ..Signing::default() };
    site.publish("store", &[site.signed_as(2, site.files(1, "two"), how, |r| r.keyring_version = 2)]).await;
    let run = site.sync("store").await;
    assert_exit(&run, 3);
    assert!(run.stderr.contains("signatures: signed by 0 distinct trusted key(s)"), "{run:?}");
    assert!(run.stderr.contains("the state's keyring chain does not follow from the keyring file: ignored"), "{run:?}");
    assert_eq!(site.versions().await, before, "nothing written");
    assert_eq!(site.state_version().await, Some(1));
}

#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_state_stops_the_puller_and_a_deleted_one_starts_over() {
    let site = Site::new("corrupt").await;
    site.publish("store", &[site.signed(1, site.files(1, "one"), |_| {})]).await;
    assert_exit(&site.sync("store").await, 0);
    let secrets = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let name = site.kept.name("airlock-state-");
    let garbage = serde_json::json!({"data": {"state.json.gz": "bm90IGd6aXA="}});
    secrets.patch(&name, &PatchParams::default(), &Patch::Merge(&garbage)).await.expect("state overwritten");
    let before = site.versions().await;

    let run = site.sync("store").await;
    assert_exit(&run, 1);
    let hint = format!("kubectl -n {} delete secret {name}", site.state_ns);
    assert!(run.stderr.contains(&format!("state Secret {}/{name} is unreadable", site.state_ns)) && run.stderr.contains(&hint), "{run:?}");
    assert_eq!(site.versions().await, before, "nothing written");

    secrets.delete(&name, &DeleteParams::default()).await.expect("state deleted");
    let run = site.sync("store").await;
    assert_exit(&run, 0);
    // The failed runs kept the applied version in the kept report: the floor now.
    let floor = "the rollback floor is version 1 (sha256:";
    assert!(run.stdout.contains("applied version 1") && run.stderr.contains(floor), "{run:?}");
    assert_eq!(site.state_version().await, Some(1));
}
