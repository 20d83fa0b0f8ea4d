//! Which parts of a cluster's bundle come from the store instead of this render, and what
//! happens to the objects two profiles both deploy at one tier. Entry point: [`plan`],
//! pure: it reads the store's current statement (as `publish` fetched and verified it)
//! and decides; `publish` then fetches the parts it names and `assemble` builds.
//!
//! A part is held, kept as the store has it (or left empty with the failure when the
//! store has nothing of it), when its profile:
//! - failed to render for this cluster (its part carries the failure);
//! - lost a tie without `continueOnConflict` (Sveltos's conflict error);
//! - depends on a part the bundle will not carry content of (a prerequisite that does
//!   not exist or never rendered): Sveltos holds the dependent back;
//! - cannot be read at all, or sits where the source could not be read: every cluster
//!   keeps what it holds of it, with the failure;
//! - is paused: every cluster keeps what it holds, as it is, and no other gets it;
//! - is held back by its `maxUpdate` for this cluster (`publish::rollout` decides): the
//!   part carries why, like a failure, but the run does not count it as one;
//! - no longer deploys to the cluster and withdraws what it deployed: the part is fetched
//!   so that `publish::withdraw` can carry its releases' delete hooks, or drop it.
//!
//! A tie is won by the part whose stored bundle holds the object (Sveltos lets the first
//! deployer keep it), else by the first part by name; a loser with `continueOnConflict`
//! publishes without the object, one without it is held with a conflict failure. A Helm
//! release two parts deploy goes whole to one of them first (`releases`).

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::statement::{FieldNote, ProfileEntry, Statement, StopMatchingBehavior};
use airlock_bundle::{Part, PartSettings};

use super::manifest::file_path;
use super::object::Object;
use super::tier::{self, Candidate};
use super::{PartDraft, PreparedCluster};
use crate::sources::{Inventory, ObjectKey, Touches};

pub mod releases;

/// The content of a held part, as fetched from the store.
#[derive(Debug, Clone)]
pub struct KeptContent {
    pub part: Part,
    /// Its objects, read back from its files.
    pub keys: Vec<ObjectKey>,
    /// The version whose content this is.
    pub kept_from: u64,
    /// The recipients its encrypted files are encrypted to, as the stored statement lists
    /// them; `None` when it has none.
    pub recipients: Option<Vec<String>>,
}

/// What a run could not plan: profiles that cannot be read or are paused, and whether some
/// of the source could not be attributed to anything.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Unplanned {
    /// Part name → why its profile cannot be read.
    pub broken: BTreeMap<String, String>,
    pub paused: BTreeSet<String>,
    /// Why some of the source could not be read and may have held any profile.
    pub unattributed: Option<String>,
}

impl Unplanned {
    pub fn of(inventory: &Inventory) -> Unplanned {
        let mut out = Unplanned::default();
        for b in &inventory.broken {
            match &b.what {
                Touches::Profile { part, .. } => {
                    out.broken.entry(part.clone()).or_insert_with(|| b.to_string());
                }
                Touches::Unknown => {
                    out.unattributed.get_or_insert_with(|| format!("the source could not be read in full ({b})"));
                }
                Touches::Cluster(_) | Touches::Object(_) => {}
            }
        }
        out.paused = inventory.profiles.iter().filter(|p| p.paused).map(|p| p.part_name()).collect();
        out
    }

    /// Whether a stored part that this render did not plan is to be held.
    pub fn holds(&self, part: &str) -> bool {
        part != crate::render::credentials::SYSTEM_PART
            && (self.unattributed.is_some() || self.broken.contains_key(part) || self.paused.contains(part))
    }

    /// What goes into the fingerprint of every cluster's inputs.
    pub fn fingerprint(&self) -> String {
        format!("{self:?}")
    }
}

/// Why a part is held.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reason {
    /// The failure the part carries; `None` for a paused profile, kept as it was.
    Failed(String),
    Paused,
    /// The new version waits for other clusters' updates (`maxUpdate`): why.
    HeldBack(String),
    /// The profile no longer deploys to the cluster and withdraws what it deployed: the
    /// part carries its releases' delete hooks alone (`publish::withdraw`), or goes.
    Withdrawn,
}

