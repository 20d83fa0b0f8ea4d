//! Writes what a report means for the cluster's EventReports (`events`) to the
//! management cluster: each EventReport of an event happening on the cluster, by
//! server-side apply under the publisher's field manager in the cluster's namespace, and
//! the deletion of those whose event is gone. EventTriggers instantiate their add-ons
//! from them at the next publish.
//!
//! A management cluster that does not serve the EventSource or EventReport CRD gets none
//! of this, and that is no error. An EventSource that cannot be read has no current
//! definition, so no result of it counts: its EventReport stays as it was.

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::ClusterId;
use kube::api::{Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams};

use super::classifier_target::{error, resource, typed};
use super::events;
use super::report::PullReport;
use super::target::TargetError;
use crate::annotations::FIELD_MANAGER;
use crate::sources::event_report::{EVENT_SOURCE_NAME_LABEL, reports_selector};
use crate::sources::parse::parse_event_source;

/// Records what `report` means for the EventReports of `cluster`. Returns how many were
/// written or deleted.
pub async fn write(client: &kube::Client, cluster: &ClusterId, report: &PullReport) -> Result<usize, TargetError> {
    let source_resource = resource("EventSource", "eventsources");
    let listed = match Api::<DynamicObject>::all_with(client.clone(), &source_resource).list(&ListParams::default()).await {
        Ok(list) => list.items,
        Err(e) if airlock_cli::absent(&e) => return Ok(0),
        Err(e) => return Err(error("list EventSources".into(), e)),
    };
    let mut current = BTreeMap::new();
    for item in listed {
        match parse_event_source(&typed(item, &source_resource)) {
            Ok(e) => {
                current.insert(e.name.clone(), e.digest());
            }
            Err(e) => tracing::warn!("{e}: its EventReport on {cluster} is left as it is"),
        }
    }
    let report_resource = resource("EventReport", "eventreports");
    let reports: Api<DynamicObject> = Api::namespaced_with(client.clone(), cluster.namespace(), &report_resource);
    let kept = match reports.list(&ListParams::default().labels(&reports_selector(cluster))).await {
        Ok(list) => list.items,
        Err(e) if airlock_cli::absent(&e) => return Ok(0),
        Err(e) => return Err(error(format!("list EventReports of {cluster}"), e)),
    };
    let kept: BTreeSet<String> = kept
        .iter()
        .filter_map(|r| r.metadata.labels.as_ref()?.get(EVENT_SOURCE_NAME_LABEL).cloned())
        .filter(|n| current.contains_key(n))
        .collect();
    let out = events::decide(cluster, &report.evaluations, &current, &kept);
    let what = |name: &str| format!("EventReport {}/{name}", cluster.namespace());
    let apply = PatchParams::apply(FIELD_MANAGER).force();
    let mut written = 0;
    for object in &out.write {
        let name = object["metadata"]["name"].as_str().unwrap_or_default();
        reports.patch(name, &apply, &Patch::Apply(object)).await.map_err(|e| error(what(name), e))?;
        written += 1;
    }
    for name in &out.delete {
        match reports.delete(name, &DeleteParams::default()).await {
            Ok(_) => written += 1,
            Err(e) if airlock_cli::absent(&e) => {}
            Err(e) => return Err(error(what(name), e)),
        }
    }
    Ok(written)
}
