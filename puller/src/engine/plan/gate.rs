//! Which objects a run does not send (spec 5.7), and why, reported `skipped`:
//!
//! - [`Held`]: parts the caller leaves as they are this run (`Settings::held_back`, its
//!   count of runs in a row that failed them), and the parts that depend on one of them.
//!   Known before the run; every object of such a part is skipped, and its entries stay
//!   in the inventory, so nothing of it is pruned either.
//! - [`Failures`]: parts with an object the API server refused during the run. An object
//!   not yet sent is then not sent when its own part failed and does not continue on
//!   error, or when a part it depends on failed (`dependsOn`: that part was not applied,
//!   and it had to be first). Objects already in flight when the refusal arrives go on.
//!
//! The run that has a refusal fails and prunes nothing whatever this module decides; the
//! decisions are the stages' to apply.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Mutex;

use crate::engine::model::object::DesiredObject;

/// The parts held back before the run, with why.
#[derive(Debug, Default)]
pub(crate) struct Held(BTreeMap<String, String>);

impl Held {
    /// From the caller's `held_back` (part → why), over the parts of `objects`.
    pub(crate) fn new<'a>(held_back: &BTreeMap<String, String>, objects: impl Iterator<Item = &'a DesiredObject>) -> Held {
        let mut parts = BTreeMap::new();
        for object in objects {
            if parts.contains_key(&object.profile) {
                continue;
            }
            let reason = held_back.get(&object.profile).cloned().or_else(|| {
                let held = object.rules.requires.iter().find(|r| held_back.contains_key(*r))?;
                Some(format!("not applied: it depends on part {held}, which is held back ({})", held_back[held]))
            });
            if let Some(reason) = reason {
                parts.insert(object.profile.clone(), reason);
            }
        }
        // A part with nothing desired is one leaving the bundle: held, its objects stay.
        for (part, reason) in held_back {
            parts.entry(part.clone()).or_insert_with(|| reason.clone());
        }
        Held(parts)
    }

    /// Why `object` is held back, if it is.
    pub(crate) fn reason(&self, object: &DesiredObject) -> Option<&str> {
        self.0.get(&object.profile).map(String::as_str)
    }

    /// Whether the part `part` is held back, so its inventory entries stay as they are.
    pub(crate) fn holds(&self, part: &str) -> bool {
        self.0.contains_key(part)
    }
}

/// The parts with a refused object so far in this run. Shared by the requests in flight.
#[derive(Debug, Default)]
pub(crate) struct Failures(Mutex<BTreeSet<String>>);

impl Failures {
    /// Records that an object of `part` failed.
    pub(crate) fn record(&self, part: &str) {
        self.0.lock().expect("not poisoned").insert(part.to_string());
    }

    /// Why `object`, not sent yet, is not to be sent, if it is not.
    pub(crate) fn stop(&self, object: &DesiredObject) -> Option<String> {
        let failed = self.0.lock().expect("not poisoned");
        if failed.contains(&object.profile) && !object.rules.continue_on_error {
            return Some("not sent: an object of its part was refused before it (continueOnError is false)".into());
        }
        let dependency = object.rules.requires.iter().find(|r| failed.contains(*r))?;
        Some(format!("not sent: it depends on part {dependency}, which failed"))
    }
}

#[cfg(test)]
mod tests {
    use std::collections::BTreeSet;
    use std::sync::Arc;

    use super::*;
    use crate::engine::model::object::PartRules;
    use crate::engine::testing::object;

    fn of(part: &str, continue_on_error: bool, requires: &[&str]) -> DesiredObject {
        let rules = PartRules {
            continue_on_error,
            requires: requires.iter().map(|r| r.to_string()).collect::<BTreeSet<_>>(),
            ..PartRules::default()
        };
        DesiredObject { profile: part.into(), rules: Arc::new(rules), ..object("v1", "ConfigMap", Some("a"), "x") }
    }

    #[test]
    fn a_failure_stops_its_part_unless_it_continues_on_error_and_always_its_dependents() {
        let failures = Failures::default();
        let (stops, goes_on, dependent, other) = (of("a", false, &[]), of("b", true, &[]), of("c", true, &["b"]), of("d", false, &[]));
        assert!([&stops, &goes_on, &dependent, &other].iter().all(|o| failures.stop(o).is_none()), "nothing failed yet");
        failures.record("a");
        failures.record("b");
        assert!(failures.stop(&stops).unwrap().contains("continueOnError is false"));
        assert_eq!(failures.stop(&goes_on), None, "continueOnError: the part goes on");
        assert!(failures.stop(&dependent).unwrap().contains("depends on part b, which failed"));
        assert_eq!(failures.stop(&other), None, "an independent part goes on");
    }

    #[test]
    fn held_parts_hold_their_dependents() {
        let held_back = BTreeMap::from([("a".to_string(), "3 runs failed".to_string())]);
        let objects = [of("a", false, &[]), of("b", false, &["a"]), of("c", false, &[])];
        let held = Held::new(&held_back, objects.iter());
        assert_eq!(held.reason(&objects[0]), Some("3 runs failed"));
        assert_eq!(held.reason(&objects[1]), Some("not applied: it depends on part a, which is held back (3 runs failed)"));
        assert_eq!(held.reason(&objects[2]), None);
        assert!(held.holds("a") && held.holds("b") && !held.holds("c"));
        let leaving = BTreeMap::from([("gone".to_string(), "a pre-delete check failed".to_string())]);
        assert!(Held::new(&leaving, objects.iter()).holds("gone"), "a part with no objects left is held too");
    }
}
