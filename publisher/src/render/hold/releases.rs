//! Helm releases two profiles deploy to one cluster: the release, not the object, is what
//! one profile owns, as addon-controller's chart manager decides (`determineChartOwnership`,
//! `chartmanager.CanManageChart`). Entry point: [`decide`], called by `hold::plan`.
//!
//! A release is its namespace and name, as the entries render them for the cluster. Of
//! the profiles whose parts render it, the lowest tier wins (a claimant takes a release
//! over only with a strictly lower tier, libsveltos `HasHigherOwnershipPriority`); among
//! several at that tier the one managing it keeps it, which here is the part the store
//! holds the release's objects in; else the first part by name stands for the first to
//! register. Every other claimant cannot manage the release, whatever its tier: Sveltos
//! fails its Helm feature with a conflict ("cannot manage chart ns/name"). Such a part is
//! held, keeping its last good content, with that failure; with `continueOnConflict` it
//! is published without any of the release's objects (hooks and CRDs included) and says
//! which profile manages the release in a note.

use std::collections::{BTreeMap, BTreeSet};

use airlock_bundle::statement::{FieldNote, Statement, Support};

use crate::render::hold::Plan;
use crate::render::manifest::file_path;
use crate::render::{PartDraft, PreparedCluster};
use crate::sources::ObjectKey;

/// A Helm release one part deploys.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claim {
    pub namespace: String,
    pub name: String,
    /// The entry that deploys it: `spec.helmCharts[0]`.
    pub field: String,
    /// Its objects in the part: CRDs, objects and hooks.
    pub objects: BTreeSet<ObjectKey>,
}

/// The parts not held that claim a release, in part order, each with its claim.
fn claimants<'p>(prepared: &'p PreparedCluster, plan: &Plan, lost: &BTreeSet<(String, (String, String))>) -> Contest<'p> {
    let mut out: Contest<'p> = BTreeMap::new();
    for draft in prepared.parts.iter().filter(|d| !plan.held.contains_key(&*d.name)) {
        let Ok(prepared) = &draft.outcome else { continue };
        for claim in &prepared.releases {
            let release = (claim.namespace.clone(), claim.name.clone());
            let claims = out.entry(release.clone()).or_default();
            // Two entries of one profile with one release contest nothing with each other.
            if !lost.contains(&(draft.name.to_string(), release)) && !claims.iter().any(|(d, _)| d.name == draft.name) {
                claims.push((draft, claim));
            }
        }
    }
    out
}

type Contest<'p> = BTreeMap<(String, String), Vec<(&'p PartDraft, &'p Claim)>>;

/// Whether two parts of `prepared` render one release: who keeps it depends on the store.
pub fn contested(prepared: &PreparedCluster) -> bool {
    let mut claimed: BTreeMap<(&str, &str), &str> = BTreeMap::new();
    let parts = prepared.parts.iter().filter_map(|d| d.outcome.as_ref().ok().map(|p| (&*d.name, p)));
    let claims = parts.flat_map(|(part, p)| p.releases.iter().map(move |c| (part, c)));
    claims.into_iter().any(|(part, c)| *claimed.entry((&c.namespace, &c.name)).or_insert(part) != part)
}

