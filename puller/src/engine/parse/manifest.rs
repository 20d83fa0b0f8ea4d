//! Bundle files → desired objects: strict YAML parsing (spec 2.5), the checks every
//! document must pass (a create-only or force-recreate annotation other than `"true"`
//! among them, spec 2.5.1 and 2.5.2), Airlock's labels and annotations, each part's rules (`part`, whose drift
//! exclusions are checked here too), and the hash that tells an unchanged object apart.
//! No API calls; scopes and namespaces are settled later (`scope`).

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_bundle::Digest;
use airlock_bundle::VerifiedBundle;
use airlock_bundle::digest::{HASH_SUFFIX_BYTES, hash_suffixed};
use airlock_bundle::path::is_sealed;
use airlock_bundle::seal::is_secret;
use airlock_bundle::statement::ProfileEntry;
use airlock_bundle::vocabulary::{
    ADOPT_ANNOTATION, BUNDLE_DIGEST_ANNOTATION, CLUSTER_LABEL, CREATE_ONLY_ANNOTATION, FORCE_RECREATE_ANNOTATION, HOOK_ANNOTATION,
    PROFILE_LABEL, VERSION_ANNOTATION,
};
use rayon::prelude::*;
use serde_json::{Map, Value};

use crate::engine::model::error::EngineError;
use crate::engine::model::object::PartRules;
use crate::engine::model::object::{DesiredObject, Manifest, ObjectId};
use crate::engine::model::order;
use crate::engine::model::settings::Settings;
use crate::engine::parse::defaults;
use crate::engine::parse::helm_annotations;
use crate::engine::parse::part;
use crate::engine::plan::hook;
use crate::engine::plan::policy;
use crate::engine::plan::tenant;

/// Sveltos's own annotation for the same, on one resource; any value sets it (spec 2.5.2).
pub const SVELTOS_FORCE_RECREATE: &str = "projectsveltos.io/forceRecreate";
/// Sveltos's annotation excluding one object from drift detection; any value, even empty.
pub const SVELTOS_DRIFT_IGNORE: &str = "projectsveltos.io/driftDetectionIgnore";
/// Annotations that change with every bundle version even when the object did not: left
/// out of hashes, drift checks and diffs, or every object would be re-applied each version.
pub(crate) const VOLATILE_ANNOTATIONS: [&str; 2] = [VERSION_ANNOTATION, BUNDLE_DIGEST_ANNOTATION];

/// The longest Kubernetes label value.
const MAX_LABEL_VALUE: usize = 63;

