//! The `preDeleteChecks` and `postDeleteChecks` of the applied bundle's parts, kept in
//! the state: a part that leaves the bundle is gone from the new statement, so the checks
//! to run around its pruning are the ones recorded when it was last applied.

use airlock_bundle::statement::{Check, ProfileEntry};
use serde::{Deserialize, Serialize};

/// One part's delete checks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct DeleteChecks {
    pub part: String,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub pre: Vec<Check>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub post: Vec<Check>,
}

/// The delete checks of `profiles`, for the state of their bundle.
pub fn of(profiles: &[ProfileEntry]) -> Vec<DeleteChecks> {
    profiles
        .iter()
        .filter(|p| !p.checks.pre_delete.is_empty() || !p.checks.post_delete.is_empty())
        .map(|p| DeleteChecks { part: p.name.clone(), pre: p.checks.pre_delete.clone(), post: p.checks.post_delete.clone() })
        .collect()
}

/// The recorded delete checks of the parts `profiles` no longer has.
pub fn leaving<'a>(recorded: &'a [DeleteChecks], profiles: &[ProfileEntry]) -> Vec<&'a DeleteChecks> {
    recorded.iter().filter(|d| !profiles.iter().any(|p| p.name == d.part)).collect()
}
