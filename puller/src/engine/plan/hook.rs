//! Helm releases and their hooks (spec 2.5.3): the release labels and hook annotations the
//! publisher writes, read and checked when the bundle is parsed, and which operation each
//! release goes through in a run, which decides the hooks that fire.
//!
//! A release is installed when none of its objects (hooks aside) is in the previous
//! inventory, and upgraded when some are and anything of it changed: an object, a hook, or
//! an object it no longer has. A release with nothing changed fires no hook, as Sveltos
//! upgrades a release only when its inputs change. A release of which the bundle holds
//! hooks only, and the inventory objects, is uninstalled: its objects are pruned between
//! its pre-delete and post-delete hooks. Running a fired hook is `hook_run`'s.

use std::collections::{HashMap, HashSet};
use std::time::Duration;

use airlock_bundle::SyncMode;
use airlock_bundle::vocabulary::{
    DeletePolicy, HOOK_ANNOTATION, HOOK_DELETE_POLICY_ANNOTATION, HOOK_TIMEOUT_ANNOTATION, HOOK_WEIGHT_ANNOTATION, HookEvent,
    RELEASE_LABEL, RELEASE_NAMESPACE_LABEL,
};
use serde_json::{Map, Value};

use crate::engine::model::helm::Hook;
use crate::engine::model::object::{DesiredObject, InventoryEntry, ObjectKey};
use crate::engine::model::order::Slot;

/// Helm's default `--timeout`.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);
const MAX_TIMEOUT_SECONDS: u64 = 86_400;

/// What a release goes through in a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Operation {
    Install,
    Upgrade,
    Uninstall,
}

impl Hook {
    /// Whether it fires on uninstall only.
    pub(crate) fn deletes_only(&self) -> bool {
        self.events.iter().all(|e| matches!(e, HookEvent::PreDelete | HookEvent::PostDelete))
    }

    /// The event this hook fires on in `operation`, and where it goes, if it fires at all.
    /// A hook of both a pre- and a post- event fires once, before.
    pub(crate) fn fires(&self, operation: Operation) -> Option<(HookEvent, Slot)> {
        let (pre, post, test) = match operation {
            Operation::Install => (HookEvent::PreInstall, HookEvent::PostInstall, Some(HookEvent::Test)),
            Operation::Upgrade => (HookEvent::PreUpgrade, HookEvent::PostUpgrade, Some(HookEvent::Test)),
            Operation::Uninstall => (HookEvent::PreDelete, HookEvent::PostDelete, None),
        };
        let slots = [(Some(pre), Slot::Pre), (Some(post), Slot::Post), (test, Slot::Test)];
        slots.into_iter().find_map(|(e, slot)| e.filter(|e| self.events.contains(e)).map(|e| (e, slot)))
    }
}

/// The release key of an object, `<namespace>/<name>`, from its labels.
pub(crate) fn release(labels: &Map<String, Value>) -> Option<String> {
    let name = labels.get(RELEASE_LABEL)?.as_str()?;
    Some(format!("{}/{name}", labels.get(RELEASE_NAMESPACE_LABEL).and_then(Value::as_str).unwrap_or_default()))
}

/// The hook an object's annotations make it, if any; `in_release` says whether it has a
/// release label. An error names the annotation that is wrong.
pub(crate) fn read(annotations: &Map<String, Value>, in_release: bool) -> Result<Option<Hook>, String> {
    let text = |key: &str| annotations.get(key).and_then(Value::as_str).map(str::to_string);
    let Some(events) = text(HOOK_ANNOTATION) else {
        let stray = [HOOK_WEIGHT_ANNOTATION, HOOK_DELETE_POLICY_ANNOTATION, HOOK_TIMEOUT_ANNOTATION]
            .into_iter()
            .find(|k| annotations.contains_key(*k));
        return match stray {
            Some(key) => Err(format!("annotation {key} is set without {HOOK_ANNOTATION}")),
            None => Ok(None),
        };
    };
    if !in_release {
        return Err(format!(
            "annotation {HOOK_ANNOTATION} is set, but the object has no {RELEASE_LABEL} label: a hook belongs to a release"
        ));
    }
    let events = list(&events, HOOK_ANNOTATION, |e| e.parse::<HookEvent>().ok().filter(|e| e.on_site()))?;
    let weight = match text(HOOK_WEIGHT_ANNOTATION) {
        None => 0,
        Some(w) => w.parse().map_err(|_| format!("annotation {HOOK_WEIGHT_ANNOTATION} is {w:?}, not an integer"))?,
    };
    let policies = match text(HOOK_DELETE_POLICY_ANNOTATION) {
        None => vec![DeletePolicy::BeforeHookCreation],
        Some(p) => list(&p, HOOK_DELETE_POLICY_ANNOTATION, |p| p.parse::<DeletePolicy>().ok())?,
    };
    let timeout = timeout(annotations, HOOK_TIMEOUT_ANNOTATION)?;
    let hook = Hook {
        events,
        weight,
        delete_before: policies.contains(&DeletePolicy::BeforeHookCreation),
        delete_succeeded: policies.contains(&DeletePolicy::HookSucceeded),
        delete_failed: policies.contains(&DeletePolicy::HookFailed),
        timeout,
    };
    Ok(Some(hook))
}