/// Gives every release two parts render to one of them, holding or trimming the others,
/// until no release is claimed twice (a held part's other releases leave the contest).
pub fn decide(prepared: &PreparedCluster, stored: Option<&Statement>, plan: &mut Plan, hold: &dyn Fn(&mut Plan, &PartDraft, String)) {
    let holds_it = |part: &str, claim: &Claim| {
        stored.is_some_and(|s| {
            claim.objects.iter().any(|key| {
                let path = file_path(part, key);
                s.predicate.files.binary_search_by(|f| f.path.as_str().cmp(&path)).is_ok()
            })
        })
    };
    let mut lost = BTreeSet::new();
    loop {
        let contest = claimants(prepared, plan, &lost);
        let Some(((namespace, name), claims)) = contest.into_iter().find(|(_, claims)| claims.len() > 1) else { return };
        let lowest = claims.iter().map(|(d, _)| d.settings.tier).min().expect("a contested release has claimants");
        let at_lowest: Vec<_> = claims.iter().filter(|(d, _)| d.settings.tier == lowest).collect();
        let (winner, _) = at_lowest.iter().find(|(d, c)| holds_it(&d.name, c)).unwrap_or(&at_lowest[0]);
        let winner = *winner;
        for (loser, claim) in claims.iter().filter(|(d, _)| d.name != winner.name) {
            let manager = format!("{} (tier {})", winner.display, winner.settings.tier);
            if loser.continue_on_conflict {
                plan.drops.entry(loser.name.to_string()).or_default().extend(claim.objects.iter().cloned());
                plan.notes.entry(loser.name.to_string()).or_default().push(FieldNote {
                    field: claim.field.clone(),
                    support: Support::NotSupported,
                    detail: format!(
                        "Helm release {namespace}/{name} is managed by {manager}: none of it is published here (continueOnConflict); Sveltos reports the conflict as a failure of the profile's Helm charts"
                    ),
                });
                lost.insert((loser.name.to_string(), (namespace.clone(), name.clone())));
            } else {
                let message = format!(
                    "conflict: {}: cannot manage Helm release {namespace}/{name}, which {manager} manages (Sveltos gives a release to one profile: the lower tier, else the one managing it); give this profile a lower tier, or set continueOnConflict to publish the rest without the release",
                    claim.field
                );
                hold(plan, loser, message);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use airlock_bundle::PartSettings;
    use airlock_bundle::sign::{self, PartDigests};
    use airlock_bundle::statement::DEFAULT_TIER;
    use airlock_bundle::testkit::Fixture;

    use super::*;
    use crate::render::hold::{self, Reason, Unplanned};
    use crate::render::object::Object;
    use crate::render::prepared::Prepared;
    use crate::sources::parse::parse_cluster;

    /// An object of a part.
    fn object(name: &str) -> Arc<Object> {
        let key = ObjectKey::new("v1", "ConfigMap", "apps", name);
        Arc::new(Object { key, origin: name.into(), yaml: format!("name: {name}\n").into(), implicit: false, confidential: false })
    }

    /// A part at `tier` rendering release apps/web (the objects `cm` and the hook `test`)
    /// beside its own ConfigMap `own-<name>`.
    fn part(name: &str, tier: u32, continue_on_conflict: bool) -> PartDraft {
        let claim = Claim {
            namespace: "apps".into(),
            name: "web".into(),
            field: "spec.helmCharts[0]".into(),
            objects: ["cm", "test"].iter().map(|n| ObjectKey::new("v1", "ConfigMap", "apps", n)).collect(),
        };
        let objects = vec![object("cm"), object("test"), object(&format!("own-{name}"))];
        PartDraft {
            name: format!("ClusterProfile.{name}").into(),
            display: format!("ClusterProfile/{name}"),
            settings: PartSettings { tier, ..PartSettings::default() },
            continue_on_conflict,
            outcome: Ok(Arc::new(Prepared::of_objects(objects, vec![claim]))),
        }
    }

    fn cluster(parts: Vec<PartDraft>) -> PreparedCluster {
        let sveltos = parse_cluster(&serde_json::json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge", "namespace": "fleet"}, "spec": {"pullMode": true}}))
        .unwrap();
        PreparedCluster {
            cluster: sveltos.id.clone(),
            watch_namespaces: None,
            active_window: None,
            recipient: None,
            allow_plaintext_secrets: false,
            allow_mass_prune: false,
            cluster_scoped: Vec::new(),
            evaluations: Vec::new(),
            parts,
            credentials: None,
            warnings: Vec::new(),
        }
    }

    /// The store's statement of a bundle whose part `part` holds the file `path`.
    fn holding(path: &str) -> Statement {
        let bundle = Fixture::bundle(vec![(path.to_string(), b"name: test\n".to_vec())]);
        sign::statement(&bundle, &Fixture::new(1).release(3), &|_| PartSettings::default(), &PartDigests::default())
    }

    fn decided(prepared: &PreparedCluster, stored: Option<&Statement>) -> hold::Plan {
        hold::plan(prepared, stored, &Unplanned::default(), &BTreeSet::new(), &BTreeMap::new())
    }

    fn failure(plan: &hold::Plan, part: &str) -> String {
        match &plan.held[part].reason {
            Reason::Failed(message) => message.clone(),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn the_lower_tier_gets_the_whole_release_and_the_other_fails() {
        let prepared = cluster(vec![part("a", DEFAULT_TIER, false), part("b", 50, false)]);
        assert!(prepared.needs_store(), "who loses a release is held, with its content from the store");
        let plan = decided(&prepared, None);
        assert!(!plan.held.contains_key("ClusterProfile.b"));
        let why = failure(&plan, "ClusterProfile.a");
        assert!(why.contains("spec.helmCharts[0]: cannot manage Helm release apps/web, which ClusterProfile/b (tier 50) manages"), "{why}");
    }

    #[test]
    fn with_continue_on_conflict_the_loser_drops_every_object_of_the_release_hooks_included() {
        let prepared = cluster(vec![part("a", 50, false), part("b", DEFAULT_TIER, true)]);
        let plan = decided(&prepared, None);
        assert!(plan.held.is_empty(), "{:?}", plan.held);
        let dropped: Vec<&str> = plan.drops["ClusterProfile.b"].iter().map(|k| k.name.as_str()).collect();
        assert_eq!(dropped, ["cm", "test"], "its own object stays");
        let [note] = &plan.notes["ClusterProfile.b"][..] else { panic!("{:?}", plan.notes) };
        assert_eq!(note.field, "spec.helmCharts[0]");
        assert!(note.detail.contains("apps/web is managed by ClusterProfile/a (tier 50)"), "{}", note.detail);
    }

    #[test]
    fn two_entries_of_one_profile_with_one_release_contest_nothing() {
        let mut twice = part("a", DEFAULT_TIER, false);
        let Ok(prepared) = &twice.outcome else { unreachable!() };
        let claims = vec![prepared.releases[0].clone(), Claim { field: "spec.helmCharts[1]".into(), ..prepared.releases[0].clone() }];
        twice.outcome = Ok(Arc::new(Prepared::of_objects(prepared.objects.clone(), claims)));
        let prepared = cluster(vec![twice]);
        assert!(!contested(&prepared));
        let plan = decided(&prepared, None);
        assert!(plan.held.is_empty() && plan.drops.is_empty(), "{:?}", plan.held);
    }

    #[test]
    fn at_one_tier_the_part_managing_the_release_keeps_it_else_the_first_by_name() {
        let prepared = cluster(vec![part("a", DEFAULT_TIER, false), part("b", DEFAULT_TIER, false)]);
        let why = failure(&decided(&prepared, None), "ClusterProfile.b");
        assert!(why.contains("which ClusterProfile/a (tier 100) manages"), "{why}");

        let statement = holding("ClusterProfile.b/ConfigMap.apps.test.yaml");
        let why = failure(&decided(&prepared, Some(&statement)), "ClusterProfile.a");
        assert!(why.contains("which ClusterProfile/b (tier 100) manages"), "the current manager keeps it: {why}");

        let lower = cluster(vec![part("a", 10, false), part("b", DEFAULT_TIER, false)]);
        let why = failure(&decided(&lower, Some(&statement)), "ClusterProfile.b");
        assert!(why.contains("which ClusterProfile/a (tier 10) manages"), "a lower tier takes it over: {why}");
    }
}
