//! The inventory Secret (`airlock-inventory-<cluster>`): corrupted by hand,
//! left behind by a run stopped between its two writes, and absent beside a state of the
//! earlier layout that keeps its inventory inline. Every case ends with the objects a
//! version dropped pruned, or says why they cannot be.

use airlock_e2e::Run;
use airlock_e2e::hostile_site::{BASELINE, Site};
use k8s_openapi::api::core::v1::Secret;
use kube::api::{Api, DeleteParams};

use super::{
    Version, assert_applied, assert_converged, assert_unreadable, gunzip, gzip, overwrite_secret, publish_layout, site_with_baseline,
};

const STATE_KEY: &str = "state.json.gz";
const INVENTORY_KEY: &str = "inventory.json.gz";

/// A site with `maps` ConfigMaps applied as the baseline from the layout `store`; its
/// `--source`, and the puller's Secrets with the names of its state and inventory.
async fn site(maps: usize) -> (Site, String, Api<Secret>, String, String) {
    let (site, source) = site_with_baseline("store", &Version::new(BASELINE, maps, 64)).await;
    let api = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let [state, inventory] = ["state", "inventory"].map(|what| format!("airlock-{what}-{}", site.cluster.name()));
    (site, source, api, state, inventory)
}

/// The JSON the Secret `name` keeps gzip'd under `key`.
async fn read_json(api: &Api<Secret>, name: &str, key: &str) -> serde_json::Value {
    let secret = api.get(name).await.unwrap_or_else(|e| panic!("read {name}: {e}"));
    serde_json::from_slice(&gunzip(&secret.data.expect("data")[key].0)).expect("JSON")
}

/// Publishes `version` into the layout `layout` and syncs it from `source`, which must
/// apply it; the run.
async fn apply(site: &Site, layout: &str, source: &str, version: &Version) -> Run {
    publish_layout(site, layout, version.signed(site)).await;
    let run = site.sync(source, &[]).await;
    assert_applied(&run, version.number);
    run
}

/// An unreadable inventory stops only the runs that need it, those that apply; a run that
/// finds nothing to do does not read it. Deleting it, as the error says, costs the pruning
/// of what it listed, with a warning.
#[tokio::test(flavor = "multi_thread")]
async fn a_corrupted_inventory_stops_the_next_apply_until_deleted() {
    let (site, source, api, _, name) = site(2).await;
    let good = read_json(&api, &name, INVENTORY_KEY).await;
    let mut foreign = good.clone();
    foreign["cluster"] = "e2e/another".into();
    let corruptions = [
        ("gzip of text that is not JSON", "inventory.json.gz: expected ident", INVENTORY_KEY, gzip(b"not JSON")),
        ("the inventory of another cluster", "it belongs to cluster e2e/another", INVENTORY_KEY, gzip(foreign.to_string().as_bytes())),
        ("the inventory under another key", "no inventory.json.gz key", "inventory.json", good.to_string().into_bytes()),
    ];
    let next = Version::new(BASELINE + 1, 3, 64);
    let store = publish_layout(&site, "next", next.signed(&site)).await;
    for (what, reason, key, bytes) in corruptions {
        overwrite_secret(&site, &name, key, bytes).await;
        let before = site.snapshot().await;
        let unchanged = site.sync(&source, &[]).await;
        assert!(unchanged.code == Some(0) && unchanged.stdout.contains("up to date"), "{what}: {unchanged:?}");
        let run = site.sync(&store, &[]).await;
        assert_unreadable(&run, &site, &before, "inventory", &name, what, reason).await;
    }

    api.delete(&name, &DeleteParams::default()).await.expect("inventory deleted");
    let run = site.sync(&store, &[]).await;
    assert_applied(&run, next.number);
    assert!(run.stderr.contains(&format!("the inventory Secret {}/{name} is missing", site.state_ns)), "{run:?}");
    assert_converged(&site, &next).await;
}

/// The inventory is written before the state. A run stopped between the two writes (here:
/// the state put back as it was before them) leaves the new inventory beside the old state;
/// the next run says so, and prunes by the inventory Secret, which knows every object
/// the interrupted run applied: nothing is left behind.
#[tokio::test(flavor = "multi_thread")]
async fn a_run_stopped_between_writing_the_inventory_and_the_state_loses_no_object() {
    let (site, source, api, state, name) = site(2).await;
    let old_state = api.get(&state).await.expect("the state").data.expect("data")[STATE_KEY].clone();
    let v11 = Version::new(BASELINE + 1, 3, 64);
    apply(&site, "store", &source, &v11).await;
    overwrite_secret(&site, &state, STATE_KEY, old_state.0).await;

    let v12 = Version::new(BASELINE + 2, 2, 64);
    let run = apply(&site, "store", &source, &v12).await;
    let warning = format!(
        "the inventory Secret {ns}/{name} (version {}) is not the one the state Secret {ns}/{state} (version {BASELINE})",
        v11.number,
        ns = site.state_ns
    );
    assert!(run.stderr.contains(&warning), "{run:?}");
    assert_converged(&site, &v12).await;
}

/// A state Secret of the earlier layout keeps the inventory inline and has no inventory
/// Secret: it is read as it is, pruned by, and the next write moves the inventory out.
#[tokio::test(flavor = "multi_thread")]
async fn a_state_with_its_inventory_inline_is_read_and_written_again_apart() {
    let (site, source, api, state, name) = site(3).await;
    let mut legacy = read_json(&api, &state, STATE_KEY).await;
    legacy["inventory"] = read_json(&api, &name, INVENTORY_KEY).await["objects"].clone();
    legacy.as_object_mut().expect("an object").remove("inventoryDigest");
    overwrite_secret(&site, &state, STATE_KEY, gzip(legacy.to_string().as_bytes())).await;
    api.delete(&name, &DeleteParams::default()).await.expect("inventory deleted");

    let unchanged = site.sync(&source, &[]).await;
    assert!(unchanged.code == Some(0) && unchanged.stdout.contains("up to date"), "{unchanged:?}");
    let v11 = Version::new(BASELINE + 1, 2, 64);
    let run = apply(&site, "store", &source, &v11).await;
    assert!(!run.stderr.contains("inventory Secret"), "nothing to warn about: {run:?}");
    assert_converged(&site, &v11).await;
    let written = read_json(&api, &state, STATE_KEY).await;
    assert!(written.get("inventory").is_none() && written["inventoryDigest"].is_string(), "{written}");
    let inventory = read_json(&api, &name, INVENTORY_KEY).await;
    assert_eq!((inventory["version"].as_u64(), inventory["objects"].as_array().map(Vec::len)), (Some(v11.number), Some(3)));
}
