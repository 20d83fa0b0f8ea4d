//! The annotations of a Helm release's objects that tell the site how to apply them
//! (spec 2.5.3), read and checked when the bundle is parsed: the wait before the post-
//! hooks, the operations whose failure deletes what they created, and how the objects are
//! pruned. An error names the annotation. The hook annotations are `plan::hook`'s.

use airlock_bundle::vocabulary::{CLEANUP_ON_FAIL_ANNOTATION, DELETION_PROPAGATION_ANNOTATION, WAIT_ANNOTATION, WAIT_TIMEOUT_ANNOTATION};
use serde_json::{Map, Value};

use crate::engine::model::helm::{CleanupOnFail, Wait};
use crate::engine::model::object::Propagation;
use crate::engine::plan::hook;

/// The wait an object's annotations ask for, if any; `in_release` and `hook` say whether
/// it has a release label and hook annotations. An error names the annotation.
pub(crate) fn read_wait(annotations: &Map<String, Value>, in_release: bool, hook: bool) -> Result<Option<Wait>, String> {
    let text = |key: &str| annotations.get(key).and_then(Value::as_str);
    let Some(mode) = text(WAIT_ANNOTATION) else {
        return match annotations.contains_key(WAIT_TIMEOUT_ANNOTATION) {
            true => Err(format!("annotation {WAIT_TIMEOUT_ANNOTATION} is set without {WAIT_ANNOTATION}")),
            false => Ok(None),
        };
    };
    if !in_release || hook {
        return Err(format!(
            "annotation {WAIT_ANNOTATION} is set on an object that is not one of a release's objects (a hook is waited for by its own rules)"
        ));
    }
    let jobs = match mode {
        "ready" => false,
        "ready-and-jobs" => true,
        other => return Err(format!("annotation {WAIT_ANNOTATION} is {other:?}, not \"ready\" or \"ready-and-jobs\"")),
    };
    Ok(Some(Wait { jobs, timeout: hook::timeout(annotations, WAIT_TIMEOUT_ANNOTATION)? }))
}

/// The propagation annotation, read; `in_release` and `is_hook` as for the wait annotations.
pub(crate) fn read_propagation(annotations: &Map<String, Value>, in_release: bool, is_hook: bool) -> Result<Option<Propagation>, String> {
    let Some(text) = annotations.get(DELETION_PROPAGATION_ANNOTATION).and_then(Value::as_str) else { return Ok(None) };
    if !in_release || is_hook {
        return Err(format!("annotation {DELETION_PROPAGATION_ANNOTATION} is set on an object that is not one of a release's objects"));
    }
    let known = [("background", Propagation::Background), ("foreground", Propagation::Foreground), ("orphan", Propagation::Orphan)];
    match known.into_iter().find(|(name, _)| *name == text) {
        Some((_, p)) => Ok(Some(p)),
        None => Err(format!("annotation {DELETION_PROPAGATION_ANNOTATION} is {text:?}, not background, foreground or orphan")),
    }
}

/// The annotation, read; `in_release` and `is_hook` as for the wait annotations.
pub(crate) fn read_cleanup_on_fail(annotations: &Map<String, Value>, in_release: bool, is_hook: bool) -> Result<CleanupOnFail, String> {
    let Some(text) = annotations.get(CLEANUP_ON_FAIL_ANNOTATION).and_then(Value::as_str) else {
        return Ok(CleanupOnFail::default());
    };
    if !in_release || is_hook {
        return Err(format!(
            "annotation {CLEANUP_ON_FAIL_ANNOTATION} is set on an object that is not one of a release's objects (hooks follow their delete policy)"
        ));
    }
    let operations = hook::list(text, CLEANUP_ON_FAIL_ANNOTATION, |o| ["install", "upgrade"].into_iter().find(|x| *x == o))?;
    Ok(CleanupOnFail { install: operations.contains(&"install"), upgrade: operations.contains(&"upgrade") })
}