/// Parses every file of every part, in profile order, into labelled objects.
pub(crate) fn desired(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<DesiredObject>, EngineError> {
    objects(bundle, settings, true)
}

/// Each object [`desired`] would give, checked alike, as its identity and source.
pub(crate) fn listed(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<(ObjectId, String)>, EngineError> {
    Ok(objects(bundle, settings, false)?.into_iter().map(|o| (o.id, o.source)).collect())
}

/// [`desired`], whose objects have no JSON text and hash unless `texts` asks for them.
fn objects(bundle: &VerifiedBundle, settings: &Settings, texts: bool) -> Result<Vec<DesiredObject>, EngineError> {
    let predicate = bundle.predicate();
    let waves = order::waves(&predicate.profiles);
    let rules = part::rules(&predicate.profiles)?;
    crate::engine::evaluate::validate(&predicate.settings.evaluations)?;
    policy::enforce_checks(&predicate.profiles, settings)?;
    tenant::contained(&predicate.profiles, settings)?;
    let stamp = Stamp {
        cluster: cluster_label(&settings.cluster),
        version: predicate.version.to_string(),
        digest: bundle.bundle().digest().to_string(),
        texts,
        refuses_clear_secrets: settings.decrypts && !predicate.settings.allow_plaintext_secrets,
    };
    let files: Vec<(Part<'_>, &str, &[u8])> = predicate
        .profiles
        .iter()
        .filter_map(|profile| Some((profile, bundle.bundle().part(&profile.name)?)))
        .flat_map(|(profile, content)| {
            let part = Part { profile, wave: waves.get(profile.name.as_str()).copied().unwrap_or(0), rules: &rules[&profile.name] };
            content.files().map(move |(path, bytes)| (part, path, bytes))
        })
        .collect();
    // Parsing is most of the CPU a sync or a verify spends on a bundle, and files parse
    // independently: they are spread over the cores. Every file is parsed even when one
    // fails, so that the error reported is the first in file order, as it was serially.
    let parsed: Vec<Result<Vec<DesiredObject>, EngineError>> =
        files.into_par_iter().map(|(part, path, bytes)| file_objects(part, path, bytes, &stamp)).collect();
    let mut objects = Vec::new();
    for file in parsed {
        objects.extend(file?);
    }
    resolve_duplicates(objects)
}

/// The part a file belongs to: its entry, wave and rules.
#[derive(Clone, Copy)]
struct Part<'a> {
    profile: &'a ProfileEntry,
    wave: u32,
    rules: &'a Arc<PartRules>,
}

/// The labelled objects of one file, in document order.
fn file_objects(part: Part<'_>, path: &str, bytes: &[u8], stamp: &Stamp) -> Result<Vec<DesiredObject>, EngineError> {
    let sealed = is_sealed(path);
    // A parser's message may quote the text it stopped at: not of a file that came encrypted.
    let withheld = |message: String| if sealed { WITHHELD.to_string() } else { message };
    let documents = parse_file(path, bytes).map_err(|e| match e {
        EngineError::Manifest { source_path, message } => EngineError::Manifest { source_path, message: withheld(message) },
        other => other,
    })?;
    let mut objects = Vec::with_capacity(documents.len());
    for (index, line, document) in documents {
        let at = |message: String| EngineError::Manifest {
            source_path: path.to_string(),
            message: format!("document {index} (line {line}): {}", withheld(message)),
        };
        if stamp.refuses_clear_secrets && !sealed && is_secret(&document) {
            return Err(at(CLEAR_SECRET.into()));
        }
        let object = object(part, format!("{path} document {index}"), document, stamp).map_err(at)?;
        objects.push(DesiredObject { sealed, ..object });
    }
    Ok(objects)
}

/// What an error about an encrypted file's content says instead of the parser's words.
const WITHHELD: &str = "refused; the reason is withheld, since it could quote the encrypted file (bundles-format.md 2.7)";

/// Splits one file into its non-empty documents: (1-based index, line, value).
pub(crate) fn parse_file(path: &str, bytes: &[u8]) -> Result<Vec<(usize, u64, Value)>, EngineError> {
    let bad = |message: String| EngineError::Manifest { source_path: path.to_string(), message };
    let text = std::str::from_utf8(bytes).map_err(|e| bad(format!("not UTF-8: {e}")))?;
    let documents = airlock_bundle::yaml::manifests(text).map_err(|e| bad(e.to_string()))?;
    Ok((1..).zip(documents).map(|(i, d)| (i, d.line, d.value)).collect())
}

/// What every object of one bundle is stamped with.
struct Stamp {
    cluster: String,
    version: String,
    digest: String,
    /// Whether objects get their JSON text and hash: a listing shows neither, and writing
    /// them would be much of what it costs.
    texts: bool,
    /// Whether a `Secret` must come encrypted (spec 2.7).
    refuses_clear_secrets: bool,
}

/// Why a `Secret` in clear is refused by a puller that decrypts.
const CLEAR_SECRET: &str = "a Secret in clear, but this cluster decrypts (it has an age identity), so its Secrets must come \
                            encrypted: a downgrade is refused (bundles-format.md 2.7; the SveltosCluster annotation \
                            airlock.dev/plaintext-secrets: allow lets them through)";

/// Checks one document (spec 2.5), then labels, defaults and hashes it.
fn object(part: Part<'_>, source: String, mut manifest: Value, stamp: &Stamp) -> Result<DesiredObject, String> {
    let profile = part.profile;
    let id = identify(&manifest)?;
    defaults::fill(&id, &mut manifest);
    let metadata = metadata_mut(&mut manifest)?;
    let labels = string_map(metadata, "labels")?;
    labels.insert(CLUSTER_LABEL.into(), stamp.cluster.clone().into());
    labels.insert(PROFILE_LABEL.into(), label_value(&profile.name).into());
    let release = hook::release(labels);
    let annotations = string_map(metadata, "annotations")?;
    let create_only = flag(annotations, CREATE_ONLY_ANNOTATION)?;
    let adopt = flag(annotations, ADOPT_ANNOTATION)?;
    let hook = hook::read(annotations, release.is_some())?;
    if hook.is_some() && create_only {
        return Err(format!("a hook ({}) cannot be create-only ({CREATE_ONLY_ANNOTATION})", HOOK_ANNOTATION));
    }
    let wait = helm_annotations::read_wait(annotations, release.is_some(), hook.is_some())?;
    let cleanup_on_fail = helm_annotations::read_cleanup_on_fail(annotations, release.is_some(), hook.is_some())?;
    let propagation = helm_annotations::read_propagation(annotations, release.is_some(), hook.is_some())?;
    // Sveltos counts its annotation as set whatever its value, even empty.
    let force_recreate = flag(annotations, FORCE_RECREATE_ANNOTATION)? || annotations.contains_key(SVELTOS_FORCE_RECREATE);
    let drift_ignored = annotations.contains_key(SVELTOS_DRIFT_IGNORE);
    for key in VOLATILE_ANNOTATIONS {
        annotations.remove(key);
    }
    // Hashed before the annotations that move with every version are stamped, rather than
    // on a copy without them: that would copy every manifest only to hash it.
    let hash = if stamp.texts { stable_hash(&manifest) } else { String::new() };
    let annotations = string_map(metadata_mut(&mut manifest)?, "annotations")?;
    annotations.insert(VERSION_ANNOTATION.into(), stamp.version.clone().into());
    annotations.insert(BUNDLE_DIGEST_ANNOTATION.into(), stamp.digest.clone().into());
    if !stamp.texts {
        manifest = Value::Null;
    }
    Ok(DesiredObject {
        profile: profile.name.clone(),
        sync_mode: profile.sync_mode,
        tier: profile.tier,
        stop_matching_behavior: profile.stop_matching_behavior,
        force_conflicts: profile.force_conflicts,
        wave: part.wave,
        rules: part.rules.clone(),
        create_only,
        adopt,
        force_recreate,
        drift_ignored,
        release,
        hook,
        wait,
        cleanup_on_fail,
        propagation,
        source,
        sealed: false,
        id,
        hash,
        manifest: Manifest::from(manifest),
    })
}

/// Whether the Airlock annotation `key` is set: absent is false, `"true"` true, any other
/// value an error.
fn flag(annotations: &Map<String, Value>, key: &str) -> Result<bool, String> {
    match annotations.get(key).and_then(Value::as_str) {
        None => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(format!("annotation {key} is {other:?}; the only value it may have is \"true\"")),
    }
}

fn metadata_mut(manifest: &mut Value) -> Result<&mut Map<String, Value>, String> {
    manifest.get_mut("metadata").and_then(Value::as_object_mut).ok_or_else(|| "metadata is not a mapping".to_string())
}

/// apiVersion, kind and metadata.name, as spec 2.5 requires of every document.
fn identify(manifest: &Value) -> Result<ObjectId, String> {
    let root = manifest.as_object().ok_or("not a mapping (a Kubernetes object is one)")?;
    let text = |value: Option<&Value>, field: &str| -> Result<String, String> {
        match value {
            Some(Value::String(s)) if !s.is_empty() => Ok(s.clone()),
            Some(Value::Null) | None => Err(format!("no {field}")),
            Some(_) => Err(format!("{field} is not a non-empty string")),
        }
    };
    let api_version = text(root.get("apiVersion"), "apiVersion")?;
    let kind = text(root.get("kind"), "kind")?;
    if api_version == "v1" && kind == "List" {
        // No API serves a List: applying one would fail on every run.
        return Err("a v1 List, which no API serves: its items must be documents of their own (spec 2.5)".into());
    }
    let metadata = root.get("metadata").ok_or("no metadata")?;
    let metadata = metadata.as_object().ok_or("metadata is not a mapping")?;
    let name = text(metadata.get("name"), "metadata.name")?;
    let namespace = match metadata.get("namespace") {
        None | Some(Value::Null) => None,
        value => Some(text(value, "metadata.namespace")?),
    };
    let (group, version) = match api_version.split_once('/') {
        None => (String::new(), api_version.clone()),
        Some((g, v)) if !g.is_empty() && !v.is_empty() && !v.contains('/') => (g.to_string(), v.to_string()),
        Some(_) => return Err(format!("apiVersion {api_version:?} is not VERSION or GROUP/VERSION")),
    };
    Ok(ObjectId { group, version, kind, namespace, name })
}

/// `metadata.<field>` as a map of strings, created when absent.
fn string_map<'a>(metadata: &'a mut Map<String, Value>, field: &str) -> Result<&'a mut Map<String, Value>, String> {
    let slot = metadata.entry(field).or_insert_with(|| Value::Object(Map::new()));
    if slot.is_null() {
        *slot = Value::Object(Map::new());
    }
    let map = slot.as_object_mut().ok_or_else(|| format!("metadata.{field} is not a mapping"))?;
    if let Some((key, _)) = map.iter().find(|(_, v)| !v.is_string()) {
        return Err(format!("metadata.{field}.{key} is not a string"));
    }
    Ok(map)
}

