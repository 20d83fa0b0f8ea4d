//! The copy of the latest report kept in the cluster: the ConfigMap
//! `airlock-report-<cluster name>` of the state namespace, data key `report.json`, for
//! whoever looks at the site with kubectl, and the rollback floor of last resort.
//!
//! It is written only when a run's outcome differs from the kept one (start and finish
//! times, the server version and request counts aside): a run that changes nothing writes
//! nothing, and the kept report's `finishedAt` says since when the cluster is as reported.
//! The report files and `/metrics` record every run. The server version is read only for
//! a report that is written.
//!
//! The copy is compact JSON. One too large for a ConfigMap (thousands of objects) is kept
//! without its per-object and refused lists, counted per action in `omittedObjects`
//! instead; the report files keep everything. A run that could not read the applied
//! version (an unreadable state) keeps the one the copy had: when the state Secret is
//! missing, the sync command takes the floor from it ([`KeptRead::applied`]) and hands that
//! read on to [`keep`], so the ConfigMap is read once.
//!
//! The holder of the sync Lease writes unconditionally. A run that held no Lease (it had
//! nothing to apply) writes only over the copy it read (compare-and-swap on the
//! resourceVersion), and never over one that reports a later applied version: two pullers
//! of one cluster then cannot replace a newer report with an older one. Filling the report
//! is `report`'s business, signing it and writing its files `report_writer`'s, sending it
//! to the store `report_push`'s, which reads what [`keep`] found ([`KeptNow`]) and marks
//! here what the store accepted ([`mark_pushed`]).

use std::collections::BTreeMap;

use airlock_bundle::vocabulary::REPORT_PUSHED_ANNOTATION;
use airlock_bundle::{ClusterId, Digest};
use airlock_cli::{describe_api_error, status_code};
use jiff::Timestamp;
use k8s_openapi::api::core::v1::ConfigMap;
use kube::api::{Api, Patch, PatchParams, PostParams};
use serde::{Deserialize, Serialize};

use crate::kept::error::StateError;
use crate::kept::meta::{MANAGER, Names, meta};
use crate::reports::report::{Report, RunReport, RunResult};

/// Data key of the report ConfigMap.
pub const CONFIG_MAP_KEY: &str = "report.json";
/// The API server refuses a ConfigMap whose data is over 1 MiB; the report gets 3/4 of
/// that, so the metadata and a kept copy near the limit never tip it over.
const KEPT_JSON_BYTES: usize = 768 * 1024;
/// What a copy without its object list keeps of `error`, which can name every failed object.
const KEPT_ERROR_CHARS: usize = 4096;

/// The report as the ConfigMap keeps it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
struct Kept {
    #[serde(flatten)]
    report: Report,
    /// Set when `objects` and `refused` were left out to fit: how many objects got each action.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    omitted_objects: BTreeMap<String, u64>,
}

impl Kept {
    /// `report` as kept, given the copy it replaces.
    fn of(report: &Report, previous: Option<&Kept>) -> Kept {
        let mut kept = Kept { report: report.clone(), omitted_objects: BTreeMap::new() };
        if let Some(previous) = previous
            && kept.report.applied_version.is_none()
        {
            kept.report.applied_version = previous.report.applied_version;
            kept.report.applied_digest = previous.report.applied_digest;
        }
        if kept.to_json().len() <= KEPT_JSON_BYTES {
            return kept;
        }
        kept.omitted_objects = report.counts();
        kept.report.objects.clear();
        kept.report.refused.clear();
        if let Some(error) = &mut kept.report.error
            && let Some((cut, _)) = error.char_indices().nth(KEPT_ERROR_CHARS)
        {
            error.truncate(cut);
            error.push('…');
        }
        kept
    }

    fn to_json(&self) -> String {
        serde_json::to_string(self).expect("report serialises")
    }
}

fn api_failed(names: &Names, e: &kube::Error) -> StateError {
    StateError::ReportApi { config_map: names.describe(&names.report), message: describe_api_error(e) }
}

