//! What a part's settings ask of its objects as a group, beyond how to apply each one:
//! whether a refused object stops the part's other objects (`continueOnError`, spec 5.7),
//! which parts must be applied before it (`dependsOn`, followed to the end), and the
//! fields drift ignores (`driftExclusions`, spec 5.8). Read once per part when the bundle
//! is parsed and shared by its objects; acting on it is `gate`'s and the apply's.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use airlock_bundle::statement::ProfileEntry;

use crate::engine::model::error::EngineError;
use crate::engine::model::exclusion;
use crate::engine::model::object::PartRules;

/// The rules of every part of `profiles`, checked in full: a drift exclusion that cannot
/// be used, or a check whose CEL or Lua does not parse, refuses the bundle.
pub(crate) fn rules(profiles: &[ProfileEntry]) -> Result<HashMap<String, Arc<PartRules>>, EngineError> {
    let requires = requirements(profiles);
    profiles
        .iter()
        .map(|p| {
            crate::engine::checks::validate(p).map_err(|(field, message)| EngineError::Setting { part: p.name.clone(), field, message })?;
            let rules = PartRules {
                continue_on_error: p.continue_on_error,
                requires: requires.get(p.name.as_str()).cloned().unwrap_or_default(),
                exclusions: exclusion::compile(p)?,
                reloader: p.reloader,
                service_account: p.service_account.clone(),
            };
            Ok((p.name.clone(), Arc::new(rules)))
        })
        .collect()
}

/// Each part's dependencies, followed to the end; a part met twice is followed once, so
/// this ends whatever the graph (verification rejects cycles anyway).
fn requirements(profiles: &[ProfileEntry]) -> HashMap<&str, BTreeSet<String>> {
    let direct: HashMap<&str, &[String]> = profiles.iter().map(|p| (p.name.as_str(), &p.depends_on[..])).collect();
    let closure = |profile: &ProfileEntry| {
        let mut found = BTreeSet::new();
        let mut next: Vec<&str> = profile.depends_on.iter().map(String::as_str).collect();
        while let Some(part) = next.pop() {
            if found.insert(part.to_string()) {
                next.extend(direct.get(part).into_iter().flat_map(|d| d.iter().map(String::as_str)));
            }
        }
        found
    };
    profiles.iter().map(|p| (p.name.as_str(), closure(p))).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::testing::profile;

    #[test]
    fn requirements_follow_depends_on_to_the_end() {
        let profiles = [profile("a", &["b"]), profile("b", &["c"]), profile("c", &[]), profile("d", &["a"])];
        let rules = rules(&profiles).unwrap();
        let names = |p: &str| rules[p].requires.iter().cloned().collect::<Vec<_>>();
        assert_eq!(
            (names("a"), names("b"), names("c"), names("d")),
            (vec!["b".into(), "c".into()], vec!["c".into()], vec![], vec!["a".into(), "b".into(), "c".into()])
        );
    }
}