/// A held part: why, and the settings its entry starts from.
#[derive(Debug, Clone, PartialEq)]
pub struct Held {
    pub reason: Reason,
    pub settings: PartSettings,
    /// Its stored entry, when the store holds content of it.
    pub stored: Option<ProfileEntry>,
}

/// What [`plan`] decided.
#[derive(Debug, Default)]
pub struct Plan {
    pub held: BTreeMap<String, Held>,
    /// Fresh copies a part drops, having lost a tie or a Helm release with
    /// `continueOnConflict`.
    pub drops: BTreeMap<String, BTreeSet<ObjectKey>>,
    /// Notes a fresh part carries beside its profile's: the releases it lost.
    pub notes: BTreeMap<String, Vec<FieldNote>>,
    /// Objects a fresh part carries from the store beside its own: the delete hooks of
    /// releases it no longer deploys (`publish::withdraw`).
    pub carried: BTreeMap<String, Vec<Arc<Object>>>,
}

impl Plan {
    /// The held parts whose content is to be fetched from the store.
    pub fn to_fetch(&self) -> Vec<&ProfileEntry> {
        self.held.values().filter_map(|h| h.stored.as_ref()).collect()
    }
}

/// The settings a stored entry carries, besides its identity.
pub fn stored_settings(entry: &ProfileEntry) -> PartSettings {
    PartSettings {
        sync_mode: entry.sync_mode,
        tier: entry.tier,
        depends_on: entry.depends_on.clone(),
        stop_matching_behavior: entry.stop_matching_behavior,
        force_conflicts: entry.force_conflicts,
        continue_on_error: entry.continue_on_error,
        max_consecutive_failures: entry.max_consecutive_failures,
        drift_exclusions: entry.drift_exclusions.clone(),
        reloader: entry.reloader,
        checks: entry.checks.clone(),
        notes: entry.notes.clone(),
        failure: entry.failure.clone(),
        rendered: entry.rendered.clone(),
        service_account: entry.service_account.clone(),
    }
}

/// Whether a stored part of a profile that no longer deploys here may hold delete hooks to
/// carry: its profile withdraws what it deployed (Sveltos leaves it all, releases
/// included, with `LeavePolicies`).
pub fn withdraws(entry: &ProfileEntry) -> bool {
    entry.stop_matching_behavior == StopMatchingBehavior::WithdrawPolicies && entry.name != crate::render::credentials::SYSTEM_PART
}

/// Whether a stored entry has content to keep: not a part that never rendered.
fn has_content(entry: &ProfileEntry) -> bool {
    entry.failure.as_ref().is_none_or(|f| f.kept_from.is_some())
}

/// Decides the held parts and tie losers of `prepared`, given the store's current
/// statement (`None` when it holds nothing usable), the parts whose content could not
/// be fetched (`unavailable`) and those `maxUpdate` holds back (part → why).
pub fn plan(
    prepared: &PreparedCluster,
    stored: Option<&Statement>,
    unplanned: &Unplanned,
    unavailable: &BTreeSet<String>,
    held_back: &BTreeMap<String, String>,
) -> Plan {
    let entry = |part: &str| {
        stored
            .and_then(|s| s.predicate.profiles.iter().find(|p| p.name == part))
            .filter(|e| has_content(e) && !unavailable.contains(&e.name))
    };
    let mut plan = Plan::default();
    let hold = |plan: &mut Plan, draft: &PartDraft, failure: String| {
        let settings = draft.settings.clone();
        plan.held.insert(draft.name.to_string(), Held { reason: Reason::Failed(failure), settings, stored: entry(&draft.name).cloned() });
    };
    for draft in &prepared.parts {
        match (&draft.outcome, held_back.get(&*draft.name)) {
            (Err(failure), _) => hold(&mut plan, draft, failure.clone()),
            (Ok(_), Some(why)) => {
                let (reason, settings, stored) = (Reason::HeldBack(why.clone()), draft.settings.clone(), entry(&draft.name).cloned());
                plan.held.insert(draft.name.to_string(), Held { reason, settings, stored });
            }
            (Ok(_), None) => {}
        }
    }
    let planned: BTreeSet<&str> = prepared.parts.iter().map(|d| &*d.name).collect();
    for e in stored.map(|s| s.predicate.profiles.as_slice()).unwrap_or_default() {
        if planned.contains(e.name.as_str()) || !has_content(e) || unavailable.contains(&e.name) {
            continue;
        }
        if !unplanned.holds(&e.name) {
            if withdraws(e) {
                let settings = PartSettings { failure: None, ..stored_settings(e) };
                plan.held.insert(e.name.clone(), Held { reason: Reason::Withdrawn, settings, stored: Some(e.clone()) });
            }
            continue;
        }
        let reason = match (unplanned.paused.contains(&e.name), unplanned.broken.get(&e.name), &unplanned.unattributed) {
            (true, _, _) => Reason::Paused,
            (false, Some(why), _) | (false, None, Some(why)) => Reason::Failed(why.clone()),
            (false, None, None) => continue,
        };
        plan.held.insert(e.name.clone(), Held { reason, settings: stored_settings(e), stored: Some(e.clone()) });
    }
    releases::decide(prepared, stored, &mut plan, &hold);
    decide_ties(prepared, stored, &mut plan, &hold);
    hold_dependents(prepared, &mut plan, &hold);
    plan
}

