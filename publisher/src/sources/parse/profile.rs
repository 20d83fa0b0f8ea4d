//! A ClusterProfile or Profile ([`parse_profile`]), and the part name a profile that
//! cannot be parsed would have had ([`part_of_unreadable`]), so what a cluster holds of it
//! can be kept.

use airlock_bundle::statement::DEFAULT_TIER;
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde_json::Value;

use super::reader::{Fields, Metadata, check_version};
use super::{checks, helm_chart, kustomization, refs, tenant};
use crate::sources::fields;
use crate::sources::max_update::MaxUpdate;
use crate::sources::model::{ModelError, PAUSED_ANNOTATION, Profile, ProfileKind};
use crate::sources::selector::Selector;

/// The kind of a ClusterProfile (`namespaced == false`) or Profile, and how it is named.
fn kind_of(value: &Value, namespaced: bool) -> Result<(ProfileKind, String, String), ModelError> {
    let what = if namespaced { "Profile" } else { "ClusterProfile" };
    let meta = Metadata::of(value, what)?;
    let kind = match (namespaced, meta.namespace) {
        (false, _) => ProfileKind::ClusterProfile,
        (true, Some(namespace)) => ProfileKind::Profile { namespace: namespace.to_string() },
        (true, None) => {
            return Err(ModelError::Malformed {
                object: format!("Profile/{}", meta.name),
                message: "a Profile needs metadata.namespace".into(),
            });
        }
    };
    let display = kind.display(meta.name);
    Ok((kind, meta.name.to_string(), display))
}

/// The part name and display name of a profile object, if its metadata says them: a
/// profile whose spec cannot be used still names the part clusters hold of it.
pub fn part_of_unreadable(value: &Value, namespaced: bool) -> Option<(String, String)> {
    let (kind, name, display) = kind_of(value, namespaced).ok()?;
    Some((kind.part_name(&name), display))
}

/// Parses a ClusterProfile (`namespaced == false`) or a Profile.
pub fn parse_profile(value: &Value, namespaced: bool) -> Result<Profile, ModelError> {
    let (kind, name, object) = kind_of(value, namespaced)?;
    check_version(value, &object)?;
    let meta = Metadata::of(value, &object)?;
    let annotations = meta.map("annotations")?;
    let tenant = tenant::tenant(&meta.map("labels")?, &object)?;
    let raw_spec = &value["spec"];
    let spec = Fields::of(raw_spec, "spec", &object)?;
    let own = match &kind {
        ProfileKind::Profile { namespace } => Some(namespace.as_str()),
        ProfileKind::ClusterProfile | ProfileKind::RoleRequest { .. } => None,
    };
    let mut notes = fields::profile_notes(raw_spec);
    let selector = match spec.raw("clusterSelector") {
        Value::Null => None,
        v => Selector::parse(v).map_err(|m| spec.error("clusterSelector", m))?,
    };
    let max_consecutive_failures = match spec.get::<u32>("maxConsecutiveFailures")? {
        Some(0) => return Err(spec.error("maxConsecutiveFailures", "is 0; it counts failures from 1".into())),
        other => other,
    };
    let max_update = MaxUpdate::parse(spec.raw("maxUpdate")).map_err(|m| spec.error("maxUpdate", m))?;
    let cluster_refs = refs::cluster_refs(&spec, own, &mut notes)?;
    let policy_refs = refs::policy_refs(&spec, own, &mut notes)?;
    let kustomization_refs = kustomization::kustomization_refs(&spec, own, &mut notes)?;
    let helm_charts = helm_chart::helm_charts(&spec, own, &mut notes)?;
    notes.sort();
    notes.dedup();
    Ok(Profile {
        paused: annotations.contains_key(PAUSED_ANNOTATION),
        selector,
        cluster_refs,
        set_refs: spec.or_default("setRefs")?,
        policy_refs,
        kustomization_refs,
        helm_charts,
        template_refs: refs::template_refs(&spec)?,
        patches: refs::patches(&spec)?,
        patches_from: refs::patches_from(&spec)?,
        sync_mode: spec.get::<SyncMode>("syncMode")?.unwrap_or_default(),
        tier: spec.get("tier")?.unwrap_or(DEFAULT_TIER),
        depends_on: spec.or_default("dependsOn")?,
        stop_matching_behavior: spec.get::<StopMatchingBehavior>("stopMatchingBehavior")?.unwrap_or_default(),
        continue_on_conflict: spec.or_default("continueOnConflict")?,
        continue_on_error: spec.or_default("continueOnError")?,
        max_consecutive_failures,
        max_update,
        drift_exclusions: refs::drift_exclusions(&spec)?,
        reloader: spec.or_default("reloader")?,
        checks: checks::checks(&spec)?,
        extra_labels: spec.or_default("extraLabels")?,
        extra_annotations: spec.or_default("extraAnnotations")?,
        tenant,
        notes,
        kind,
        name,
        event: None,
    })
}
