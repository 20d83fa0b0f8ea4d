//! The Helm charts each profile deployed on a cluster, in the shape Sveltos keeps them in a
//! ClusterConfiguration: under the feature `Helm`, one entry per release with its name,
//! namespace, chart version, app version, repository and the time it was last installed or
//! upgraded, which `sveltosctl show addons` prints as `helm chart` rows. Pure functions over
//! JSON, for `addons`.
//!
//! A report lists the releases of a bundle it applied (spec 14.3 `releases`), and only
//! then: such a report replaces the charts; any other keeps them as recorded.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use airlock_bundle::report::ReleaseOperation;
use serde_json::{Map, Value};

use super::configuration::{ProfileRef, feature_entries, ours, sections};
use super::report::{PullReport, RunResult};

/// The feature Sveltos lists charts under.
pub const FEATURE: &str = "Helm";

/// Per profile, its charts as ClusterConfiguration entries, sorted by namespace and name.
pub type Charts = BTreeMap<ProfileRef, Vec<Value>>;

/// The charts a ClusterConfiguration status holds, per profile.
pub fn held(status: &Value, cluster: &ClusterId) -> Charts {
    let mut held = Charts::new();
    for (profile, section) in sections(status, cluster) {
        let charts: Vec<Value> = feature_entries(section, "charts").filter(|c| c["releaseName"].is_string()).cloned().collect();
        if !charts.is_empty() {
            held.entry(profile).or_default().extend(charts);
        }
    }
    held
}

/// The charts after `report` of `cluster`, given those held before; `finished` is the
/// report's `finishedAt` as written in the status.
pub fn after(report: &PullReport, cluster: &ClusterId, before: &Charts, finished: &str) -> Charts {
    if report.result != RunResult::Applied {
        return before.clone();
    }
    let mut charts = Charts::new();
    for release in &report.releases {
        let Some(profile) = ours(&release.profile, cluster) else { continue };
        let earlier = before
            .get(&profile)
            .into_iter()
            .flatten()
            .find(|c| c["releaseName"] == release.name.as_str() && c["namespace"] == release.namespace.as_str());
        // A release nothing of which changed was last applied when it was recorded.
        let time = match (release.operation, earlier.and_then(|c| c["lastAppliedTime"].as_str())) {
            (ReleaseOperation::None, Some(time)) => time.to_string(),
            _ => finished.to_string(),
        };
        let mut chart = Map::new();
        chart.insert("releaseName".into(), release.name.clone().into());
        chart.insert("namespace".into(), release.namespace.clone().into());
        chart.insert("chartVersion".into(), release.chart_version.clone().into());
        if let Some(app) = &release.app_version {
            chart.insert("appVersion".into(), app.clone().into());
        }
        chart.insert("repoURL".into(), release.repo_url.clone().into());
        chart.insert("lastAppliedTime".into(), time.into());
        charts.entry(profile).or_default().push(Value::Object(chart));
    }
    for list in charts.values_mut() {
        list.sort_by(|a, b| {
            (a["namespace"].as_str(), a["releaseName"].as_str()).cmp(&(b["namespace"].as_str(), b["releaseName"].as_str()))
        });
    }
    charts
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::super::testkit::{T1, T2, cluster, report_with};
    use super::*;

    fn report(finished: &str, result: &str, releases: Value) -> PullReport {
        report_with(finished, result, json!({"releases": releases}))
    }

    fn release(part: &str, name: &str, version: &str, operation: &str) -> Value {
        json!({"profile": part, "name": name, "namespace": "web", "chartVersion": version, "appVersion": "1.0",
               "repoURL": "https://charts.example", "operation": operation})
    }

    fn chart(name: &str, version: &str, time: &str) -> Value {
        json!({"releaseName": name, "namespace": "web", "chartVersion": version, "appVersion": "1.0",
               "repoURL": "https://charts.example", "lastAppliedTime": time})
    }

    #[test]
    fn an_applied_bundle_lists_its_releases_and_an_unchanged_one_keeps_its_time() {
        let web = ProfileRef::ClusterProfile("web".into());
        let first = report(
            T1,
            "applied",
            json!([
                release("ClusterProfile.web", "b", "1.0.0", "install"),
                release("ClusterProfile.web", "a", "2.0.0", "install"),
                release("Profile.other.x", "c", "1.0.0", "install")
            ]),
        );
        let charts = after(&first, &cluster(), &Charts::new(), T1);
        assert_eq!(charts, Charts::from([(web.clone(), vec![chart("a", "2.0.0", T1), chart("b", "1.0.0", T1)])]));

        let second = report(
            T2,
            "applied",
            json!([release("ClusterProfile.web", "a", "2.1.0", "upgrade"), release("ClusterProfile.web", "b", "1.0.0", "none")]),
        );
        let later = after(&second, &cluster(), &charts, T2);
        assert_eq!(later[&web], [chart("a", "2.1.0", T2), chart("b", "1.0.0", T1)]);

        // Read back from a status, and kept by a report that applied nothing.
        let status = json!({"clusterProfileResources": [{"clusterProfileName": "web", "Features": [{"featureID": FEATURE, "charts": later[&web]}]}]});
        assert_eq!(held(&status, &cluster()), later);
        assert_eq!(after(&report(T2, "up-to-date", json!([])), &cluster(), &later, T2), later);
        assert_eq!(after(&report(T2, "applied", json!([])), &cluster(), &later, T2), Charts::new(), "uninstalled");
    }
}
