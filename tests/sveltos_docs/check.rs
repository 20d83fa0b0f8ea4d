//! One cluster's verified bundle against what the examples say Sveltos deploys there:
//! which parts, each part's objects (semantically, field by field), settings, notes and
//! failure, the create-only Namespaces standing for the ones Sveltos creates implicitly,
//! and the bundle's own fields. Every difference becomes a `Mismatch`; nothing stops early.
//!
//! The publisher adds nothing of Airlock's own to an object except the create-only
//! annotation (the puller's labels come at apply time), so objects compare whole. The one
//! allowance is for a live management cluster: an object copied out of it by `copy`,
//! `getResource` and the field functions keeps the apiserver's `metadata.creationTimestamp`
//! and `metadata.generation`, which differ per run, so they are ignored there unless the
//! example states them.

use std::collections::BTreeMap;

use airlock_bundle::VerifiedBundle;
use airlock_bundle::statement::ProfileEntry;
use serde_json::{Value, json};

use super::diff;
use super::expected::{ExpectedPart, Suite};
use super::report::Mismatch;

/// The annotation marking a Namespace the puller only creates (bundles-format.md 2.5.1).
pub const CREATE_ONLY: &str = "airlock.dev/create-only";
/// Fields a live management cluster sets on what templates copy out of it.
const SERVER_SET: [&str; 2] = ["creationTimestamp", "generation"];

/// The identity of an object: API group, kind, namespace, name.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub struct Key(String, String, String, String);

impl Key {
    pub fn of(v: &Value) -> Key {
        let s = |p: &str| v.pointer(p).and_then(Value::as_str).unwrap_or_default().to_string();
        let api = s("/apiVersion");
        let group = api.rsplit_once('/').map(|(g, _)| g.to_string()).unwrap_or_default();
        Key(group, s("/kind"), s("/metadata/namespace"), s("/metadata/name"))
    }

    pub fn kind(&self) -> &str {
        &self.1
    }

    pub fn namespace(&self) -> &str {
        &self.2
    }

    pub fn name(&self) -> &str {
        &self.3
    }
}

impl std::fmt::Display for Key {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.2.as_str() {
            "" => write!(f, "{} {}", self.1, self.3),
            ns => write!(f, "{} {ns}/{}", self.1, self.3),
        }
    }
}

/// Whether `v` is a Namespace marked create-only.
pub fn is_create_only(v: &Value) -> bool {
    v["kind"] == "Namespace" && v.pointer(&format!("/metadata/annotations/{}", CREATE_ONLY.replace('/', "~1"))).is_some()
}

/// The objects of every part of `bundle`, by part name.
pub fn part_objects(bundle: &VerifiedBundle) -> BTreeMap<String, Vec<Value>> {
    let mut out: BTreeMap<String, Vec<Value>> = BTreeMap::new();
    for (path, bytes) in bundle.bundle().files() {
        let part = path.split('/').next().unwrap_or_default().to_string();
        let text = String::from_utf8_lossy(bytes);
        let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{path}: unreadable YAML: {e}"));
        out.entry(part).or_default().extend(docs.into_iter().filter(|d| !d.is_null()));
    }
    out
}

/// Every difference between `bundle` and what `suite` expects of `cluster`. `live` says
/// the bundle was published from a live management cluster.
pub fn cluster(suite: &Suite, cluster: &str, bundle: &VerifiedBundle, live: bool) -> Vec<Mismatch> {
    let expect = suite.for_cluster(cluster);
    let mut out = Vec::new();
    let mut push = |feature: &str, what: String, expected: String, actual: String| {
        out.push(Mismatch { feature: feature.to_string(), cluster: cluster.to_string(), what, expected, actual })
    };
    let mut objects = part_objects(bundle);
    let mut implicit: BTreeMap<String, (String, Value)> = BTreeMap::new();
    for (part, list) in &mut objects {
        for ns in list.extract_if(.., |o| is_create_only(o)) {
            implicit.insert(Key::of(&ns).name().to_string(), (part.clone(), ns));
        }
    }
    let entries: BTreeMap<&str, &ProfileEntry> = bundle.predicate().profiles.iter().map(|p| (p.name.as_str(), p)).collect();
    for (name, entry) in &entries {
        if !expect.parts.contains_key(name) {
            let count = objects.get(*name).map_or(0, Vec::len);
            let failure = entry.failure.as_ref().map(|f| format!(", failure: {}", f.message)).unwrap_or_default();
            push(suite.feature_of(name), format!("part {name}"), "absent".into(), format!("present, {count} objects{failure}"));
        }
    }
    for (name, (feature, part)) in &expect.parts {
        let Some(entry) = entries.get(name) else {
            push(feature, format!("part {name}"), "present".into(), "missing".into());
            continue;
        };
        let entry = serde_json::to_value(entry).expect("a profile entry serialises");
        let actual = objects.remove(*name).unwrap_or_default();
        for (what, expected, got) in compare_part(part, &entry, &actual, live) {
            push(feature, format!("{name}: {what}"), expected, got);
        }
    }
    let mut wanted: BTreeMap<&str, Vec<&str>> = BTreeMap::new();
    for (feature, part) in expect.parts.values() {
        for ns in &part.implicit_namespaces {
            wanted.entry(ns.as_str()).or_default().push(feature);
        }
    }
    for (ns, features) in &wanted {
        match implicit.get(*ns) {
            None => {
                for f in features {
                    push(f, format!("implicit namespace {ns}"), "create-only Namespace".into(), "none".into());
                }
            }
            Some((part, object)) => {
                let bare = json!({"apiVersion": "v1", "kind": "Namespace",
                                  "metadata": {"name": ns, "annotations": {CREATE_ONLY: "true"}}});
                let diffs = diff::exact(&bare, object);
                if !diffs.is_empty() {
                    push(features[0], format!("implicit namespace {ns} (in {part})"), "bare".into(), diff::summary(&diffs));
                }
            }
        }
    }
    for (ns, (part, _)) in implicit.iter().filter(|(ns, _)| !wanted.contains_key(ns.as_str())) {
        push(suite.feature_of(part), format!("implicit namespace {ns}"), "none".into(), format!("create-only Namespace in {part}"));
    }
    let predicate = serde_json::to_value(bundle.predicate()).expect("the predicate serialises");
    for field in ["activeWindow", "watchNamespaces"] {
        let (feature, expected) = expect.bundle.get(field).map_or(("*", &Value::Null), |(f, v)| (*f, *v));
        let actual = predicate.get(field).unwrap_or(&Value::Null);
        let diffs = diff::exact(expected, actual);
        if !diffs.is_empty() {
            push(feature, format!("bundle {field}"), diff::short(expected), diff::short(actual));
        }
    }
    out
}

