//! Building a cluster's bundle from its prepared parts: fresh parts from this render, held
//! parts with the content the store gave (`hold`; a withdrawn part given none is left
//! out), the relayed credentials, one copy of every object (`tier`), each part's
//! settings, and the confidential files sealed (`seal`). Entry point: [`assemble`].

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::statement::RenderFailure;
use airlock_bundle::{Bundle, Limits, Part, PartSettings};

use super::credentials;
use super::error::RenderError;
use super::hold::{KeptContent, Plan, Reason};
use super::manifest::file_path;
use super::object::Object;
use super::prepared::part_of;
use super::seal::{self, Seal, Sealing};
use super::tier::{self, Candidate, KeptKey};
use super::{Failure, PreparedCluster, Rendered};
use crate::sources::ObjectKey;

/// What assembling came to.
#[derive(Debug)]
pub enum Assembly {
    Done(Box<Rendered>),
    /// Two parts deploy one object at one tier, and who keeps it depends on the store:
    /// assemble again with a [`Plan`] from `hold::plan`.
    Ties,
}

/// Assembles `prepared` as `plan` decided, with the content of the held parts in `kept`.
/// With `decided`, ties left (there should be none) go to the first part by name.
pub fn assemble(
    prepared: &PreparedCluster,
    plan: &Plan,
    kept: &BTreeMap<String, KeptContent>,
    decided: bool,
    sealing: Option<&Sealing>,
    limits: &Limits,
) -> Result<Assembly, RenderError> {
    let mut warnings = prepared.warnings.clone();
    let mut candidates = Vec::new();
    let mut kept_keys = Vec::new();
    let mut settings: BTreeMap<String, PartSettings> = BTreeMap::new();
    let mut failures = Vec::new();
    for draft in &prepared.parts {
        if plan.held.contains_key(&*draft.name) {
            continue;
        }
        let prepared_part = draft.outcome.as_ref().expect("a part not held rendered");
        warnings.extend(prepared_part.warnings.iter().cloned());
        let drops = plan.drops.get(&*draft.name);
        for o in &prepared_part.objects {
            match drops {
                Some(d) if d.contains(&o.key) => warnings.push(format!(
                    "{}: {} drops {} (continueOnConflict): another profile deploys it at the same tier, or manages its Helm release",
                    draft.display, draft.name, o.key
                )),
                _ => candidates.push(Candidate { part: draft.name.clone(), tier: draft.settings.tier, object: o.clone() }),
            }
        }
        let mut s = draft.settings.clone();
        s.rendered = prepared_part.clock.clone();
        s.notes.extend(prepared_part.notes.iter().cloned());
        s.notes.extend(plan.notes.get(&*draft.name).into_iter().flatten().cloned());
        settings.insert(draft.name.to_string(), s);
    }
    for (name, held) in &plan.held {
        let content = held.stored.as_ref().and_then(|_| kept.get(name));
        if held.reason == Reason::Withdrawn && content.is_none() {
            continue;
        }
        let part: Arc<str> = name.as_str().into();
        // A withdrawn release's hooks give way to any part that deploys them now (the
        // release moved to another profile): they never hold another part back.
        if let Some(content) = content.filter(|_| held.reason != Reason::Withdrawn) {
            kept_keys.extend(content.keys.iter().map(|key| KeptKey { part: part.clone(), tier: held.settings.tier, key: key.clone() }));
        }
        let mut s = held.settings.clone();
        if let Reason::Failed(message) | Reason::HeldBack(message) = &held.reason {
            s.failure = Some(RenderFailure { message: message.clone(), kept_from: content.map(|c| c.kept_from) });
            // A part held back is the rollout working: a warning for the run, not a failure.
            match held.reason {
                Reason::Failed(_) => failures.push(Failure { part: name.clone(), message: message.clone() }),
                _ => warnings.push(format!("{name}: {message}")),
            }
        }
        settings.insert(name.clone(), s);
    }
    // A carried hook gives way to any part that deploys it now. Most clusters carry none,
    // and collecting the keys of all their objects cost every cluster a sort of them.
    let deployed: BTreeSet<&ObjectKey> =
        if plan.carried.is_empty() { BTreeSet::new() } else { candidates.iter().map(|c| &c.object.key).collect() };
    let mut hooks = Vec::new();
    for (name, objects) in &plan.carried {
        let Some(s) = settings.get(name).filter(|_| !plan.held.contains_key(name)) else { continue };
        let part: Arc<str> = name.as_str().into();
        let left = objects.iter().filter(|o| !deployed.contains(&o.key));
        hooks.extend(left.map(|o| Candidate { part: part.clone(), tier: s.tier, object: o.clone() }));
    }
    candidates.extend(hooks);
    if let Some(object) = &prepared.credentials {
        candidates.push(Candidate { part: credentials::SYSTEM_PART.into(), tier: credentials::SYSTEM_TIER, object: object.clone() });
        settings.insert(credentials::SYSTEM_PART.into(), credentials::part_settings());
    }
    kept_keys.sort_by(|a, b| a.key.cmp(&b.key));
    let mut resolution = tier::resolve(candidates, &kept_keys);
    if !resolution.ties.is_empty() {
        if !decided {
            return Ok(Assembly::Ties);
        }
        for tie in std::mem::take(&mut resolution.ties) {
            resolution.kept.push(tie.copies.into_iter().next().expect("a tie has copies"));
        }
    }
    warnings.extend(resolution.warnings);
    let objects = resolution.kept.len() + kept_keys.len();
    let mut by_part: BTreeMap<Arc<str>, Vec<Arc<Object>>> = BTreeMap::new();
    for c in resolution.kept {
        by_part.entry(c.part).or_default().push(c.object);
    }
    let mut carried = BTreeMap::new();
    for (name, _) in plan.held.iter().filter(|(_, h)| h.reason == Reason::Withdrawn) {
        let Some(content) = kept.get(name) else { continue };
        let fresh: BTreeSet<String> = by_part.values().flatten().map(|o| file_path(name, &o.key)).collect();
        let files: Vec<_> = content
            .part
            .files()
            .filter(|(path, _)| !fresh.contains(*path))
            .map(|(p, b)| (p.to_string(), b.to_vec().into(), content.part.plaintext(p).cloned()))
            .collect();
        if files.is_empty() {
            settings.remove(name);
        } else {
            carried.insert(name.clone(), Part::sealed(name, files, limits)?);
        }
    }
    let present: BTreeSet<String> = settings.keys().cloned().collect();
    for s in settings.values_mut() {
        s.depends_on.retain(|d| present.contains(d));
    }
    check_acyclic(&settings)?;
    let mut built = Vec::with_capacity(settings.len());
    // The files of fresh parts that hold a confidential object, for a cluster that decrypts.
    let mut marked: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for name in settings.keys() {
        let part = match (plan.held.get(name), kept.get(name)) {
            (Some(held), Some(_)) if held.reason == Reason::Withdrawn => carried.remove(name).expect("a carried part was built"),
            (Some(held), Some(content)) if held.stored.is_some() => content.part.clone(),
            (Some(_), _) => Part::new(name, Vec::<(String, Vec<u8>)>::new(), limits)?,
            (None, _) => {
                let objects = by_part.remove(name.as_str()).unwrap_or_default();
                if prepared.recipient.is_some() {
                    let paths = objects.iter().filter(|o| o.confidential).map(|o| file_path(name, &o.key));
                    marked.insert(name.clone(), paths.collect());
                }
                match prepared.parts.iter().find(|d| &*d.name == name).and_then(|d| d.outcome.as_ref().ok()) {
                    // Nothing of the profile lost to another's copy: its part is the one every
                    // cluster it is prepared for shares.
                    Some(p) if p.objects.len() == objects.len() => p.part(name, limits)?,
                    _ => part_of(name, objects.iter().map(|o| &**o), limits)?,
                }
            }
        };
        built.push((name.clone(), part));
    }
    let to = Seal { cluster: &prepared.cluster, recipient: prepared.recipient, allow_clear: prepared.allow_plaintext_secrets, sealing };
    let sealed = seal::seal(&to, built, &marked, kept, limits)?;
    let bundle = Bundle::from_parts(sealed.parts, limits)?;
    Ok(Assembly::Done(Box::new(Rendered {
        cluster: prepared.cluster.clone(),
        watch_namespaces: prepared.watch_namespaces.clone(),
        active_window: prepared.active_window.clone(),
        recipients: sealed.recipients,
        allow_plaintext_secrets: prepared.allow_plaintext_secrets,
        allow_mass_prune: prepared.allow_mass_prune,
        cluster_scoped: prepared.cluster_scoped.clone(),
        evaluations: prepared.evaluations.clone(),
        bundle,
        settings,
        objects,
        warnings,
        failures,
    })))
}

/// Refuses a dependsOn cycle, which every puller would reject (spec 8.6).
fn check_acyclic(settings: &BTreeMap<String, PartSettings>) -> Result<(), RenderError> {
    // Kahn's algorithm: whatever cannot be ordered lies on or behind a cycle.
    let mut waiting: BTreeMap<&str, usize> = settings.iter().map(|(p, s)| (p.as_str(), s.depends_on.len())).collect();
    let mut ready: Vec<&str> = waiting.iter().filter(|(_, n)| **n == 0).map(|(p, _)| *p).collect();
    while let Some(done) = ready.pop() {
        waiting.remove(done);
        for (part, s) in settings {
            if s.depends_on.iter().any(|d| d == done)
                && let Some(n) = waiting.get_mut(part.as_str())
            {
                *n -= 1;
                if *n == 0 {
                    ready.push(part);
                }
            }
        }
    }
    match waiting.keys().next() {
        Some(part) => Err(RenderError::DependencyCycle { part: part.to_string() }),
        None => Ok(()),
    }
}
