//! Step 6 of spec section 8: everything a statement says must agree with itself (one
//! subject, fields in range, files in order within their parts, sizes that add up, an
//! acyclic dependsOn) before any of it is believed. Returns the bundle digest the file list
//! makes; whether it is the puller's bundle is `claims`' business.

use std::collections::{BTreeMap, BTreeSet};

use super::error::VerifyError;
use super::{sealing, settings};
use crate::cluster::ClusterId;
use crate::content::{ContentError, bundle_digest};
use crate::digest::Digest;
use crate::limits::Limits;
use crate::path::{PathError, check_part_name, check_path};
use crate::statement::{ClusterScopedObject, MAX_JSON_INT, ProfileEntry, Statement, rfc3339};
use crate::tar::tar_size;

/// Step 6: everything the statement says must agree with itself. Returns the bundle digest.
pub(super) fn check_consistency(statement: &Statement, limits: &Limits) -> Result<Digest, VerifyError> {
    let p = &statement.predicate;
    if statement.subject.len() != 1 {
        return Err(VerifyError::Payload(format!("{} subjects, expected 1", statement.subject.len())));
    }
    p.cluster.parse::<ClusterId>().map_err(|e| VerifyError::BadField(e.to_string()))?;
    for (field, value) in [("version", p.version), ("keyringVersion", p.keyring_version)] {
        if value == 0 || value > MAX_JSON_INT {
            return Err(VerifyError::OutOfRange { field, value });
        }
    }
    if p.expires <= p.issued_at {
        return Err(VerifyError::ExpiresBeforeIssued { issued_at: rfc3339::format(&p.issued_at), expires: rfc3339::format(&p.expires) });
    }
    if let Some(ns) = &p.settings.watch_namespaces
        && let Some(bad) = ns.iter().find(|n| !crate::cluster::is_dns_label(n))
    {
        return Err(VerifyError::BadField(format!("watchNamespaces entry {bad:?} is not a namespace name")));
    }
    check_cluster_scoped(&p.settings.cluster_scoped)?;
    super::evaluations::check_evaluations(&p.settings.evaluations)?;
    // spec 2.5.5: a final bundle prunes the whole inventory, so it carries nothing to
    // apply and confirms the mass prune it is.
    if p.decommission && (!p.profiles.is_empty() || !p.files.is_empty()) {
        let (parts, files) = (p.profiles.len(), p.files.len());
        return Err(VerifyError::BadField(format!(
            "decommission: a final bundle holds no parts and no files, this one {parts} and {files}"
        )));
    }
    if p.decommission && !p.settings.allow_mass_prune {
        return Err(VerifyError::BadField("decommission: a final bundle must also carry allowMassPrune true".into()));
    }
    if p.profiles.len() > limits.parts {
        return Err(ContentError::TooManyParts { count: p.profiles.len(), limit: limits.parts }.into());
    }
    if p.files.len() > limits.files {
        return Err(ContentError::TooManyFiles { count: p.files.len(), limit: limits.files }.into());
    }
    let mut parts: BTreeMap<&str, Vec<u64>> = BTreeMap::new();
    for w in p.profiles.windows(2) {
        if w[0].name >= w[1].name {
            return Err(VerifyError::ProfileOrder { name: w[1].name.clone() });
        }
    }
    for profile in &p.profiles {
        check_part_name(&profile.name).map_err(ContentError::Path)?;
        parts.insert(&profile.name, Vec::new());
    }
    let mut total = 0u64;
    let mut previous: Option<&str> = None;
    let mut digests = Vec::with_capacity(p.files.len());
    let mut sealed = false;
    for f in &p.files {
        let part = check_path(&f.path).map_err(|e: PathError| ContentError::Path(e))?;
        if previous.is_some_and(|prev| prev >= f.path.as_str()) {
            return Err(VerifyError::FileOrder { path: f.path.clone() });
        }
        previous = Some(&f.path);
        if f.size > limits.file_bytes {
            return Err(ContentError::FileTooLarge { path: f.path.clone(), size: f.size, limit: limits.file_bytes }.into());
        }
        total += f.size;
        if total > limits.total_bytes {
            return Err(ContentError::TooLarge { size: total, limit: limits.total_bytes }.into());
        }
        let Some(sizes) = parts.get_mut(part) else {
            return Err(VerifyError::PartNotListed { path: f.path.clone(), part: part.to_string() });
        };
        sizes.push(f.size);
        let d = Digest::from_hex(&f.sha256).map_err(|e| VerifyError::BadField(format!("file {:?}: {e}", f.path)))?;
        digests.push((f.path.as_str(), d));
        sealed |= sealing::check_file(f, limits)?;
    }
    sealing::check_recipients(p, sealed, limits)?;
    for profile in &p.profiles {
        let computed = tar_size(parts[profile.name.as_str()].iter().copied());
        if computed != profile.size {
            return Err(VerifyError::PartSize { part: profile.name.clone(), signed: profile.size, computed });
        }
        if profile.tier > i32::MAX as u32 {
            return Err(VerifyError::BadField(format!("profile {:?}: tier {} is above 2^31-1", profile.name, profile.tier)));
        }
        for dep in &profile.depends_on {
            if !parts.contains_key(dep.as_str()) {
                return Err(VerifyError::UnknownDependency { part: profile.name.clone(), dependency: dep.clone() });
            }
        }
        settings::check_profile(profile, p.version)?;
    }
    settings::check_window(p)?;
    check_acyclic(&p.profiles)?;
    let computed = bundle_digest(digests);
    if statement.subject[0].digest.sha256 != computed.hex() {
        return Err(VerifyError::SubjectDigest { signed: statement.subject[0].digest.sha256.clone(), computed });
    }
    Ok(computed)
}

fn check_acyclic(profiles: &[ProfileEntry]) -> Result<(), VerifyError> {
    let deps: BTreeMap<&str, &[String]> = profiles.iter().map(|p| (p.name.as_str(), p.depends_on.as_slice())).collect();
    let mut done = BTreeSet::new();
    for start in deps.keys() {
        // Depth-first with an explicit path: a name met again on the path is a cycle.
        let mut path: Vec<(&str, usize)> = vec![(start, 0)];
        while let Some((node, i)) = path.pop() {
            if done.contains(node) {
                continue;
            }
            match deps[node].get(i) {
                Some(next) => {
                    path.push((node, i + 1));
                    if path.iter().any(|(n, _)| *n == next.as_str()) {
                        return Err(VerifyError::DependencyCycle { part: next.clone() });
                    }
                    path.push((next, 0));
                }
                None => {
                    done.insert(node);
                }
            }
        }
    }
    Ok(())
}

/// `clusterScoped` (spec 5.2): each entry well formed, strictly ascending by group, kind,
/// then name, so one allow-list has one signed form.
fn check_cluster_scoped(entries: &[ClusterScopedObject]) -> Result<(), VerifyError> {
    for entry in entries {
        if !entry.is_well_formed() {
            return Err(VerifyError::BadField(format!("clusterScoped entry {entry} is not a group, kind and object name")));
        }
    }
    match entries.windows(2).find(|w| w[0] >= w[1]) {
        Some(w) => Err(VerifyError::BadField(format!("clusterScoped entry {} is out of order or repeated", w[1]))),
        None => Ok(()),
    }
}
