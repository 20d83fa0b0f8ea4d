//! Step 6 of spec section 8, for the optional settings of a statement (spec 5.2, 5.3): a
//! window both of whose edges are cron expressions, failure counts of at least one, drift
//! exclusions made of JSON pointers, notes that name a field, and content kept from an
//! earlier version only. What the puller does with them is its own business.

use super::error::VerifyError;
use crate::cron::Window;
use crate::statement::{Check, Predicate, ProfileEntry};

/// Paths of one drift exclusion: more is not a profile but a payload.
pub const MAX_DRIFT_PATHS: usize = 1_000;

pub(super) fn check_window(p: &Predicate) -> Result<(), VerifyError> {
    if let Some(w) = &p.settings.active_window {
        Window::parse(&w.from, &w.to).map_err(|e| VerifyError::BadField(format!("activeWindow: {e}")))?;
    }
    Ok(())
}

pub(super) fn check_profile(profile: &ProfileEntry, version: u64) -> Result<(), VerifyError> {
    let bad = |what: String| VerifyError::BadField(format!("profile {:?}: {what}", profile.name));
    if profile.max_consecutive_failures == Some(0) {
        return Err(bad("maxConsecutiveFailures is 0; it counts from 1".into()));
    }
    for (i, exclusion) in profile.drift_exclusions.iter().enumerate() {
        if exclusion.paths.is_empty() || exclusion.paths.len() > MAX_DRIFT_PATHS {
            return Err(bad(format!("driftExclusions[{i}] has {} paths, expected 1 to {MAX_DRIFT_PATHS}", exclusion.paths.len())));
        }
        if let Some(path) = exclusion.paths.iter().find(|p| !is_json_pointer(p)) {
            return Err(bad(format!("driftExclusions[{i}] path {path:?} is not a JSON pointer (/a/b)")));
        }
    }
    for (list, check) in profile.checks.all() {
        runnable(check).map_err(|why| bad(format!("{list} {:?}: {why}", check.name)))?;
    }
    if let Some(sa) = &profile.service_account {
        sa.check().map_err(|why| bad(format!("serviceAccount {why}")))?;
    }
    if let Some(note) = profile.notes.iter().find(|n| n.field.is_empty()) {
        return Err(bad(format!("a note names no field ({:?})", note.detail)));
    }
    if let Some(kept) = profile.failure.as_ref().and_then(|f| f.kept_from)
        && (kept == 0 || kept >= version)
    {
        return Err(bad(format!("failure.keptFrom {kept} is not an earlier version than {version}")));
    }
    Ok(())
}

/// Features a check may name (Sveltos `featureID`).
const FEATURES: [&str; 3] = ["Resources", "Helm", "Kustomize"];

/// A check that can run: something to judge, and a way to judge it (spec 5.11).
pub fn runnable(check: &Check) -> Result<(), String> {
    if check.name.is_empty() {
        return Err("the check has no name".into());
    }
    if !FEATURES.contains(&check.feature.as_str()) {
        return Err(format!("feature {:?} is none of {FEATURES:?}", check.feature));
    }
    if let Some(objects) = &check.objects
        && (objects.version.is_empty() || objects.kind.is_empty())
    {
        return Err("objects name no version or no kind".into());
    }
    let judged = check.script.is_some() || !check.cel.is_empty();
    if let Some(job) = &check.job {
        if judged || check.objects.is_some() || check.metrics.is_some() {
            return Err("a Job check has no script, CEL rules, objects or metrics".into());
        }
        let field = |name: &str| job.manifest.pointer(name).and_then(serde_json::Value::as_str).unwrap_or_default();
        if field("/apiVersion") != "batch/v1"
            || field("/kind") != "Job"
            || field("/metadata/name").is_empty()
            || field("/metadata/namespace").is_empty()
        {
            return Err("the Job manifest is not a batch/v1 Job with a name and a namespace".into());
        }
        if job.timeout_seconds == 0 {
            return Err("the Job's timeout is 0 seconds".into());
        }
        return Ok(());
    }
    if let Some(metrics) = &check.metrics
        && (metrics.queries.is_empty() || metrics.url.is_empty())
    {
        return Err("metrics have no URL or no query".into());
    }
    match (&check.objects, check.script.is_some()) {
        (None, false) => Err("a check without objects judges metrics, and needs a script".into()),
        (None, true) if !check.cel.is_empty() => Err("CEL rules judge objects, and the check lists none".into()),
        _ => Ok(()),
    }
}

/// RFC 6901: `/`-separated tokens in which `~` is followed only by `0` or `1`.
pub fn is_json_pointer(path: &str) -> bool {
    path.starts_with('/') && path.split('~').skip(1).all(|rest| rest.starts_with(['0', '1']))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::statement::{CelRule, JobCheck, Metrics, Selection};

    #[test]
    fn json_pointers() {
        for good in ["/spec/replicas", "/metadata/annotations/a~1b", "/x~0y", "/"] {
            assert!(is_json_pointer(good), "{good}");
        }
        for bad in ["spec.replicas", "", "/a~2", "/a~"] {
            assert!(!is_json_pointer(bad), "{bad}");
        }
    }

    fn check() -> Check {
        Check {
            name: "ready".into(),
            feature: "Resources".into(),
            objects: Some(Selection {
                group: "apps".into(),
                version: "v1".into(),
                kind: "Deployment".into(),
                namespace: None,
                name: None,
                label_selector: String::new(),
            }),
            script: None,
            cel: vec![],
            metrics: None,
            job: None,
        }
    }

    #[test]
    fn checks_need_something_to_judge_and_a_way_to_judge_it() {
        let job = JobCheck {
            manifest: serde_json::json!({"apiVersion": "batch/v1", "kind": "Job", "metadata": {"name": "smoke", "namespace": "ops"}}),
            timeout_seconds: 300,
        };
        let metrics = Metrics { url: "http://prom:9090".into(), path: "api/v1/query".into(), secret: None, queries: vec![] };
        let cel = vec![CelRule { name: "ok".into(), rule: "true".into() }];
        assert_eq!(runnable(&check()), Ok(()), "objects alone: they must exist");
        assert_eq!(runnable(&Check { objects: None, job: Some(job.clone()), ..check() }), Ok(()));
        for (bad, needle) in [
            (Check { feature: "Flux".into(), ..check() }, "feature \"Flux\""),
            (Check { name: String::new(), ..check() }, "no name"),
            (Check { objects: None, ..check() }, "needs a script"),
            (Check { objects: None, script: Some("x".into()), cel: cel.clone(), ..check() }, "CEL rules judge objects"),
            (Check { job: Some(job.clone()), ..check() }, "a Job check has no"),
            (Check { objects: None, job: Some(JobCheck { timeout_seconds: 0, ..job.clone() }), ..check() }, "timeout is 0"),
            (
                Check { objects: None, job: Some(JobCheck { manifest: serde_json::json!({"kind": "Pod"}), ..job }), ..check() },
                "not a batch/v1 Job",
            ),
            (Check { metrics: Some(metrics), script: Some("x".into()), ..check() }, "no URL or no query"),
        ] {
            let why = runnable(&bad).unwrap_err();
            assert!(why.contains(needle), "{needle}: {why}");
        }
    }
}
