//! YAML manifests as the puller reads them: any UTF-8 text as one file of a validly signed
//! part, parsed into desired objects (`airlock_puller::engine::desired`: strict YAML, the
//! alias, depth and document budgets, the per-document checks). Never a panic; every
//! object accepted is named and carries this cluster's label. Non-UTF-8 input is refused
//! before parsing, so it is skipped: the bundle is built from text.
#![no_main]

use airlock_bundle::PartSettings;
use airlock_puller::engine::testing::{self, verified};
use airlock_puller::engine::{Settings, desired};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(yaml) = std::str::from_utf8(data) else { return };
    let files = [("ClusterProfile.fuzz/manifests.yaml".to_string(), yaml.to_string())];
    let bundle = verified(1, &files, &|_| PartSettings::default());
    let settings = Settings { concurrency: 1, ..testing::settings("fleet/edge-1") };
    let Ok(objects) = desired(&bundle, &settings) else { return };
    for object in objects {
        assert!(!object.id.kind.is_empty() && !object.id.name.is_empty(), "{:?}", object.id);
        // The label prune and drift select by: `<namespace>.<name>` of the cluster.
        assert_eq!(object.manifest.value()["metadata"]["labels"]["airlock.dev/cluster"], "fleet.edge-1");
    }
});
