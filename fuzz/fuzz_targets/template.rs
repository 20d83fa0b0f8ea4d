//! Template rendering as the publisher runs it: any UTF-8 text as a Sveltos template,
//! rendered against a fixed cluster with the render limits (loop iterations, output
//! size). Never a panic or an unbounded allocation; a render is deterministic (the second
//! run goes through the per-thread compile cache) and its output stays within the cap.
#![no_main]

use airlock_bundle::Limits;
use airlock_publisher::{TemplateSource, render_template};
use libfuzzer_sys::fuzz_target;

const SOURCE: TemplateSource<'static> =
    TemplateSource { profile: "fuzz", resource: "ConfigMap default/fuzz", key: "template.yaml" };

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else { return };
    let data = serde_json::json!({
        "Cluster": {
            "apiVersion": "lib.projectsveltos.io/v1beta1",
            "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "labels": {"region": "eu", "tier": "gold"}},
            "spec": {"replicas": 3, "ratio": 1.5, "zones": ["a", "b"], "note": ""}
        },
        "MgmtResources": {"cfg": {"kind": "ConfigMap", "data": {"image": "nginx:1.27", "count": "4"}}}
    });
    let first = render_template(&SOURCE, text, &data);
    if let Ok(out) = &first {
        assert!(out.len() as u64 <= Limits::SPEC.total_bytes);
    }
    assert_eq!(render_template(&SOURCE, text, &data), first);
});