/// The defaults of a part entry's settings, which the bundle leaves out (spec 5.2).
fn settings_defaults() -> serde_json::Map<String, Value> {
    let v = json!({"syncMode": "Continuous", "tier": 100, "dependsOn": [], "stopMatchingBehavior": "WithdrawPolicies",
                   "continueOnError": false, "maxConsecutiveFailures": null, "driftExclusions": [], "checks": {}});
    v.as_object().expect("an object").clone()
}

/// (what, expected, actual) for every difference of one part.
fn compare_part(part: &ExpectedPart, entry: &Value, actual: &[Value], live: bool) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    for (key, default) in settings_defaults() {
        let expected = part.settings.get(&key).unwrap_or(&default);
        let got = entry.get(&key).unwrap_or(&default);
        if !diff::exact(expected, got).is_empty() {
            out.push((format!("settings.{key}"), diff::short(expected), diff::short(got)));
        }
    }
    if let Some(unknown) = part.settings.keys().find(|k| !settings_defaults().contains_key(*k)) {
        panic!("{}: unknown setting {unknown} in the expected file", part.name);
    }
    let failure = entry.get("failure");
    match (&part.failure, failure) {
        (None, None) => {}
        (None, Some(f)) => out.push(("failure".into(), "none".into(), diff::short(&f["message"]))),
        (Some(want), None) => out.push(("failure".into(), format!("message containing {want:?}"), "none".into())),
        (Some(want), Some(f)) => {
            let message = f["message"].as_str().unwrap_or_default();
            if !message.contains(want.as_str()) || f.get("keptFrom").is_some() {
                out.push(("failure".into(), format!("message containing {want:?}, no keptFrom"), diff::short(f)));
            }
        }
    }
    let notes = entry.get("notes").and_then(Value::as_array).cloned().unwrap_or_default();
    for n in &part.notes {
        let found = notes.iter().find(|a| a["field"] == n.field.as_str());
        let Some(a) = found else {
            out.push((format!("note {}", n.field), n.support.clone(), "no note".into()));
            continue;
        };
        let detail = a["detail"].as_str().unwrap_or_default();
        if a["support"] != n.support.as_str() || n.detail.as_ref().is_some_and(|d| !detail.contains(d.as_str())) {
            let want = n.detail.as_ref().map_or(n.support.clone(), |d| format!("{}, detail containing {d:?}", n.support));
            out.push((format!("note {}", n.field), want, diff::short(a)));
        }
    }
    for a in notes.iter().filter(|a| !part.notes.iter().any(|n| a["field"] == n.field.as_str())) {
        out.push((format!("note {}", a["field"].as_str().unwrap_or_default()), "no note".into(), diff::short(a)));
    }
    out.extend(compare_objects(&part.objects, actual, live));
    out
}

fn compare_objects(expected: &[Value], actual: &[Value], live: bool) -> Vec<(String, String, String)> {
    let mut out = Vec::new();
    let mut got: BTreeMap<Key, Vec<&Value>> = BTreeMap::new();
    for a in actual {
        got.entry(Key::of(a)).or_default().push(a);
    }
    for e in expected {
        let key = Key::of(e);
        match got.remove(&key).as_deref() {
            None | Some([]) => out.push((key.to_string(), "present".into(), "missing".into())),
            Some([a]) => {
                let mut a = (*a).clone();
                if live && let Some(meta) = a["metadata"].as_object_mut() {
                    for field in SERVER_SET.iter().filter(|f| e["metadata"].get(**f).is_none()) {
                        meta.remove(*field);
                    }
                }
                let diffs = diff::exact(e, &a);
                if !diffs.is_empty() {
                    out.push((key.to_string(), "as the example".into(), diff::summary(&diffs)));
                }
            }
            Some(many) => out.push((key.to_string(), "one copy".into(), format!("{} copies", many.len()))),
        }
    }
    for (key, extra) in got {
        out.push((key.to_string(), "absent".into(), format!("present: {}", diff::short(extra[0]))));
    }
    out
}
