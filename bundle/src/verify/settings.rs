//! Step 6 of spec section 8, for the optional settings of a statement (spec 5.2, 5.3): a
//! window both of whose edges are cron expressions, failure counts of at least one, drift
//! exclusions made of JSON pointers, notes that name a field, and content kept from an
//! earlier version only. What the puller does with them is its own business.

use super::error::VerifyError;
use crate::cron::Window;
use crate::statement::{Predicate, ProfileEntry};

/// Paths of one drift exclusion: more is not a profile but a payload.
pub const MAX_DRIFT_PATHS: usize = 1_000;

pub(super) fn check_window(p: &Predicate) -> Result<(), VerifyError> {
    if let Some(w) = &p.active_window {
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

/// RFC 6901: `/`-separated tokens in which `~` is followed only by `0` or `1`.
pub fn is_json_pointer(path: &str) -> bool {
    path.starts_with('/') && path.split('~').skip(1).all(|rest| rest.starts_with(['0', '1']))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_pointers() {
        for good in ["/spec/replicas", "/metadata/annotations/a~1b", "/x~0y", "/"] {
            assert!(is_json_pointer(good), "{good}");
        }
        for bad in ["spec.replicas", "", "/a~2", "/a~"] {
            assert!(!is_json_pointer(bad), "{bad}");
        }
    }
}