/// The timeout annotation `key` holds, Helm's default of 300 s when absent.
pub(crate) fn timeout(annotations: &Map<String, Value>, key: &str) -> Result<Duration, String> {
    match annotations.get(key).and_then(Value::as_str) {
        None => Ok(DEFAULT_TIMEOUT),
        Some(t) => match t.parse::<u64>() {
            Ok(s @ 1..=MAX_TIMEOUT_SECONDS) => Ok(Duration::from_secs(s)),
            _ => Err(format!("annotation {key} is {t:?}, not a whole number of seconds from 1 to {MAX_TIMEOUT_SECONDS}")),
        },
    }
}

/// The comma-separated items of annotation `key`, each one `known` recognises; at least one.
pub(crate) fn list<T: PartialEq>(text: &str, key: &str, known: impl Fn(&str) -> Option<T>) -> Result<Vec<T>, String> {
    let mut items = Vec::new();
    for item in text.split(',').map(str::trim) {
        let parsed = known(item).ok_or_else(|| format!("annotation {key} names {item:?}, which is not one it may name (spec 2.5.3)"))?;
        if !items.contains(&parsed) {
            items.push(parsed);
        }
    }
    Ok(items)
}

/// The operation of every release with something to do in this run, given the objects a
/// run applies (objects of parts held back left out by the caller) and the previous
/// inventory. Create-only objects, dry-run parts and delete hooks change nothing; a
/// OneTime object applied before never changes.
pub(crate) fn operations<'a>(objects: impl Iterator<Item = &'a DesiredObject>, previous: &[InventoryEntry]) -> HashMap<String, Operation> {
    let by_key: HashMap<ObjectKey, &InventoryEntry> = previous.iter().map(|e| (e.id.key(), e)).collect();
    let mut changed: HashSet<&str> = HashSet::new();
    let mut with_objects: HashSet<&str> = HashSet::new();
    let mut with_hooks: HashSet<&str> = HashSet::new();
    let mut desired: HashSet<ObjectKey> = HashSet::new();
    for object in objects {
        let Some(release) = &object.release else { continue };
        desired.insert(object.id.key());
        if object.hook.is_some() {
            with_hooks.insert(release)
        } else {
            with_objects.insert(release)
        };
        // A delete hook is news only to an uninstall, which the objects leaving tell apart.
        if object.create_only || object.sync_mode == SyncMode::DryRun || object.hook.as_ref().is_some_and(Hook::deletes_only) {
            continue;
        }
        let before = by_key.get(&object.id.key());
        let kept = object.sync_mode == SyncMode::OneTime && before.is_some();
        if !kept && before.is_none_or(|e| e.applied_hash != object.hash) {
            changed.insert(release);
        }
    }
    let mut installed: HashSet<&str> = HashSet::new();
    for entry in previous.iter().filter(|e| !e.hook) {
        let Some(release) = entry.release.as_deref() else { continue };
        installed.insert(release);
        if !desired.contains(&entry.id.key()) {
            changed.insert(release);
        }
    }
    let operation = |release: &str| match (installed.contains(release), with_objects.contains(release)) {
        (true, false) => with_hooks.contains(release).then_some(Operation::Uninstall),
        (true, true) => Some(Operation::Upgrade),
        (false, _) => Some(Operation::Install),
    };
    changed.into_iter().filter_map(|r| Some((r.to_string(), operation(r)?))).collect()
}

#[cfg(test)]
#[path = "hook_tests.rs"]
mod tests;
