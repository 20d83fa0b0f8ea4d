//! Tier conflicts: when two parts of a cluster's bundle hold the same object, which copy
//! stays. Entry point: [`resolve`].
//!
//! Objects are the same when group, kind, namespace and name are. The copy from the
//! lowest tier wins and every other fresh copy is dropped with a warning. Content kept
//! from an earlier version (a profile that failed) cannot be changed, so it wins a tie
//! with fresh content, as the object's first deployer keeps it in Sveltos; where it loses
//! to a lower tier it stays in its part and the puller drops it. Implicit Namespaces give
//! way to a deployed Namespace, and only one copy of each is kept. A tie between fresh
//! copies of two parts is not decided here: Sveltos lets whoever deployed first keep the
//! object, which only the store can tell, so it is handed back as a [`Tie`].

use std::sync::Arc;

use super::object::Object;
use crate::sources::ObjectKey;

/// An object offered by one part.
#[derive(Debug, Clone, PartialEq)]
pub struct Candidate {
    /// Shared by the part's every object.
    pub part: Arc<str>,
    pub tier: u32,
    pub object: Arc<Object>,
}

/// An object in a part kept from an earlier version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeptKey {
    pub part: Arc<str>,
    pub tier: u32,
    pub key: ObjectKey,
}

/// Fresh copies of one object from several parts, at the lowest tier.
#[derive(Debug, Clone, PartialEq)]
pub struct Tie {
    pub key: ObjectKey,
    pub tier: u32,
    pub copies: Vec<Candidate>,
}

/// What stays of the fresh copies.
#[derive(Debug, Default)]
pub struct Resolution {
    /// The copies kept, in object order.
    pub kept: Vec<Candidate>,
    pub warnings: Vec<String>,
    pub ties: Vec<Tie>,
}

/// Keeps one copy of every object. `kept` are the objects of kept parts, sorted.
///
/// Sorted in place rather than grouped in a map: every cluster of a publish passes here
/// with all its objects, and a map cloned each object's key.
pub fn resolve(mut candidates: Vec<Candidate>, kept: &[KeptKey]) -> Resolution {
    candidates.sort_by(|a, b| {
        a.object
            .key
            .cmp_deployed(&b.object.key)
            .then_with(|| (a.object.implicit, a.tier, &a.part).cmp(&(b.object.implicit, b.tier, &b.part)))
    });
    let mut out = Resolution { kept: Vec::with_capacity(candidates.len()), ..Resolution::default() };
    let mut copies = candidates.into_iter().peekable();
    while let Some(first) = copies.next() {
        let key = first.object.key.clone();
        let mut group = vec![first];
        while let Some(next) = copies.next_if(|c| c.object.key.same_deployed(&key)) {
            group.push(next);
        }
        let held = kept.iter().filter(|k| k.key.same_deployed(&key)).min_by_key(|k| k.tier);
        decide(group, held, &mut out);
    }
    out
}

/// One object's fresh copies, explicit ones first and each kind by tier then part.
fn decide(mut group: Vec<Candidate>, held: Option<&KeptKey>, out: &mut Resolution) {
    let explicit = group.iter().take_while(|c| !c.object.implicit).count();
    if explicit > 0 {
        // A deployed Namespace makes the implicit copies needless.
        group.truncate(explicit);
    } else if held.is_some() {
        return;
    } else {
        group.truncate(1);
    }
    let lowest = group[0].tier;
    if let Some(held) = held.filter(|h| h.tier <= lowest) {
        for loser in group {
            out.warnings.push(format!(
                "{}: {} (tier {}) keeps the copy it was deployed with; {} (tier {}) drops its own",
                loser.object.key, held.part, held.tier, loser.part, loser.tier
            ));
        }
        return;
    }
    let tied = group.iter().take_while(|c| c.tier == lowest).count();
    if tied > 1 {
        out.ties.push(Tie { key: group[0].object.key.clone(), tier: lowest, copies: group.drain(..tied).collect() });
        return;
    }
    let mut group = group.into_iter();
    let winner = group.next().expect("a group has a first copy");
    for loser in group {
        out.warnings.push(format!(
            "{}: {} (tier {}) wins over {} (tier {}), whose copy is dropped",
            winner.object.key, winner.part, winner.tier, loser.part, loser.tier
        ));
    }
    out.kept.push(winner);
}

#[cfg(test)]
mod tests {
    use super::*;

    fn candidate(part: &str, tier: u32, name: &str) -> Candidate {
        let key = ObjectKey::new("v1", "ConfigMap", "apps", name);
        let object =
            Object { key, origin: format!("{part} key k"), yaml: format!("name: {name}\n").into(), implicit: false, confidential: false };
        Candidate { part: part.into(), tier, object: Arc::new(object) }
    }

