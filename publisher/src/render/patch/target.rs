//! A patch's target as a profile writes it ([`Target`]), compiled once and matched twice
//! over, as an object meets it in Sveltos.
//!
//! Sveltos first keeps the patches whose target matches the object (`patchMatchesObject`:
//! Go regular expressions, unanchored, over group, version, kind, namespace and name in
//! that order, then the selectors); kustomize then selects again (`resWrangler.Select`),
//! with the same expressions anchored (`^(?:…)$`), against the namespace kustomize
//! reckons (`default` for none, `_non_namespaceable_` for a cluster-scoped kind) and the
//! original or current name. An object must pass both. An empty field matches anything.

use std::collections::BTreeMap;

use airlock_bundle::selector::{self, Selector};
use regex::Regex;
use serde_json::Value;

use super::schema::is_cluster_scoped;
use super::tree::value_text as text;
use crate::sources::model::Target;

/// A target field or selector that cannot be compiled.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum TargetError {
    #[error("target {field} `{pattern}` is not a regular expression: {reason}")]
    Regex { field: &'static str, pattern: String, reason: String },
    #[error("target {field} `{selector}` is not a label selector: {reason}")]
    Selector { field: &'static str, selector: String, reason: String },
}

/// A target with its expressions compiled once.
#[derive(Debug)]
pub(super) struct Compiled {
    /// group, version, kind, namespace, name: Sveltos's order.
    fields: [Option<Pattern>; 5],
    labels: Option<Result<Selector, TargetError>>,
    annotations: Option<Result<Selector, TargetError>>,
}

#[derive(Debug)]
struct Pattern {
    /// `(unanchored, anchored)`.
    compiled: Result<(Regex, Regex), TargetError>,
}

const GROUP: usize = 0;
const VERSION: usize = 1;
const KIND: usize = 2;
const NAMESPACE: usize = 3;
const NAME: usize = 4;

/// A kustomize resource id: what an untargeted strategic merge patch must name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Id {
    group: String,
    version: String,
    kind: String,
    name: String,
    namespace: String,
}

impl Compiled {
    pub(super) fn new(target: &Target) -> Compiled {
        let names = ["group", "version", "kind", "namespace", "name"];
        let given = [&target.group, &target.version, &target.kind, &target.namespace, &target.name];
        let fields = std::array::from_fn(|i| {
            let pattern = given[i].as_deref().filter(|p| !p.is_empty())?;
            let regex = |p: &str| {
                Regex::new(p).map_err(|e| TargetError::Regex { field: names[i], pattern: pattern.to_string(), reason: e.to_string() })
            };
            Some(Pattern { compiled: regex(pattern).and_then(|u| Ok((u, regex(&format!("^(?:{pattern})$"))?))) })
        });
        let selector = |field: &'static str, text: &Option<String>| {
            let text = text.as_deref().filter(|t| !t.is_empty())?;
            Some(selector::parse(text).map_err(|reason| TargetError::Selector { field, selector: text.to_string(), reason }))
        };
        Compiled {
            fields,
            labels: selector("labelSelector", &target.label_selector),
            annotations: selector("annotationSelector", &target.annotation_selector),
        }
    }

    /// Sveltos's `patchMatchesObject`: checks stop at the first field that fails, so a
    /// broken expression after it goes unnoticed.
    pub(super) fn sveltos_matches(&self, object: &Value) -> Result<bool, TargetError> {
        let (group, version, kind) = sveltos_gvk(object);
        let string = |pointer: &str| object.pointer(pointer).and_then(Value::as_str).unwrap_or_default();
        let values = [group, version, kind, string("/metadata/namespace"), string("/metadata/name")];
        for (pattern, value) in self.fields.iter().zip(values) {
            let Some(pattern) = pattern else { continue };
            let (unanchored, _) = pattern.compiled.as_ref().map_err(Clone::clone)?;
            if !unanchored.is_match(value) {
                return Ok(false);
            }
        }
        let strings = |field: &str| {
            let map = object.pointer(&format!("/metadata/{field}")).and_then(Value::as_object);
            // unstructured's NestedStringMap gives nothing when one value is no string.
            map.and_then(|m| m.iter().map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect::<Option<_>>()).unwrap_or_default()
        };
        Ok(selects(&self.labels, &strings("labels"))? && selects(&self.annotations, &strings("annotations"))?)
    }

    /// kustomize's `Select` of the resource that started as `original` and is now `current`.
    pub(super) fn kustomize_selects(&self, original: &Value, current: &Value) -> Result<bool, TargetError> {
        let anchored = |i: usize| -> Result<Option<&Regex>, TargetError> {
            self.fields[i].as_ref().map(|p| p.compiled.as_ref().map(|(_, a)| a).map_err(Clone::clone)).transpose()
        };
        let (org, cur) = (Id::of(original), Id::of(current));
        if let Some(ns) = anchored(NAMESPACE)?
            && !ns.is_match(&org.effective_namespace())
            && !ns.is_match(&cur.effective_namespace())
        {
            return Ok(false);
        }
        if let Some(name) = anchored(NAME)?
            && !name.is_match(&org.name)
            && !name.is_match(&cur.name)
        {
            return Ok(false);
        }
        for (i, value) in [(GROUP, &cur.group), (VERSION, &cur.version), (KIND, &cur.kind)] {
            if let Some(pattern) = anchored(i)?
                && !pattern.is_match(value)
            {
                return Ok(false);
            }
        }
        let texts = |field: &str| text_map(current.pointer(&format!("/metadata/{field}")));
        Ok(selects(&self.labels, &texts("labels"))? && selects(&self.annotations, &texts("annotations"))?)
    }
}

