//! The copy of the latest report kept in the cluster: the ConfigMap
//! `airlock-report-<cluster name>` of the state namespace, data key `report.json`, for
//! whoever looks at the site with kubectl.
//!
//! It is written only when a run's outcome differs from the kept one (start and finish
//! times, the server version and request counts aside): a run that changes nothing writes
//! nothing, and the kept report's `finishedAt` says since when the cluster is as reported.
//! The report files and `/metrics` record every run. The server version is read only for
//! a report that is written.
//!
//! The holder of the sync Lease writes unconditionally. A run that held no Lease (it had
//! nothing to apply) writes only over the copy it read (compare-and-swap on the
//! resourceVersion), and never over one that reports a later applied version: two pullers
//! of one cluster then cannot replace a newer report with an older one. Signing and the
//! files are `report`'s and `publish`'s business.

use airlock::cli::{describe_api_error, status_code};
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};

use crate::own_objects::{MANAGER, meta};
use crate::report::Report;

/// Data key of the report ConfigMap.
pub const CONFIG_MAP_KEY: &str = "report.json";

/// Keeps `report` as the ConfigMap `name` in `namespace` if its outcome is news, setting
/// its `kubernetesVersion` when it writes. `holder`: this run holds the sync Lease.
pub async fn keep(
    report: &mut Report,
    client: &kube::Client,
    namespace: &str,
    name: &str,
    holder: bool,
) -> anyhow::Result<()> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let failed = |e: kube::Error| anyhow::anyhow!("report ConfigMap {namespace}/{name}: {}", describe_api_error(&e));
    let read = if holder { None } else { Some(api.get_opt(name).await.map_err(failed)?) };
    if let Some(kept) = read.as_ref().and_then(|cm| parse(cm.as_ref()?))
        && !news(&kept, report)
    {
        tracing::debug!("the kept report says the same; not rewritten");
        return Ok(());
    }
    report.kubernetes_version = client.apiserver_version().await.ok().map(|v| v.git_version);
    let data = String::from_utf8(report.to_json()).expect("JSON is UTF-8");
    let config_map = |resource_version| ConfigMap {
        metadata: meta(namespace, name, &report.cluster, resource_version),
        data: Some([(CONFIG_MAP_KEY.to_string(), data.clone())].into()),
        ..ConfigMap::default()
    };
    let params = PostParams { field_manager: Some(MANAGER.into()), ..PostParams::default() };
    let written = match read {
        None => {
            let mut value = serde_json::to_value(config_map(None)).expect("ConfigMap serialises");
            value["apiVersion"] = "v1".into();
            value["kind"] = "ConfigMap".into();
            api.patch(name, &PatchParams::apply(MANAGER).force(), &Patch::Apply(&value)).await.map(drop)
        }
        Some(None) => api.create(&params, &config_map(None)).await.map(drop),
        Some(Some(current)) => api.replace(name, &params, &config_map(current.metadata.resource_version)).await.map(drop),
    };
    match written {
        // Another run wrote it since it was read: that report is at least as recent.
        Err(e) if status_code(&e) == Some(409) => {
            tracing::debug!("the kept report changed meanwhile; not replaced");
            Ok(())
        }
        other => other.map_err(failed),
    }
}

/// The report a ConfigMap keeps; None when it keeps none that this puller can read,
/// which the next write replaces.
fn parse(config_map: &ConfigMap) -> Option<Report> {
    serde_json::from_str(config_map.data.as_ref()?.get(CONFIG_MAP_KEY)?).ok()
}

/// Whether `report` should replace `kept`: its outcome differs, and it does not report an
/// older applied version than `kept` does.
fn news(kept: &Report, report: &Report) -> bool {
    let older = matches!((kept.applied_version, report.applied_version), (Some(k), Some(r)) if k > r);
    !older && !kept.same_outcome(report)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Action, Outcome};
    use crate::report::{RunResult, test_result};

    fn report(result: RunResult, applied: Option<u64>) -> Report {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.applied_version = applied;
        r.finish(Ok(result));
        r
    }

    #[test]
    fn only_a_changed_outcome_is_news() {
        let kept = report(RunResult::UpToDate, Some(3));
        let mut again = report(RunResult::UpToDate, Some(3));
        again.kubernetes_version = Some("v1.20.2".into());
        again.api_requests = 9;
        again.duration_ms = kept.duration_ms + 1000;
        assert!(!news(&kept, &again), "times, server version and request counts are not news");
        assert!(news(&kept, &report(RunResult::Error, Some(3))));
        assert!(news(&report(RunResult::Applied, Some(3)), &again), "applied, then up to date");
        let mut drifted = report(RunResult::UpToDate, Some(3));
        drifted.record(
            &Outcome {
                results: vec![test_result("ConfigMap", "a", Action::DriftCorrected, None)],
                ..Outcome::default()
            },
            true,
        );
        assert!(news(&kept, &drifted));
    }

    #[test]
    fn an_older_applied_version_never_replaces_a_newer_one() {
        let kept = report(RunResult::Applied, Some(4));
        assert!(!news(&kept, &report(RunResult::UpToDate, Some(3))));
        assert!(news(&kept, &report(RunResult::UpToDate, Some(4))));
        assert!(news(&kept, &report(RunResult::Error, None)), "a run that could not read the state reports");
    }

    #[test]
    fn an_unreadable_kept_report_is_replaced() {
        let cm = |data: &str| ConfigMap {
            data: Some([(CONFIG_MAP_KEY.to_string(), data.to_string())].into()),
            ..ConfigMap::default()
        };
        assert!(parse(&cm("{}")).is_none());
        assert!(parse(&ConfigMap::default()).is_none());
        let r = report(RunResult::UpToDate, Some(1));
        assert_eq!(parse(&cm(std::str::from_utf8(&r.to_json()).unwrap())), Some(r));
    }
}