/// SHA-256 hex of the manifest's compact JSON, taken without the annotations that move
/// with every version (the caller leaves them out). serde_json's map is sorted, so equal
/// objects serialise to equal bytes.
fn stable_hash(manifest: &Value) -> String {
    Digest::of(&serde_json::to_vec(manifest).unwrap_or_default()).hex()
}

/// The value of [`CLUSTER_LABEL`] for a cluster id: `/` is not allowed in label values.
pub fn cluster_label(cluster: &str) -> String {
    label_value(&cluster.replace('/', "."))
}

/// A label value: at most 63 characters of `[A-Za-z0-9._-]`, alphanumeric at both ends.
/// Longer ids (a cluster name may have 253) keep a readable prefix and a hash of the whole.
pub fn label_value(s: &str) -> String {
    let valid = |v: &str| {
        v.len() <= MAX_LABEL_VALUE
            && v.bytes().all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
            && v.bytes().next().is_none_or(|b| b.is_ascii_alphanumeric())
            && v.bytes().last().is_none_or(|b| b.is_ascii_alphanumeric())
    };
    if valid(s) {
        return s.to_string();
    }
    let prefix: String = s
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() || "._-".contains(c) { c } else { '-' })
        .take(MAX_LABEL_VALUE - HASH_SUFFIX_BYTES)
        .collect();
    hash_suffixed(prefix.trim_matches(|c: char| !c.is_ascii_alphanumeric()), s.as_bytes())
}

