//! A profile's checks (`validateHealths`, `preDeployChecks`, `preDeleteChecks`,
//! `postDeleteChecks`), read into what the bundle carries (bundles-format.md 5.11) and
//! checked as the puller checks them, so a check that could never run fails the profile
//! here, naming its field. A `jobCheck`'s Job is read per cluster (`render`), since an
//! empty `jobRef.namespace` means the cluster's own.

use airlock_bundle::statement::{CelRule, Check, MetricQuery, Metrics, Selection, check_list};

use airlock_bundle::verify::runnable;

use super::reader::Fields;
use super::refs::secret_ref;
use crate::duration::parse_go_duration;
use crate::sources::model::{CheckSpec, JobRef, ModelError, PolicyKind, ProfileChecks};

/// Sveltos's default Job check timeout.
const DEFAULT_JOB_TIMEOUT_SECONDS: u64 = 300;

/// Prometheus's instant-query path, where `metricSource.path` is empty.
const DEFAULT_QUERY_PATH: &str = "api/v1/query";

pub fn checks(spec: &Fields<'_>) -> Result<ProfileChecks, ModelError> {
    Ok(ProfileChecks {
        validate_healths: list(spec, check_list::VALIDATE_HEALTHS)?,
        pre_deploy: list(spec, check_list::PRE_DEPLOY)?,
        pre_delete: list(spec, check_list::PRE_DELETE)?,
        post_delete: list(spec, check_list::POST_DELETE)?,
    })
}

fn list(spec: &Fields<'_>, key: &str) -> Result<Vec<CheckSpec>, ModelError> {
    spec.items(key)?.iter().map(|(_, c)| check(c)).collect()
}

fn check(c: &Fields<'_>) -> Result<CheckSpec, ModelError> {
    let kind: String = c.or_default("kind")?;
    let objects = if kind.is_empty() {
        None
    } else {
        Some(Selection {
            group: c.or_default("group")?,
            version: c.or_default("version")?,
            kind,
            namespace: c.get::<String>("namespace")?.filter(|n| !n.is_empty()),
            name: None,
            label_selector: label_selector(c)?,
        })
    };
    let cel = c
        .items("evaluateCEL")?
        .iter()
        .map(|(_, r)| Ok(CelRule { name: r.or_default("name")?, rule: r.or_default("rule")? }))
        .collect::<Result<_, ModelError>>()?;
    let metrics = match c.raw("metricSource") {
        serde_json::Value::Null => None,
        _ => Some(metrics(c)?),
    };
    let job = match c.raw("jobCheck") {
        serde_json::Value::Null => None,
        _ => Some(job_ref(&c.nested("jobCheck")?)?),
    };
    let check = Check {
        name: c.or_default("name")?,
        feature: c.or_default("featureID")?,
        objects,
        script: c.get::<String>("script")?.filter(|s| !s.is_empty()),
        cel,
        metrics,
        job: None,
    };
    let verdict = match &job {
        Some(_) if check.objects.is_some() || check.script.is_some() || !check.cel.is_empty() || check.metrics.is_some() => {
            Err("jobCheck cannot be set together with kind, script, evaluateCEL or metricSource".to_string())
        }
        Some(_) => Ok(()),
        None => runnable(&check),
    };
    verdict.map_err(|m| c.own_error(m))?;
    Ok(CheckSpec { check, job })
}

/// Sveltos's `labelFilters`, joined into the selector the Kubernetes API takes.
pub(super) fn label_selector(c: &Fields<'_>) -> Result<String, ModelError> {
    let mut terms = Vec::new();
    for (_, f) in c.items("labelFilters")? {
        let (key, value): (String, String) = (f.or_default("key")?, f.or_default("value")?);
        let operation: String = f.or_default("operation")?;
        terms.push(match operation.as_str() {
            "Equal" => format!("{key}={value}"),
            "Different" => format!("{key}!={value}"),
            "Has" => key,
            "DoesNotHave" => format!("!{key}"),
            other => return Err(f.error("operation", format!("{other:?} is none of Equal, Different, Has, DoesNotHave"))),
        });
    }
    Ok(terms.join(","))
}

fn metrics(c: &Fields<'_>) -> Result<Metrics, ModelError> {
    let source = c.nested("metricSource")?;
    let path: String = source.or_default("path")?;
    let secret = secret_ref(&source)?;
    let queries: Vec<MetricQuery> = c
        .items("metricQueries")?
        .iter()
        .map(|(_, q)| Ok(MetricQuery { name: q.or_default("name")?, query: q.or_default("query")? }))
        .collect::<Result<_, ModelError>>()?;
    if queries.is_empty() {
        return Err(c.error("metricQueries", "is empty: metricSource is read only for its queries".into()));
    }
    Ok(Metrics {
        url: source.or_default("url")?,
        path: if path.is_empty() { DEFAULT_QUERY_PATH.into() } else { path.trim_start_matches('/').to_string() },
        secret,
        queries,
    })
}

fn job_ref(j: &Fields<'_>) -> Result<JobRef, ModelError> {
    let r = j.nested("jobRef")?;
    let kind = match r.or_default::<String>("kind")?.as_str() {
        "ConfigMap" => PolicyKind::ConfigMap,
        "Secret" => PolicyKind::Secret,
        other => return Err(r.error("kind", format!("{other:?} is neither ConfigMap nor Secret"))),
    };
    let timeout_seconds = match j.get::<String>("timeout")? {
        None => DEFAULT_JOB_TIMEOUT_SECONDS,
        Some(t) => parse_go_duration(&t).map_err(|m| j.error("timeout", m))?.as_secs().max(1),
    };
    Ok(JobRef { field: j.path("jobRef"), kind, namespace: r.or_default("namespace")?, name: r.or_default("name")?, timeout_seconds })
}
