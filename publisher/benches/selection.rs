//! Micro-benchmark of selection: which of 20 ClusterProfiles match each of 10,000
//! SveltosClusters, with the labels and selectors of `hack/bench/gen-fleet.py` (the fleet of
//! the publisher benchmarks), so the figure is the selection step of that publish.
//!
//!     cargo bench -p airlock-publisher --bench selection

use std::hint::black_box;

use airlock_bundle::testkit::yaml::below;
use airlock_publisher::{Inventory, candidates, profiles_for};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use serde_json::{Value, json};

const CLUSTERS: usize = 10_000;
const REGIONS: [&str; 4] = ["eu-west", "eu-central", "us-east", "ap-south"];
const TIERS: [&str; 3] = ["gold", "silver", "bronze"];
const ZONES: [&str; 10] = ["a", "b", "c", "d", "e", "f", "g", "h", "i", "j"];

/// gen-fleet.py's profiles: every selector shape Sveltos has (matchLabels, In, NotIn,
/// Exists, DoesNotExist, and both at once).
fn profiles() -> Vec<Value> {
    let labels = |l: Value| json!({"matchLabels": l});
    let exprs = |e: Value| json!({"matchExpressions": e});
    let selectors = [
        ("base", exprs(json!([{"key": "region", "operator": "Exists"}]))),
        ("monitoring", exprs(json!([{"key": "tier", "operator": "In", "values": TIERS}]))),
        ("region-eu-west", labels(json!({"region": "eu-west"}))),
        ("region-eu-central", labels(json!({"region": "eu-central"}))),
        ("region-us-east", labels(json!({"region": "us-east"}))),
        ("region-ap-south", labels(json!({"region": "ap-south"}))),
        ("tier-gold", labels(json!({"tier": "gold"}))),
        ("tier-silver", labels(json!({"tier": "silver"}))),
        ("tier-bronze", labels(json!({"tier": "bronze"}))),
        ("zone-a", labels(json!({"zone": "a"}))),
        ("zones-bcd", exprs(json!([{"key": "zone", "operator": "In", "values": ["b", "c", "d"]}]))),
        (
            "eu-premium",
            exprs(json!([{"key": "region", "operator": "In", "values": ["eu-west", "eu-central"]},
                         {"key": "tier", "operator": "NotIn", "values": ["bronze"]}])),
        ),
        ("outer-zones", exprs(json!([{"key": "zone", "operator": "NotIn", "values": ["a", "b", "c", "d", "e"]}]))),
        ("us-gold", labels(json!({"region": "us-east", "tier": "gold"}))),
        (
            "no-canary",
            exprs(json!([{"key": "canary", "operator": "DoesNotExist"},
                         {"key": "zone", "operator": "In", "values": ["e", "f"]}])),
        ),
        ("cluster-identity", exprs(json!([{"key": "region", "operator": "Exists"}]))),
        ("ingress", exprs(json!([{"key": "zone", "operator": "Exists"}]))),
        ("gold-backup", labels(json!({"tier": "gold"}))),
        ("edge-agent", exprs(json!([{"key": "zone", "operator": "In", "values": ["f", "g", "h", "i", "j"]}]))),
        ("eu-logging", exprs(json!([{"key": "region", "operator": "In", "values": ["eu-west", "eu-central"]}]))),
    ];
    selectors
        .into_iter()
        .map(|(name, selector)| {
            json!({"apiVersion": "config.projectsveltos.io/v1beta1", "kind": "ClusterProfile",
                   "metadata": {"name": name},
                   "spec": {"clusterSelector": selector,
                            "policyRefs": [{"kind": "ConfigMap", "namespace": "fleet", "name": format!("{name}-manifests")}]}})
        })
        .collect()
}

/// Pull-mode clusters labelled region, tier and zone, picked by a fixed-seed generator.
fn clusters() -> Vec<Value> {
    let mut next = below(0x9e37_79b9_7f4a_7c15);
    (0..CLUSTERS)
        .map(|i| {
            let labels = json!({"region": REGIONS[next(4)], "tier": TIERS[next(3)], "zone": ZONES[i % 10], "env": "production"});
            json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
                   "metadata": {"name": format!("c{i:05}"), "namespace": "fleet", "labels": labels},
                   "spec": {"pullMode": true}})
        })
        .collect()
}

fn selection(c: &mut Criterion) {
    let objects: Vec<Value> = clusters().into_iter().chain(profiles()).collect();
    let read = || {
        let inventory = Inventory::from_objects(objects.iter().map(|v| (String::from("bench"), v)));
        assert!(inventory.broken.is_empty(), "fleet parses");
        inventory
    };
    let inventory = read();

    let mut g = c.benchmark_group("selection");
    g.throughput(Throughput::Elements(CLUSTERS as u64));
    g.bench_function("inventory_10k_clusters_20_profiles", |b| b.iter(read));
    g.bench_function("match_10k_clusters_20_profiles", |b| {
        b.iter(|| {
            let chosen = candidates(black_box(&inventory.clusters), &[]).expect("no --cluster given");
            chosen.iter().map(|c| profiles_for(c, &inventory).len()).sum::<usize>()
        })
    });
    g.finish();
}

criterion_group!(benches, selection);
criterion_main!(benches);
