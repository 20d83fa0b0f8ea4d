//! A sync's checks (spec 5.11), around the engine's apply. Before it: each part's
//! `preDeployChecks`, and the recorded `preDeleteChecks` of each part leaving the bundle;
//! a part whose check fails is held back this run (nothing of it is sent or pruned).
//! After it: the `validateHealths` of each part the run applied, retried until they pass
//! or `--check-timeout` runs out, and the `postDeleteChecks` of each part pruned. Any
//! failure fails the run, which then records nothing: the next run verifies the same
//! bundle as new, applies it again and runs the checks again, as Sveltos retries a
//! deployment whose checks failed. Under `--dry-run` no check runs (a Job check writes).

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::statement::ProfileEntry;

use crate::engine::checks::{Checker, Failed, Stage};
use crate::engine::{Action, Outcome};
use crate::kept::delete_checks::DeleteChecks;

/// The checks before the apply; failed parts are added to `held_back`.
pub(super) async fn before(
    checker: &Checker<'_>,
    profiles: &[ProfileEntry],
    leaving: &[&DeleteChecks],
    held_back: &mut BTreeMap<String, String>,
) -> Vec<Failed> {
    let mut failed = Vec::new();
    let deploying = profiles.iter().map(|p| (p.name.as_str(), Stage::PreDeploy, &p.checks.pre_deploy));
    let deleting = leaving.iter().map(|d| (d.part.as_str(), Stage::PreDelete, &d.pre));
    for (part, stage, checks) in deploying.chain(deleting) {
        if checks.is_empty() || held_back.contains_key(part) {
            continue;
        }
        if let Some(f) = checker.run(part, stage, checks).await {
            held_back.insert(part.to_string(), format!("not applied: {f}"));
            failed.push(f);
        }
    }
    failed
}

/// The checks after an apply that failed no object: of the parts it applied, and of the
/// leaving parts it pruned.
pub(super) async fn after(
    checker: &Checker<'_>,
    profiles: &[ProfileEntry],
    leaving: &[&DeleteChecks],
    held_back: &BTreeMap<String, String>,
    outcome: &Outcome,
) -> Vec<Failed> {
    let skipped: BTreeSet<&str> = outcome.results.iter().filter(|r| r.action == Action::Skipped).map(|r| r.profile.as_str()).collect();
    let mut failed = Vec::new();
    for p in profiles {
        let part = p.name.as_str();
        if p.checks.validate_healths.is_empty() || held_back.contains_key(part) || skipped.contains(part) {
            continue;
        }
        failed.extend(checker.until_healthy(part, &p.checks.validate_healths).await);
    }
    for d in leaving {
        if d.post.is_empty() || held_back.contains_key(&d.part) {
            continue;
        }
        failed.extend(checker.run(&d.part, Stage::PostDelete, &d.post).await);
    }
    failed
}
