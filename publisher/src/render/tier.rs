//! Tier conflicts: when two profiles deploy the same object to a cluster, which copy wins.
//!
//! Objects are the same when group, kind, namespace and name are. The copy from the
//! lowest tier wins and every other copy is dropped with a warning. A tie at the lowest
//! tier (or one profile deploying an object twice) is a conflict: Sveltos would pick by
//! arrival order, which a publisher cannot reproduce, so the cluster fails instead of the
//! publisher guessing.

use std::sync::Arc;

use super::error::RenderError;
use super::object::Object;

/// An object offered by one part.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Shared by the part's every object.
    pub part: Arc<str>,
    pub tier: u32,
    pub object: Arc<Object>,
}

/// Keeps one copy of every object. Returns the winners in object order and a warning per
/// dropped copy.
///
/// Sorted in place rather than grouped in a map: every cluster of a publish passes here
/// with all its objects, and a map cloned each object's key.
pub fn resolve(mut candidates: Vec<Candidate>) -> Result<(Vec<Candidate>, Vec<String>), RenderError> {
    candidates.sort_by(|a, b| a.object.key.cmp(&b.object.key).then_with(|| (a.tier, &a.part).cmp(&(b.tier, &b.part))));
    let mut kept = Vec::with_capacity(candidates.len());
    let mut warnings = Vec::new();
    let mut copies = candidates.into_iter().peekable();
    while let Some(winner) = copies.next() {
        let key = &winner.object.key;
        let mut losers = Vec::new();
        while let Some(loser) = copies.next_if(|c| &c.object.key == key) {
            losers.push(loser);
        }
        if losers.first().is_some_and(|l| l.tier == winner.tier) {
            let tied = std::iter::once(&winner).chain(losers.iter().take_while(|l| l.tier == winner.tier));
            return Err(RenderError::Conflict {
                object: key.to_string(),
                tier: winner.tier,
                origins: tied.map(|c| c.object.origin.clone()).collect(),
            });
        }
        for loser in losers {
            warnings.push(format!(
                "{key}: {} (tier {}) wins over {} (tier {}), whose copy is dropped",
                winner.part, winner.tier, loser.part, loser.tier
            ));
        }
        kept.push(winner);
    }
    Ok((kept, warnings))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sveltos::ObjectKey;

    fn candidate(part: &str, tier: u32, name: &str) -> Candidate {
        let key = ObjectKey::new("v1", "ConfigMap", "apps", name);
        let object = Object { key, origin: format!("{part} key k"), yaml: format!("name: {name}\n").into() };
        Candidate { part: part.into(), tier, object: Arc::new(object) }
    }

    #[test]
    fn lower_tier_wins_and_the_loser_is_reported() {
        let (kept, warnings) = resolve(vec![
            candidate("ClusterProfile.a", 100, "shared"),
            candidate("ClusterProfile.b", 50, "shared"),
            candidate("ClusterProfile.a", 100, "only-a"),
            candidate("ClusterProfile.c", 200, "shared"),
        ])
        .unwrap();
        let winners: Vec<(&str, &str)> = kept.iter().map(|c| (&*c.part, c.object.key.name.as_str())).collect();
        assert_eq!(winners, [("ClusterProfile.a", "only-a"), ("ClusterProfile.b", "shared")]);
        assert_eq!(warnings.len(), 2, "{warnings:?}");
        assert!(warnings.iter().all(|w| w.contains("ClusterProfile.b (tier 50) wins")), "{warnings:?}");
    }

    #[test]
    fn a_tie_at_the_lowest_tier_is_a_conflict() {
        let err = resolve(vec![
            candidate("ClusterProfile.a", 100, "shared"),
            candidate("ClusterProfile.b", 100, "shared"),
            candidate("ClusterProfile.c", 300, "shared"),
        ])
        .unwrap_err();
        assert_eq!(
            err,
            RenderError::Conflict {
                object: "ConfigMap apps/shared".into(),
                tier: 100,
                origins: vec!["ClusterProfile.a key k".into(), "ClusterProfile.b key k".into()],
            }
        );
    }

    #[test]
    fn one_profile_deploying_an_object_twice_is_a_conflict() {
        let err = resolve(vec![candidate("ClusterProfile.a", 100, "x"), candidate("ClusterProfile.a", 100, "x")]).unwrap_err();
        assert!(matches!(err, RenderError::Conflict { tier: 100, .. }), "{err}");
    }
}