/// Decides every tie between fresh copies, holding or trimming the losers, until none is
/// left (a held loser's other objects leave the running too).
fn decide_ties(prepared: &PreparedCluster, stored: Option<&Statement>, plan: &mut Plan, hold: &dyn Fn(&mut Plan, &PartDraft, String)) {
    let holds_it = |part: &str, key: &ObjectKey| {
        let path = file_path(part, key);
        stored.is_some_and(|s| s.predicate.files.binary_search_by(|f| f.path.as_str().cmp(&path)).is_ok())
    };
    loop {
        let candidates: Vec<Candidate> = prepared
            .parts
            .iter()
            .filter(|d| !plan.held.contains_key(&*d.name))
            .filter_map(|d| d.outcome.as_ref().ok().map(|p| (d, p)))
            .flat_map(|(d, p)| {
                let drops = plan.drops.get(&*d.name);
                p.objects.iter().filter(move |o| drops.is_none_or(|k| !k.contains(&o.key))).map(|o| Candidate {
                    part: d.name.clone(),
                    tier: d.settings.tier,
                    object: o.clone(),
                })
            })
            .collect();
        let ties = tier::resolve(candidates, &[]).ties;
        let Some(tie) = ties.into_iter().next() else { return };
        let holders: Vec<&Arc<str>> = tie.copies.iter().map(|c| &c.part).filter(|p| holds_it(p, &tie.key)).collect();
        let winner = match holders[..] {
            [one] => one.clone(),
            _ => tie.copies[0].part.clone(),
        };
        for loser in tie.copies.iter().filter(|c| c.part != winner) {
            let draft = prepared.parts.iter().find(|d| d.name == loser.part).expect("a tied part is planned");
            if draft.continue_on_conflict {
                plan.drops.entry(draft.name.to_string()).or_default().insert(tie.key.clone());
            } else {
                let message = format!(
                    "conflict: {} is deployed at tier {} by {} too, which keeps it (Sveltos lets the first deployer keep an object); give one of them a lower tier, or set continueOnConflict to publish the rest without it",
                    tie.key, tie.tier, winner
                );
                hold(plan, draft, message);
            }
        }
    }
}

/// Holds every part one of whose prerequisites the bundle will carry nothing of.
fn hold_dependents(prepared: &PreparedCluster, plan: &mut Plan, hold: &dyn Fn(&mut Plan, &PartDraft, String)) {
    loop {
        let present = |part: &str| match plan.held.get(part) {
            Some(held) => held.stored.is_some(),
            None => prepared.parts.iter().any(|d| &*d.name == part),
        };
        let blocked = prepared
            .parts
            .iter()
            .filter(|d| !plan.held.contains_key(&*d.name))
            .find_map(|d| d.settings.depends_on.iter().find(|p| !present(p)).map(|p| (d, p.clone())));
        let Some((draft, prerequisite)) = blocked else { return };
        let why = match plan.held.get(&prerequisite) {
            Some(_) => "failed and never rendered for this cluster",
            None => "is not deployed to this cluster",
        };
        hold(plan, draft, format!("prerequisite {prerequisite} {why}; Sveltos holds its dependents back"));
    }
}