/// The kept report ConfigMap as one read found it (`None`: there is none). A run that
/// read it for its floor hands it to [`keep`], which then does not read it again.
pub struct KeptRead(Option<ConfigMap>);

impl KeptRead {
    /// Reads the report ConfigMap of `names`.
    pub async fn read(client: &kube::Client, names: &Names) -> Result<KeptRead, StateError> {
        let api: Api<ConfigMap> = Api::namespaced(client.clone(), &names.namespace);
        Ok(KeptRead(api.get_opt(&names.report).await.map_err(|e| api_failed(names, &e))?))
    }

    /// The applied version and digest the kept report of `cluster` names: the rollback
    /// floor when the state Secret is missing. `None` when there is no kept report, or
    /// none of this cluster that this puller can read and that names both.
    pub fn applied(&self, cluster: &ClusterId) -> Option<(u64, Digest)> {
        let kept = self.0.as_ref().and_then(|cm| parse(cm, &cluster.to_string()))?;
        Some((kept.report.applied_version?, kept.report.applied_digest?))
    }
}

/// What [`keep`] found and did, from which a run decides what it sends to the store
/// (bundles-format.md 14.8).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KeptNow {
    /// This run's report is the kept one now.
    pub written: bool,
    /// The kept report of this cluster as the run found it, when it read one.
    pub found: Option<Report>,
    /// When the newest report the store accepted finished ([`REPORT_PUSHED_ANNOTATION`]).
    pub pushed: Option<Timestamp>,
}

/// Every `group/version` the API server serves, sorted: what the publisher renders Helm
/// charts against (`helm template --api-versions`). Two requests.
async fn served_api_versions(client: &kube::Client) -> Result<Vec<String>, kube::Error> {
    let mut versions = client.list_core_api_versions().await?.versions;
    let groups = client.list_api_groups().await?.groups;
    versions.extend(groups.into_iter().flat_map(|g| g.versions).map(|v| v.group_version));
    versions.sort();
    versions.dedup();
    Ok(versions)
}

/// Keeps `report` as the report ConfigMap of `names` if its outcome is news, setting its
/// `kubernetesVersion` when it writes, and `apiVersions` too after an apply. `holder`: this run holds the sync Lease. `read`:
/// the ConfigMap as this run read it already, if it did.
pub async fn keep(
    report: &mut Report,
    client: &kube::Client,
    names: &Names,
    holder: bool,
    read: Option<KeptRead>,
) -> Result<KeptNow, StateError> {
    let (namespace, name) = (names.namespace.as_str(), names.report.as_str());
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), namespace);
    let failed = |e: kube::Error| api_failed(names, &e);
    // An earlier read serves the compare-and-swap below as well as a fresh one: a report
    // written since then makes the write fail with 409, as it should.
    let read = match (holder, read) {
        (true, _) => None,
        (false, Some(KeptRead(read))) => Some(read),
        (false, None) => Some(KeptRead::read(client, names).await?.0),
    };
    let previous = read.as_ref().and_then(|cm| parse(cm.as_ref()?, &report.cluster));
    let pushed = read.as_ref().and_then(|cm| cm.as_ref()?.metadata.annotations.as_ref()?.get(REPORT_PUSHED_ANNOTATION)?.parse().ok());
    let mut now = KeptNow { written: false, found: previous.as_ref().map(|k| k.report.clone()), pushed };
    let mut kept = Kept::of(report, previous.as_ref());
    if previous.as_ref().is_some_and(|previous| !news(previous, &kept)) {
        tracing::debug!("the kept report says the same; not rewritten");
        return Ok(now);
    }
    report.kubernetes_version = client.apiserver_version().await.ok().map(|v| v.git_version);
    // Read after an apply, which a bundle's CRDs can add APIs by; other runs leave the
    // list the management side has, and keep their request budget.
    report.api_versions = match report.result {
        RunResult::Applied => served_api_versions(client).await.ok(),
        _ => None,
    };
    kept.report.kubernetes_version.clone_from(&report.kubernetes_version);
    kept.report.api_versions.clone_from(&report.api_versions);
    let data = kept.to_json();
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
            Ok(now)
        }
        other => {
            other.map_err(failed)?;
            now.written = true;
            Ok(now)
        }
    }
}