    fn namespace(part: &str, tier: u32, implicit: bool) -> Candidate {
        let key = ObjectKey::new("v1", "Namespace", "", "apps");
        let object = Object { key, origin: format!("{part} ns"), yaml: "kind: Namespace\n".into(), implicit, confidential: false };
        Candidate { part: part.into(), tier, object: Arc::new(object) }
    }

    fn names(r: &Resolution) -> Vec<(&str, &str)> {
        r.kept.iter().map(|c| (&*c.part, c.object.key.name.as_str())).collect()
    }

    #[test]
    fn lower_tier_wins_and_the_loser_is_reported() {
        let r = resolve(
            vec![
                candidate("ClusterProfile.a", 100, "shared"),
                candidate("ClusterProfile.b", 50, "shared"),
                candidate("ClusterProfile.a", 100, "only-a"),
                candidate("ClusterProfile.c", 200, "shared"),
            ],
            &[],
        );
        assert_eq!(names(&r), [("ClusterProfile.a", "only-a"), ("ClusterProfile.b", "shared")]);
        assert_eq!(r.warnings.len(), 2, "{:?}", r.warnings);
        assert!(r.warnings.iter().all(|w| w.contains("ClusterProfile.b (tier 50) wins")), "{:?}", r.warnings);
        assert!(r.ties.is_empty());
    }

    #[test]
    fn a_tie_at_the_lowest_tier_is_left_to_the_caller() {
        let r = resolve(
            vec![
                candidate("ClusterProfile.a", 100, "shared"),
                candidate("ClusterProfile.b", 100, "shared"),
                candidate("ClusterProfile.c", 300, "shared"),
            ],
            &[],
        );
        assert!(r.kept.is_empty());
        let [tie] = &r.ties[..] else { panic!("{:?}", r.ties) };
        assert_eq!((tie.key.name.as_str(), tie.tier), ("shared", 100));
        assert_eq!(tie.copies.iter().map(|c| &*c.part).collect::<Vec<_>>(), ["ClusterProfile.a", "ClusterProfile.b"]);
    }

    #[test]
    fn a_namespace_left_out_is_default_for_the_tier_check() {
        let in_ns = |part: &str, tier: u32, namespace: &str| {
            let key = ObjectKey::new("v1", "ConfigMap", namespace, "shared");
            let object =
                Object { key, origin: format!("{part} key k"), yaml: "name: shared\n".into(), implicit: false, confidential: false };
            Candidate { part: part.into(), tier, object: Arc::new(object) }
        };
        let r = resolve(
            vec![in_ns("ClusterProfile.a", 100, ""), in_ns("ClusterProfile.b", 50, "default"), in_ns("ClusterProfile.c", 100, "apps")],
            &[],
        );
        assert_eq!(names(&r), [("ClusterProfile.c", "shared"), ("ClusterProfile.b", "shared")], "apps is another object");
        assert!(r.warnings[0].contains("ClusterProfile.b (tier 50) wins"), "{:?}", r.warnings);
        let r = resolve(vec![in_ns("ClusterProfile.a", 100, ""), in_ns("ClusterProfile.b", 100, "default")], &[]);
        assert_eq!(r.ties.len(), 1, "the same object at the same tier is a tie");
    }

    #[test]
    fn kept_content_wins_a_tie_and_loses_to_a_lower_tier() {
        let kept = [KeptKey { part: "ClusterProfile.a".into(), tier: 100, key: ObjectKey::new("v1", "ConfigMap", "apps", "shared") }];
        let r = resolve(vec![candidate("ClusterProfile.b", 100, "shared")], &kept);
        assert!(r.kept.is_empty() && r.ties.is_empty());
        assert!(r.warnings[0].contains("ClusterProfile.a (tier 100) keeps the copy"), "{:?}", r.warnings);
        let r = resolve(vec![candidate("ClusterProfile.b", 10, "shared")], &kept);
        assert_eq!(names(&r), [("ClusterProfile.b", "shared")]);
    }

    #[test]
    fn implicit_namespaces_give_way_and_are_kept_once() {
        let r = resolve(vec![namespace("ClusterProfile.a", 100, true), namespace("ClusterProfile.b", 100, true)], &[]);
        assert_eq!(names(&r), [("ClusterProfile.a", "apps")]);
        assert!(r.warnings.is_empty() && r.ties.is_empty());
        let r = resolve(vec![namespace("ClusterProfile.a", 10, true), namespace("ClusterProfile.b", 100, false)], &[]);
        assert_eq!(names(&r), [("ClusterProfile.b", "apps")]);
        assert!(r.kept[0].object.implicit.eq(&false) && r.warnings.is_empty());
    }
}