/// One object may come from one document only. Across profiles the lower tier wins, as
/// in Sveltos; within a tier, or within one profile, two copies are a broken bundle. A
/// document without a namespace is the object of that name in `default`, where the API
/// server puts it (no document of a cluster-scoped kind has one, so none is joined).
fn resolve_duplicates(objects: Vec<DesiredObject>) -> Result<Vec<DesiredObject>, EngineError> {
    let deployed = |id: &ObjectId| {
        let mut key = id.key();
        key.2 = Some(key.2.filter(|ns| !ns.is_empty()).unwrap_or_else(|| "default".into()));
        key
    };
    let mut winners: BTreeMap<_, usize> = BTreeMap::new();
    let mut keep = vec![true; objects.len()];
    for (i, object) in objects.iter().enumerate() {
        let Some(&j) = winners.get(&deployed(&object.id)) else {
            winners.insert(deployed(&object.id), i);
            continue;
        };
        let other = &objects[j];
        if other.tier == object.tier {
            return Err(EngineError::Manifest {
                source_path: object.source.clone(),
                message: format!("{} is also defined in {} (same tier {})", object.id, other.source, object.tier),
            });
        }
        let (winner, loser) = if object.tier < other.tier { (i, j) } else { (j, i) };
        tracing::warn!(
            object = %objects[loser].id,
            kept = %objects[winner].source,
            dropped = %objects[loser].source,
            "object defined by two profiles: the lower tier wins"
        );
        keep[loser] = false;
        winners.insert(deployed(&object.id), winner);
    }
    Ok(objects.into_iter().zip(keep).filter_map(|(o, k)| k.then_some(o)).collect())
}

#[cfg(test)]
#[path = "manifest_tests.rs"]
mod tests;