fn selects(selector: &Option<Result<Selector, TargetError>>, labels: &BTreeMap<String, String>) -> Result<bool, TargetError> {
    match selector {
        None => Ok(true),
        Some(Ok(selector)) => Ok(selector.matches(labels)),
        Some(Err(error)) => Err(error.clone()),
    }
}

/// apimachinery's `ParseGroupVersion` behind `GroupVersionKind()`: more than one `/` makes
/// the whole group-version-kind empty.
fn sveltos_gvk(object: &Value) -> (&str, &str, &str) {
    let api_version = object.get("apiVersion").and_then(Value::as_str).unwrap_or_default();
    let kind = object.get("kind").and_then(Value::as_str).unwrap_or_default();
    match api_version.split('/').collect::<Vec<_>>()[..] {
        _ if api_version.is_empty() || api_version == "/" => ("", "", kind),
        [version] => ("", version, kind),
        [group, version] => (group, version, kind),
        _ => ("", "", ""),
    }
}

/// kyaml's `GetLabels`/`GetAnnotations`: every value by its text.
pub(super) fn text_map(value: Option<&Value>) -> BTreeMap<String, String> {
    let Some(map) = value.and_then(Value::as_object) else { return BTreeMap::new() };
    map.iter().map(|(k, v)| (k.clone(), text(v))).collect()
}

impl Id {
    pub(super) fn of(object: &Value) -> Id {
        let get = |pointer: &str| object.pointer(pointer).map(text).unwrap_or_default();
        let api_version = get("/apiVersion");
        let (group, version) = api_version.split_once('/').map_or((String::new(), api_version.clone()), |(g, v)| (g.into(), v.into()));
        Id { group, version, kind: get("/kind"), name: get("/metadata/name"), namespace: get("/metadata/namespace") }
    }

    fn api_version(&self) -> String {
        if self.group.is_empty() { self.version.clone() } else { format!("{}/{}", self.group, self.version) }
    }

    /// kustomize's `EffectiveNamespace`.
    fn effective_namespace(&self) -> String {
        if is_cluster_scoped(&self.api_version(), &self.kind) {
            "_non_namespaceable_".to_string()
        } else if self.namespace.is_empty() {
            "default".to_string()
        } else {
            self.namespace.clone()
        }
    }

    /// kustomize's `ResId.Equals`: group, version, kind and name, and the namespace
    /// kustomize reckons.
    pub(super) fn same(&self, other: &Id) -> bool {
        (&self.group, &self.version, &self.kind, &self.name) == (&other.group, &other.version, &other.kind, &other.name)
            && self.effective_namespace() == other.effective_namespace()
    }
}

impl std::fmt::Display for Id {
    /// As kustomize prints an id: `Deployment.v1.apps/web.prod`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let or = |s: &str, none: &'static str| if s.is_empty() { none.to_string() } else { s.to_string() };
        let (version, group, namespace) = (or(&self.version, "[noVer]"), or(&self.group, "[noGrp]"), or(&self.namespace, "[noNs]"));
        write!(f, "{}.{version}.{group}/{}.{namespace}", self.kind, self.name)
    }
}
