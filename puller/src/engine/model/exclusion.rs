//! A part's drift exclusions (spec 5.8): fields of some of its objects that a drift check
//! does not compare and a re-apply of an existing object leaves as the cluster has them.
//! [`compile`] reads a profile's exclusions in full (JSON pointers, target regexes,
//! selectors) when the bundle is parsed, so a bad one refuses the bundle before anything
//! is written; [`Exclusions::without`] gives an object's manifest without the fields that
//! apply to it. Which objects exist and when to strip is the caller's business.
//!
//! Targets follow Sveltos's patch selectors: group, version, kind, name and namespace are
//! regular expressions (RE2 syntax, which the `regex` crate reads) matched against the
//! whole value, the core group and a cluster-scoped object's namespace being `""`; an
//! empty expression, as in Sveltos, matches anything. Selectors are Kubernetes
//! label-selector strings over the object's labels and annotations
//! (`airlock_bundle::selector`, which the publisher's patch targets use too).

use std::collections::BTreeMap;

use airlock_bundle::selector::{self, Selector};
use airlock_bundle::statement::{DriftExclusion, ProfileEntry, Target};
use regex::Regex;
use serde_json::Value;

use crate::engine::model::error::EngineError;
use crate::engine::model::id::ObjectId;

/// The compiled drift exclusions of one part; empty when it has none.
#[derive(Debug, Clone, Default)]
pub struct Exclusions(Vec<Exclusion>);

#[derive(Debug, Clone)]
struct Exclusion {
    /// Each path as its unescaped reference tokens.
    paths: Vec<Vec<String>>,
    /// None: every object of the part.
    target: Option<Matcher>,
}

#[derive(Debug, Clone)]
struct Matcher {
    group: Option<Regex>,
    version: Option<Regex>,
    kind: Option<Regex>,
    name: Option<Regex>,
    namespace: Option<Regex>,
    labels: Option<Selector>,
    annotations: Option<Selector>,
}

/// Reads every drift exclusion of `profile`; the first that cannot be used refuses the
/// bundle, naming the part and the field.
pub(crate) fn compile(profile: &ProfileEntry) -> Result<Exclusions, EngineError> {
    let compiled = profile.drift_exclusions.iter().enumerate().map(|(i, exclusion)| {
        one(exclusion).map_err(|(field, message)| EngineError::Setting {
            part: profile.name.clone(),
            field: format!("driftExclusions[{i}].{field}"),
            message,
        })
    });
    Ok(Exclusions(compiled.collect::<Result<_, _>>()?))
}

fn one(exclusion: &DriftExclusion) -> Result<Exclusion, (String, String)> {
    let paths: Result<Vec<_>, _> =
        exclusion.paths.iter().enumerate().map(|(i, p)| tokens(p).map_err(|m| (format!("paths[{i}]"), m))).collect();
    let target = exclusion.target.as_ref().map(matcher).transpose()?;
    Ok(Exclusion { paths: paths?, target })
}

fn matcher(target: &Target) -> Result<Matcher, (String, String)> {
    let regex = |field: &str, value: &Option<String>| {
        let Some(expression) = value.as_deref().filter(|e| !e.is_empty()) else { return Ok(None) };
        Regex::new(&format!("^(?:{expression})$"))
            .map(Some)
            .map_err(|e| (format!("target.{field}"), format!("{expression:?} is not a regular expression: {e}")))
    };
    let selector = |field: &str, value: &Option<String>| {
        value
            .as_deref()
            .map(selector::parse)
            .transpose()
            .map_err(|e| (format!("target.{field}"), format!("{:?} is not a selector: {e}", value.as_deref().unwrap_or_default())))
    };
    Ok(Matcher {
        group: regex("group", &target.group)?,
        version: regex("version", &target.version)?,
        kind: regex("kind", &target.kind)?,
        name: regex("name", &target.name)?,
        namespace: regex("namespace", &target.namespace)?,
        labels: selector("labelSelector", &target.label_selector)?,
        annotations: selector("annotationSelector", &target.annotation_selector)?,
    })
}

/// RFC 6901: `/a/b~1c` is the tokens `a` and `b/c`.
fn tokens(pointer: &str) -> Result<Vec<String>, String> {
    let Some(rest) = pointer.strip_prefix('/') else {
        return Err(format!("{pointer:?} is not a JSON pointer: it must start with '/'"));
    };
    rest.split('/')
        .map(|token| {
            if token.split('~').skip(1).any(|after| !after.starts_with(['0', '1'])) {
                return Err(format!("{pointer:?} is not a JSON pointer: '~' must be followed by 0 or 1"));
            }
            Ok(token.replace("~1", "/").replace("~0", "~"))
        })
        .collect()
}

impl Matcher {
    fn matches(&self, id: &ObjectId, manifest: &Value) -> bool {
        let whole = |regex: &Option<Regex>, value: &str| regex.as_ref().is_none_or(|r| r.is_match(value));
        let map = |field: &str| -> BTreeMap<String, String> {
            let entries = manifest.pointer(&format!("/metadata/{field}")).and_then(Value::as_object).into_iter().flatten();
            entries.filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_string()))).collect()
        };
        whole(&self.group, &id.group)
            && whole(&self.version, &id.version)
            && whole(&self.kind, &id.kind)
            && whole(&self.name, &id.name)
            && whole(&self.namespace, id.namespace.as_deref().unwrap_or_default())
            && self.labels.as_ref().is_none_or(|s| s.matches(&map("labels")))
            && self.annotations.as_ref().is_none_or(|s| s.matches(&map("annotations")))
    }
}

impl Exclusions {
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `manifest` (of the object `id`, its namespace settled) without the fields the
    /// exclusions that select it name; None when none selects it. Paths the manifest does
    /// not have are nothing to remove.
    pub(crate) fn without(&self, id: &ObjectId, manifest: &Value) -> Option<Value> {
        let mut selected = self.0.iter().filter(|e| e.target.as_ref().is_none_or(|t| t.matches(id, manifest))).peekable();
        selected.peek()?;
        let mut stripped = manifest.clone();
        for path in selected.flat_map(|e| &e.paths) {
            remove(&mut stripped, path);
        }
        Some(stripped)
    }
}

fn remove(value: &mut Value, path: &[String]) {
    let Some((last, parents)) = path.split_last() else { return };
    let mut at = value;
    for token in parents {
        at = match at {
            Value::Object(map) => match map.get_mut(token) {
                Some(next) => next,
                None => return,
            },
            Value::Array(items) => match index(token).and_then(|i| items.get_mut(i)) {
                Some(next) => next,
                None => return,
            },
            _ => return,
        };
    }
    match at {
        Value::Object(map) => {
            map.remove(last);
        }
        Value::Array(items) => {
            if let Some(i) = index(last).filter(|i| *i < items.len()) {
                items.remove(i);
            }
        }
        _ => {}
    }
}

/// An array index token: digits without a leading zero (RFC 6901).
fn index(token: &str) -> Option<usize> {
    let canonical = token == "0" || (!token.starts_with('0') && token.bytes().all(|b| b.is_ascii_digit()));
    canonical.then(|| token.parse().ok()).flatten()
}

#[cfg(test)]
#[path = "exclusion_tests.rs"]
mod tests;
