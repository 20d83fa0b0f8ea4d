//! A `HealthCheck` evaluated as Sveltos's agent evaluates it: the selectors keep objects
//! as a Classifier's do, then its `evaluateHealth` (the definition's `aggregate`) is
//! called once with all of them and gives each a status. Each entry is bounded and named
//! by what the script returned; the object collected (with `collectResources`) is the one listed
//! that bears that name, never the script's copy, and never a `Secret`. A status that is
//! none of Sveltos's four, or more entries than a result may hold, makes the result an
//! error, as Sveltos's agent fails to write such a report; so does a result for which the
//! report has no room left.

use airlock_bundle::report::{Collector, HealthStatus, MAX_HEALTH_RESOURCES, MAX_REPORT_HEALTH_ENTRIES, ResourceHealth, WITHHELD};
use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::Evaluation;
use airlock_lua::{Judged, LuaBudget, LuaSource, evaluate_statuses};
use serde_json::{Value, json};

use super::kept;

/// Whether every object judged is healthy, with a summary, and each object's health.
pub(super) async fn judge(
    client: &kube::Client,
    e: &Evaluation,
    collector: &mut Collector,
) -> Result<((bool, String), Vec<ResourceHealth>), String> {
    let kept = kept(client, e).await?;
    let definition = format!("{} {:?}", e.kind.name(), e.name);
    let script = e.aggregate.as_deref().ok_or("no evaluateHealth script")?;
    let source = LuaSource { profile: &definition, resource: "aggregate", key: "script" };
    let secret = kept.iter().any(is_secret);
    let judged = evaluate_statuses(&source, script, &kept, &LuaBudget::DEFAULT)
        .map_err(|err| if secret { WITHHELD.to_string() } else { err.to_string() })?;
    if judged.len() <= MAX_HEALTH_RESOURCES && !collector.entries(judged.len()) {
        let count = judged.len();
        return Err(format!("the report has no room left for {count} more health entries (at most {MAX_REPORT_HEALTH_ENTRIES} in all)"));
    }
    let health = entries(&kept, judged, e.collect_resources.then_some(collector))?;
    let unhealthy = health.iter().filter(|h| h.status != HealthStatus::Healthy).count();
    let summary = if unhealthy == 0 { String::new() } else { format!("{unhealthy} of {} objects not healthy", health.len()) };
    Ok(((unhealthy == 0, summary), health))
}

/// The entries of what the script said of `kept`.
fn entries(kept: &[Value], judged: Vec<Judged>, mut collector: Option<&mut Collector>) -> Result<Vec<ResourceHealth>, String> {
    if judged.len() > MAX_HEALTH_RESOURCES {
        return Err(format!("the script judged {} objects, at most {MAX_HEALTH_RESOURCES}", judged.len()));
    }
    let mut health = Vec::with_capacity(judged.len());
    for (i, j) in judged.into_iter().enumerate() {
        let status = HealthStatus::parse(&j.status)
            .ok_or_else(|| format!("resources[{}].status {:?} is none of Healthy, Progressing, Degraded, Suspended", i + 1, j.status))?;
        let same = |o: &&Value| {
            o["apiVersion"] == j.api_version.as_str()
                && o["kind"] == j.kind.as_str()
                && o["metadata"]["name"] == j.name.as_str()
                && o["metadata"]["namespace"].as_str().unwrap_or_default() == j.namespace
        };
        let listed = kept.iter().find(same);
        let named = json!({"apiVersion": j.api_version, "kind": j.kind, "metadata": {"name": j.name, "namespace": j.namespace}});
        let mut entry = ResourceHealth::judged(listed.unwrap_or(&named), status, j.message, None);
        if let (Some(object), Some(collector)) = (listed, collector.as_deref_mut()) {
            entry.resource = collector.take(object);
        }
        health.push(entry);
    }
    Ok(health)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn judged(name: &str, status: &str) -> Judged {
        Judged {
            api_version: "apps/v1".into(),
            kind: "Deployment".into(),
            namespace: "web".into(),
            name: name.into(),
            status: status.into(),
            message: "m".into(),
        }
    }

    fn listed(name: &str) -> Value {
        json!({"apiVersion": "apps/v1", "kind": "Deployment", "metadata": {"name": name, "namespace": "web"}, "spec": {"replicas": 1}})
    }

    #[test]
    fn collects_the_listed_object_of_each_entry_when_asked() {
        let mut collector = Collector::default();
        let found = entries(&[listed("a")], vec![judged("a", "Degraded"), judged("ghost", "Healthy")], Some(&mut collector)).unwrap();
        assert_eq!(found[0].status, HealthStatus::Degraded);
        assert_eq!(found[0].resource.as_ref().unwrap()["spec"]["replicas"], 1, "the object as listed");
        assert_eq!((found[1].name.as_str(), found[1].resource.as_ref()), ("ghost", None), "named by the script, nothing to collect");
        let without = entries(&[listed("a")], vec![judged("a", "Healthy")], None).unwrap();
        assert_eq!(without[0].resource, None);
    }

    #[test]
    fn rejects_a_status_sveltos_does_not_know_and_too_many_entries() {
        let err = entries(&[], vec![judged("a", "Healthy"), judged("b", "Broken")], None).unwrap_err();
        assert!(err.contains("resources[2].status \"Broken\" is none of"), "{err}");
        let many = (0..=MAX_HEALTH_RESOURCES).map(|i| judged(&format!("d{i}"), "Healthy")).collect();
        assert!(entries(&[], many, None).unwrap_err().contains("at most 256"));
    }
}
