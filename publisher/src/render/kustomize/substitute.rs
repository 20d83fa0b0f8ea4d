//! What Sveltos does to kustomize's output for one cluster: instantiate every object with
//! the ref's substitution values, then set `targetNamespace`.
//!
//! With a non-empty value map, each object's YAML as kustomize printed it is run as a Go
//! template with the map as dot (`{{ .Region }}`, `{{ default "west" .Region }}`),
//! `missingkey=error` and Sveltos's functions, then read (addon-controller's
//! `getKustomizedResources` templates each resource's YAML). With an empty map the objects
//! are used as they are: no templating at all. `targetNamespace`
//! is set on every object, cluster-scoped ones included, as Sveltos stages them in pull
//! mode; the puller leaves the namespace out for cluster-scoped kinds.
//!
//! The map itself (Sveltos's `values` and `valuesFrom`, templated with the cluster's data)
//! is the caller's.

use std::collections::BTreeMap;

use serde_json::Value;

use super::error::KustomizeError;
use crate::render::template::{TemplateSource, render};

/// A build's output: each object's text, and the objects read from it.
#[derive(Debug)]
pub(super) struct Built {
    texts: Vec<String>,
    objects: Vec<Value>,
}

impl Built {
    pub(super) fn of(output: &str, origin: &str) -> Result<Built, KustomizeError> {
        let (mut texts, mut objects) = (Vec::new(), Vec::new());
        for text in crate::yaml::split_documents(output) {
            let object = one_object(text).map_err(|message| KustomizeError::Manifest { origin: origin.into(), message })?;
            texts.push(text.to_string());
            objects.push(object);
        }
        Ok(Built { texts, objects })
    }
}

fn one_object(text: &str) -> Result<Value, String> {
    let mut docs = crate::yaml::parse_documents(text)?;
    match docs.len() {
        1 if docs[0].is_object() => Ok(docs.remove(0)),
        n => Err(format!("a document holds {n} values, not one object")),
    }
}

/// The objects for one cluster.
pub(super) fn instantiate(
    built: &Built,
    values: &BTreeMap<String, String>,
    target_namespace: Option<&str>,
    origin: &str,
) -> Result<Vec<Value>, KustomizeError> {
    let data = Value::Object(values.iter().map(|(k, v)| (k.clone(), Value::String(v.clone()))).collect());
    let mut out = Vec::with_capacity(built.objects.len());
    for (text, object) in built.texts.iter().zip(&built.objects) {
        let mut object = if values.is_empty() { object.clone() } else { instantiate_one(text, object, &data, origin)? };
        if let Some(ns) = target_namespace
            && let Some(metadata) = object.get_mut("metadata").and_then(Value::as_object_mut)
        {
            metadata.insert("namespace".into(), ns.into());
        }
        out.push(object);
    }
    Ok(out)
}

fn instantiate_one(text: &str, object: &Value, data: &Value, origin: &str) -> Result<Value, KustomizeError> {
    let shown = describe(object);
    let fail = |message: String| KustomizeError::Substitution { origin: origin.into(), object: shown.clone(), message };
    let source = TemplateSource { profile: origin, resource: "kustomize output", key: &shown };
    let rendered = render(&source, text, data).map_err(|e| fail(e.to_string()))?;
    one_object(&rendered).map_err(fail)
}

/// `Deployment default/web`.
fn describe(object: &Value) -> String {
    let field = |p: &str| object.pointer(p).and_then(Value::as_str).unwrap_or("");
    let ns = field("/metadata/namespace");
    let name = if ns.is_empty() { field("/metadata/name").to_string() } else { format!("{ns}/{}", field("/metadata/name")) };
    format!("{} {name}", field("/kind"))
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEPLOYMENT: &str = "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  labels:\n    region: '{{ default \"west\" .Region }}'\n  name: web\nspec:\n  template:\n    spec:\n      containers:\n      - image: nginx:{{ .Version }}\n        name: c\n";

    fn built() -> Built {
        Built::of(&format!("{DEPLOYMENT}---\n{DEPLOYMENT}"), "o").expect("parses")
    }

    #[test]
    fn instantiates_each_object_with_the_values() {
        let values = BTreeMap::from([("Region".to_string(), "east".to_string()), ("Version".to_string(), "v1.2.0".to_string())]);
        let out = instantiate(&built(), &values, Some("production"), "ClusterProfile/k").expect("instantiates");
        assert_eq!(out[0]["metadata"]["labels"]["region"], "east");
        assert_eq!(out[0]["spec"]["template"]["spec"]["containers"][0]["image"], "nginx:v1.2.0");
        assert_eq!(out[0]["metadata"]["namespace"], "production");
        let empty_region = BTreeMap::from([("Region".to_string(), String::new()), ("Version".to_string(), "v1".to_string())]);
        let out = instantiate(&built(), &empty_region, None, "o").expect("instantiates");
        assert_eq!(out[0]["metadata"]["labels"]["region"], "west");
    }

    #[test]
    fn leaves_objects_alone_without_values() {
        let out = instantiate(&built(), &BTreeMap::new(), None, "o").expect("no templating");
        assert_eq!(out, built().objects);
        assert_eq!(out[1]["metadata"]["labels"]["region"], "{{ default \"west\" .Region }}");
    }

    #[test]
    fn rejects_a_missing_value() {
        let values = BTreeMap::from([("Region".to_string(), "east".to_string())]);
        let err = instantiate(&built(), &values, None, "ClusterProfile/k").unwrap_err();
        assert!(
            matches!(&err, KustomizeError::Substitution { object, message, .. } if object == "Deployment web" && message.contains("Version")),
            "{err}"
        );
    }
}