/// Records on the report ConfigMap of `names` that the store accepted the reports up to
/// the one that finished at `finished` (a merge patch of that annotation only).
pub async fn mark_pushed(client: &kube::Client, names: &Names, finished: Timestamp) -> Result<(), StateError> {
    let api: Api<ConfigMap> = Api::namespaced(client.clone(), &names.namespace);
    let patch = serde_json::json!({"metadata": {"annotations": {REPORT_PUSHED_ANNOTATION: finished.to_string()}}});
    let params = PatchParams { field_manager: Some(MANAGER.into()), ..PatchParams::default() };
    api.patch(&names.report, &params, &Patch::Merge(&patch)).await.map(drop).map_err(|e| api_failed(names, &e))
}

/// The report a ConfigMap keeps for `cluster`; None when it keeps none that this puller
/// can read, which the next write replaces.
fn parse(config_map: &ConfigMap, cluster: &str) -> Option<Kept> {
    let kept: Kept = serde_json::from_str(config_map.data.as_ref()?.get(CONFIG_MAP_KEY)?).ok()?;
    (kept.report.cluster == cluster).then_some(kept)
}

/// Whether `new` should replace `kept`: its outcome differs, and it does not report an
/// older applied version than `kept` does.
fn news(kept: &Kept, new: &Kept) -> bool {
    let older = matches!((kept.report.applied_version, new.report.applied_version), (Some(k), Some(r)) if k > r);
    !older && (kept.omitted_objects != new.omitted_objects || !kept.report.same_outcome(&new.report))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{Action, Outcome};
    use crate::reports::report::test_result;

    fn report(result: RunResult, applied: Option<u64>) -> Report {
        let mut r = Report::start(&"fleet/edge-1".parse().unwrap());
        r.applied_version = applied;
        r.applied_digest = applied.map(|v| Digest::of(&v.to_be_bytes()));
        r.finish(Ok(result));
        r
    }

    fn kept(report: &Report) -> Kept {
        Kept::of(report, None)
    }

    fn config_map(kept: &Kept) -> ConfigMap {
        ConfigMap { data: Some([(CONFIG_MAP_KEY.to_string(), kept.to_json())].into()), ..ConfigMap::default() }
    }

    #[test]
    fn only_a_changed_outcome_is_news() {
        let before = kept(&report(RunResult::UpToDate, Some(3)));
        let mut again = report(RunResult::UpToDate, Some(3));
        again.kubernetes_version = Some("v1.20.2".into());
        again.api_requests = 9;
        again.duration_ms = before.report.duration_ms + 1000;
        assert!(!news(&before, &kept(&again)), "times, server version and request counts are not news");
        assert!(news(&before, &kept(&report(RunResult::Error, Some(3)))));
        assert!(news(&kept(&report(RunResult::Applied, Some(3))), &kept(&again)), "applied, then up to date");
        let mut drifted = report(RunResult::UpToDate, Some(3));
        drifted.record(&Outcome { results: vec![test_result("ConfigMap", "a", Action::DriftCorrected, None)], ..Outcome::default() }, true);
        assert!(news(&before, &kept(&drifted)));
    }

    #[test]
    fn an_older_applied_version_never_replaces_a_newer_one() {
        let before = kept(&report(RunResult::Applied, Some(4)));
        assert!(!news(&before, &kept(&report(RunResult::UpToDate, Some(3)))));
        assert!(news(&before, &kept(&report(RunResult::UpToDate, Some(4)))));
        assert!(news(&before, &kept(&report(RunResult::Error, None))), "a run that could not read the state reports");
    }

    #[test]
    fn a_run_that_could_not_read_the_applied_version_keeps_the_kept_one() {
        let before = kept(&report(RunResult::UpToDate, Some(4)));
        let failed = Kept::of(&report(RunResult::Error, None), Some(&before));
        let applied = (failed.report.applied_version, failed.report.applied_digest);
        assert_eq!(applied, (Some(4), before.report.applied_digest));
        assert_eq!(failed.report.result, RunResult::Error);
        let first = Kept::of(&report(RunResult::Applied, Some(5)), Some(&before));
        assert_eq!(first.report.applied_version, Some(5), "a known version is never replaced");
    }

    #[test]
    fn an_unreadable_or_foreign_kept_report_is_replaced() {
        let cm = |data: &str| ConfigMap { data: Some([(CONFIG_MAP_KEY.to_string(), data.to_string())].into()), ..ConfigMap::default() };
        assert!(parse(&cm("{}"), "fleet/edge-1").is_none());
        assert!(parse(&ConfigMap::default(), "fleet/edge-1").is_none());
        let k = kept(&report(RunResult::UpToDate, Some(1)));
        assert_eq!(parse(&config_map(&k), "fleet/edge-1"), Some(k.clone()));
        assert!(parse(&config_map(&k), "fleet/edge-2").is_none(), "another cluster's report is no floor");
        let plain = String::from_utf8(k.report.to_json()).unwrap();
        assert_eq!(parse(&cm(&plain), "fleet/edge-1"), Some(k), "a copy written pretty by an earlier release reads");
    }

    #[test]
    fn a_small_report_is_kept_whole_and_compact() {
        let mut r = report(RunResult::Applied, Some(2));
        r.record(&outcome(3), false);
        let k = kept(&r);
        assert_eq!(k.report, r);
        assert!(k.omitted_objects.is_empty());
        assert!(!k.to_json().contains('\n'), "compact JSON");
        assert!(!k.to_json().contains("omittedObjects"));
    }

    /// A 5,000-object report is over 1 MiB as the report files hold it.
    #[test]
    fn a_five_thousand_object_report_fits_a_config_map_and_reads_back() {
        let mut r = report(RunResult::Error, Some(9));
        r.record(&outcome(5_000), false);
        r.error = Some(format!("5000 object(s) failed to apply: {}", "ConfigMap app/x, ".repeat(5_000)));
        assert!(r.to_json().len() > 1024 * 1024, "the report files' form: {} bytes", r.to_json().len());

        let k = kept(&r);
        let json = k.to_json();
        println!("5,000 objects: report file {} bytes, kept copy {} bytes", r.to_json().len(), json.len());
        assert!(json.len() < KEPT_JSON_BYTES, "{} bytes", json.len());
        let back = parse(&config_map(&k), "fleet/edge-1").expect("reads back");
        assert_eq!(back, k);
        assert_eq!((back.report.applied_version, back.report.applied_digest), (Some(9), r.applied_digest));
        assert_eq!(back.report.result, RunResult::Error);
        assert!(back.report.objects.is_empty() && back.report.refused.is_empty());
        assert_eq!(back.omitted_objects, r.counts());
        assert_eq!(back.omitted_objects.values().sum::<u64>(), 5_000);
        assert_eq!(back.report.error.as_ref().unwrap().chars().count(), KEPT_ERROR_CHARS + 1);
        assert!(!news(&back, &kept(&r)), "an unchanged large outcome is not rewritten");
        let mut more = r.clone();
        more.record(&outcome(1), false);
        assert!(news(&back, &kept(&more)), "another count is news");
    }

    /// `count` objects with long names, every fifth refused.
    fn outcome(count: usize) -> Outcome {
        let results = (0..count)
            .map(|i| {
                let action = if i % 5 == 0 { Action::Refused } else { Action::Created };
                test_result("ConfigMap", &format!("a-rather-long-config-map-name-{i:06}"), action, None)
            })
            .collect();
        Outcome { results, ..Outcome::default() }
    }
}
