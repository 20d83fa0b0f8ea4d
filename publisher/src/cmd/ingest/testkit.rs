//! What the unit tests of the ingest steps share: one cluster, two report times, and a
//! report of that cluster with the fields a test cares about laid over a bundle-less one.

use airlock_bundle::ClusterId;
use serde_json::{Value, json};

use super::report::PullReport;

pub const T1: &str = "2026-03-01T10:00:00Z";
pub const T2: &str = "2026-03-02T10:00:00Z";

pub fn cluster() -> ClusterId {
    "fleet/a".parse().unwrap()
}

/// A report of `fleet/a` finished at `finished` with `result`, `fields` over the rest.
pub fn report_with(finished: &str, result: &str, fields: Value) -> PullReport {
    let mut report = json!({
        "apiVersion": "airlock.dev/v1", "kind": "PullReport", "cluster": "fleet/a", "finishedAt": finished, "result": result,
        "appliedVersion": 3, "appliedDigest": null, "bundle": null,
    });
    report.as_object_mut().unwrap().extend(fields.as_object().unwrap().clone());
    serde_json::from_value(report).unwrap()
}
