//! The charts of a run, looked up before any cluster is fingerprinted: each distinct
//! chart a cluster's rendering reads is fetched once (a range resolved against its
//! repository), and its exact version, archive digest and the helm that will render it
//! are kept among the resources under the chart's revision key. A new chart version, a
//! re-pushed archive or another helm then changes the fingerprints of exactly the clusters
//! that render that chart; a chart that cannot be fetched fails the profiles that use it,
//! each keeping its last good part.

use std::collections::BTreeMap;

use rayon::prelude::*;
use serde_json::json;

use crate::helm::LazyRenderer;
use crate::render::ClusterPlan;
use crate::render::helm::chart_ref;
use crate::sveltos::helm_chart::{HelmAction, HelmChartRef};
use crate::sveltos::{ObjectKey, Resources};

/// The charts `plans` install, each once, by revision key.
pub fn wanted<'a>(plans: impl IntoIterator<Item = &'a ClusterPlan<'a>>) -> BTreeMap<ObjectKey, HelmChartRef> {
    let mut charts = BTreeMap::new();
    for plan in
        plans.into_iter().flat_map(ClusterPlan::charts).filter(|h| h.chart.action == HelmAction::Install && h.chart.verification.is_none())
    {
        charts.entry(plan.revision.key.clone()).or_insert_with(|| plan.chart.clone());
    }
    charts
}

/// Looks up every chart of `charts` and records each under its revision key.
pub fn resolve_into(charts: &BTreeMap<ObjectKey, HelmChartRef>, resources: &mut Resources, helm: &LazyRenderer) {
    let looked_up: Vec<(ObjectKey, Result<Option<serde_json::Value>, String>)> = charts
        .par_iter()
        .map(|(key, chart)| {
            let outcome = chart_ref(chart, resources, &chart.chart_version).and_then(|chart| {
                let renderer = helm.get().map_err(|e| e.to_string())?;
                let fetched = renderer.fetch(&chart).map_err(|e| e.to_string())?;
                let helm = &renderer.helm().version().text;
                Ok(Some(json!({"version": fetched.version, "digest": fetched.digest.hex(), "helm": helm})))
            });
            (key.clone(), outcome)
        })
        .collect();
    for (key, outcome) in looked_up {
        resources.record(key, outcome);
    }
}
