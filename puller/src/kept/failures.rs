//! The count behind `maxConsecutiveFailures` (spec 5.7): per part and part digest, the
//! runs in a row that failed to apply it, kept in the state. A part whose count for the
//! digest it has now reached its limit is held back (left as it is, its objects reported
//! skipped) until its digest changes; a run that applies it resets the count.
//!
//! Only parts with a limit are counted: for the others a count changes nothing, and not
//! keeping one spares a failing run a write of the state. This module is arithmetic; the
//! sync command reads the counts from the state and writes them back.

use std::collections::BTreeMap;

use airlock_bundle::Digest;
use airlock_bundle::statement::ProfileEntry;
use serde::{Deserialize, Serialize};

use crate::engine::{Action, ObjectResult};

/// Runs in a row that failed to apply one part as it is now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PartFailures {
    pub part: String,
    /// The part's digest those runs failed to apply.
    pub digest: Digest,
    pub runs: u32,
}

/// The count of `profile` as it is now in `counts`: 0 under another digest.
fn runs(counts: &[PartFailures], profile: &ProfileEntry) -> u32 {
    counts.iter().find(|c| c.part == profile.name && c.digest == profile.digest).map_or(0, |c| c.runs)
}

/// The parts of `profiles` to leave as they are this run, with why.
pub fn held_back(counts: &[PartFailures], profiles: &[ProfileEntry]) -> BTreeMap<String, String> {
    profiles
        .iter()
        .filter_map(|p| {
            let limit = p.max_consecutive_failures?;
            let runs = runs(counts, p);
            (runs >= limit).then(|| {
                let why = format!(
                    "not applied: the last {runs} runs failed to apply this part as it is (maxConsecutiveFailures {limit}); \
                     it is left as it is until its content changes"
                );
                (p.name.clone(), why)
            })
        })
        .collect()
}

/// The counts once a run of `profiles` ended with `results`: a part with a failed object
/// failed once more; one skipped (held back, or stopped by another's failure) keeps its
/// count; any other was applied, and is counted no more.
pub fn counted(counts: &[PartFailures], profiles: &[ProfileEntry], results: &[ObjectResult]) -> Vec<PartFailures> {
    profiles
        .iter()
        .filter(|p| p.max_consecutive_failures.is_some())
        .filter_map(|p| {
            let of_part = || results.iter().filter(|r| r.profile == p.name);
            let before = runs(counts, p);
            let runs = if of_part().any(|r| r.action == Action::Failed) {
                before.saturating_add(1)
            } else if of_part().any(|r| r.action == Action::Skipped) {
                before
            } else {
                0
            };
            (runs > 0).then(|| PartFailures { part: p.name.clone(), digest: p.digest, runs })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use airlock_bundle::PartSettings;
    use airlock_bundle::sign::profile_entry;

    use super::*;
    use crate::reports::report::test_result;

    fn profile(name: &str, content: &[u8], limit: Option<u32>) -> ProfileEntry {
        profile_entry(name, Digest::of(content), 1024, PartSettings { max_consecutive_failures: limit, ..PartSettings::default() })
    }

    fn result(profile: &str, action: Action) -> ObjectResult {
        ObjectResult { profile: profile.into(), ..test_result("ConfigMap", "x", action, None) }
    }

    #[test]
    fn counts_failed_runs_per_part_and_digest_until_the_limit_holds_it_back() {
        let web = profile("ClusterProfile.web", b"v1", Some(2));
        let unlimited = profile("ClusterProfile.db", b"v1", None);
        let profiles = [web.clone(), unlimited];
        let failed = [result("ClusterProfile.web", Action::Failed), result("ClusterProfile.db", Action::Failed)];
        let once = counted(&[], &profiles, &failed);
        assert_eq!(once, [PartFailures { part: web.name.clone(), digest: web.digest, runs: 1 }], "a part without a limit is not counted");
        assert!(held_back(&once, &profiles).is_empty());
        let twice = counted(&once, &profiles, &failed);
        assert_eq!(twice[0].runs, 2);
        let held = held_back(&twice, &profiles);
        assert!(held[&web.name].contains("the last 2 runs failed") && held[&web.name].contains("maxConsecutiveFailures 2"), "{held:?}");
        // Held back, its objects are skipped: the count stays, and so does the hold.
        let skipped = counted(&twice, &profiles, &[result("ClusterProfile.web", Action::Skipped)]);
        assert_eq!(skipped, twice);
        // New content is a new part: counted from 0, not held.
        let changed = [profile("ClusterProfile.web", b"v2", Some(2))];
        assert!(held_back(&twice, &changed).is_empty());
        assert_eq!(counted(&twice, &changed, &[result("ClusterProfile.web", Action::Failed)])[0].runs, 1);
    }

    #[test]
    fn a_run_that_applies_the_part_resets_its_count() {
        let profiles = [profile("ClusterProfile.web", b"v1", Some(3))];
        let once = counted(&[], &profiles, &[result("ClusterProfile.web", Action::Failed)]);
        assert!(counted(&once, &profiles, &[result("ClusterProfile.web", Action::Configured)]).is_empty());
        assert!(counted(&once, &profiles, &[]).is_empty(), "an empty part applies");
        assert!(counted(&once, &[], &[]).is_empty(), "a part gone from the bundle is forgotten");
    }
}
