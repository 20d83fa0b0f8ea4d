//! A profile's checks for one cluster, as the bundle carries them (bundles-format.md
//! 5.11): what the profile wrote, with each `jobCheck`'s Job read from the ConfigMap or
//! Secret its `jobRef` resolved to for this cluster. The Job is read as a policyRef's
//! content is (each data key a YAML document), is not a template, and must be the one
//! object there, a `batch/v1` Job; without a namespace it runs in `default`.

use airlock_bundle::statement::{Check, Checks, JobCheck};
use airlock_bundle::verify::runnable;
use serde_json::Value;

use super::content::data_texts;
use super::manifest::documents;
use super::resolve::ProfilePlan;
use crate::sources::Resources;
use crate::sources::model::CheckSpec;

/// The checks of `plan`'s profile, or why one cannot run, naming its field.
pub fn checks_of(plan: &ProfilePlan<'_>, resources: &Resources, warnings: &mut Vec<String>) -> Result<Checks, String> {
    let mut read = |list: &[CheckSpec]| list.iter().map(|spec| check(plan, resources, spec, warnings)).collect::<Result<Vec<_>, _>>();
    let checks = &plan.profile.checks;
    Ok(Checks {
        validate_healths: read(&checks.validate_healths)?,
        pre_deploy: read(&checks.pre_deploy)?,
        pre_delete: read(&checks.pre_delete)?,
        post_delete: read(&checks.post_delete)?,
    })
}

fn check(plan: &ProfilePlan<'_>, resources: &Resources, spec: &CheckSpec, warnings: &mut Vec<String>) -> Result<Check, String> {
    let Some(job) = &spec.job else { return Ok(spec.check.clone()) };
    let reference = &plan.jobs[&job.field];
    let object = reference.key.to_string();
    let fail = |why: String| format!("{}: {}: {object}: {why}", plan.profile.display(), job.field);
    let value = resources.get(&reference.key).ok_or_else(|| fail("does not exist".into()))?;
    let mut found = Vec::new();
    for (key, text) in data_texts(value, job.kind, &object, warnings).map_err(|e| fail(e.to_string()))? {
        let origin = format!("{}: {object} key {key}", plan.profile.display());
        found.extend(documents(&text, &origin).map_err(|e| fail(e.to_string()))?);
    }
    let [manifest] = &mut found[..] else { return Err(fail(format!("holds {} objects, not one Job", found.len()))) };
    let mut manifest = std::mem::take(&mut manifest.value);
    if let Some(metadata) = manifest.get_mut("metadata").and_then(Value::as_object_mut) {
        metadata.entry("namespace").or_insert_with(|| Value::String("default".into()));
    }
    let check = Check { job: Some(JobCheck { manifest, timeout_seconds: job.timeout_seconds }), ..spec.check.clone() };
    runnable(&check).map_err(fail)?;
    Ok(check)
}
