//! How far airlock-publisher honours each field of Sveltos's v1beta1 ClusterProfile,
//! Profile and SveltosCluster: one table (`profile_table` and `table`), read by the parser to note what it
//! does not honour, and by the test that holds `docs/sveltos-compatibility.md` to the CRDs
//! (`compat`). Entry points: [`profile_notes`] and [`lookup`].
//!
//! A field is declared by its path in the object, arrays written `[]`
//! (`spec.policyRefs[].tier`). An entry marked `subtree` covers every field below it; any
//! other entry covers itself only, so a field Sveltos adds under a supported one is
//! unknown until it is declared, and noted as such rather than passing as supported.
//!
//! This module does not parse the fields it describes; `parse` does, and adds the notes
//! that depend on a field's value (a `Local` policyRef, a Flux source kind).

#[cfg(test)]
mod classifier_table;
#[cfg(test)]
mod compat;
#[cfg(test)]
mod event_table;
#[cfg(test)]
mod health_table;
mod profile_table;
mod table;
#[cfg(test)]
mod written;

use std::collections::BTreeSet;

use airlock_bundle::statement::{FieldNote, Support};
use serde_json::Value;

use profile_table::PROFILE_FIELDS;
pub use table::Field;
use table::{CLUSTER_FIELDS, ROLE_REQUEST_FIELDS};

/// The entry covering `path` in `fields`: its own, or a `subtree` ancestor's.
pub fn lookup(fields: &'static [Field], path: &str) -> Option<&'static Field> {
    if let Some(own) = fields.iter().find(|f| f.path == path) {
        return Some(own);
    }
    fields.iter().filter(|f| f.subtree && is_below(path, f.path)).max_by_key(|f| f.path.len())
}

/// Whether `path` lies below `ancestor` (`a.b[]` and `a.b.c` lie below `a.b`).
fn is_below(path: &str, ancestor: &str) -> bool {
    path.strip_prefix(ancestor).is_some_and(|rest| rest.starts_with('.') || rest.starts_with("[]"))
}

/// The notes a profile's `spec` earns: every set field the table says is not supported or
/// not applicable, and every set field it does not know at all. A field at its zero value
/// (as CRD defaulting writes `reloader: false`) changes nothing and earns none.
pub fn profile_notes(spec: &Value) -> Vec<FieldNote> {
    notes(PROFILE_FIELDS, spec)
}

/// [`profile_notes`] for a SveltosCluster's `spec`: its push-mode fields, mostly.
pub fn cluster_notes(spec: &Value) -> Vec<FieldNote> {
    notes(CLUSTER_FIELDS, spec)
}

/// [`profile_notes`] for a RoleRequest's `spec`.
pub fn role_request_notes(spec: &Value) -> Vec<FieldNote> {
    notes(ROLE_REQUEST_FIELDS, spec)
}

fn notes(fields: &'static [Field], spec: &Value) -> Vec<FieldNote> {
    let mut notes = BTreeSet::new();
    walk(fields, spec, "spec", &mut notes);
    notes.into_iter().collect()
}

fn walk(fields: &'static [Field], value: &Value, path: &str, notes: &mut BTreeSet<FieldNote>) {
    match value {
        Value::Object(map) => {
            for (key, child) in map {
                let child_path = format!("{path}.{key}");
                visit(fields, child, &child_path, notes);
            }
        }
        Value::Array(items) => {
            let item_path = format!("{path}[]");
            for item in items {
                walk(fields, item, &item_path, notes);
            }
        }
        _ => {}
    }
}

fn visit(fields: &'static [Field], value: &Value, path: &str, notes: &mut BTreeSet<FieldNote>) {
    if !is_set(value) {
        return;
    }
    match lookup(fields, path) {
        None => {
            notes.insert(FieldNote {
                field: path.to_string(),
                support: Support::NotSupported,
                detail: "not a Sveltos v1beta1 field airlock-publisher knows; ignored".into(),
            });
        }
        Some(field) => match field.class.support() {
            Some(support) => {
                notes.insert(FieldNote { field: field.path.to_string(), support, detail: field.detail.to_string() });
            }
            None if field.subtree => {}
            None => walk(fields, value, path, notes),
        },
    }
}

/// Whether a field holds anything but its zero value.
fn is_set(value: &Value) -> bool {
    match value {
        Value::Null | Value::Bool(false) => false,
        Value::String(s) => !s.is_empty(),
        Value::Array(a) => !a.is_empty(),
        Value::Object(o) => !o.is_empty(),
        _ => true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn subtrees_cover_their_fields_and_others_only_themselves() {
        assert_eq!(lookup(PROFILE_FIELDS, "spec.helmCharts[].options.wait").map(|f| f.path), Some("spec.helmCharts[].options"));
        assert_eq!(lookup(PROFILE_FIELDS, "spec.policyRefs[].tier").map(|f| f.class), Some(table::Class::Supported));
        assert!(lookup(PROFILE_FIELDS, "spec.policyRefs[].newThing").is_none(), "a supported entry covers itself only");
        assert!(lookup(PROFILE_FIELDS, "spec.helmChartsX").is_none());
    }

    #[test]
    fn notes_name_unsupported_unknown_and_not_applicable_fields_once() {
        let notes = profile_notes(&json!({
            "helmCharts": [{"chartName": "a", "signatureVerification": {"provider": "Keyless"}}, {"chartName": "b", "provenanceVerification": {}}],
            "reloader": false, "continueOnError": true,
            "policyRefs": [{"kind": "ConfigMap", "name": "x", "force": true, "newThing": 1}],
            "validateHealths": [], "frobnicate": "yes",
        }));
        let fields: Vec<(&str, Support)> = notes.iter().map(|n| (n.field.as_str(), n.support)).collect();
        assert_eq!(
            fields,
            [
                ("spec.frobnicate", Support::NotSupported),
                ("spec.helmCharts[].signatureVerification", Support::NotSupported),
                ("spec.policyRefs[].newThing", Support::NotSupported),
            ]
        );
        assert!(notes[0].detail.contains("not a Sveltos v1beta1 field"), "{notes:?}");
    }
}
