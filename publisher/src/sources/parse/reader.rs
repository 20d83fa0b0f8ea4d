//! Reading a Kubernetes object's fields one at a time ([`Fields`], [`Metadata`]), so a
//! value of the wrong type is named by its path (`spec.policyRefs[2].tier`), and refusing
//! an object of another version than the one read ([`check_version`]).

use serde::de::DeserializeOwned;
use serde_json::{Map, Value};

use crate::sources::model::{ModelError, SVELTOS_VERSION};

/// The fields of one JSON object, read by name; errors name `at.<key>` of `object`.
pub struct Fields<'v> {
    map: Option<&'v Map<String, Value>>,
    /// The object's path: `spec`, `spec.policyRefs[2]`.
    at: String,
    /// The Kubernetes object, for messages: `ClusterProfile/web`.
    object: &'v str,
}

impl<'v> Fields<'v> {
    /// The fields of `value` at `at`; an error unless it is an object or absent.
    pub fn of(value: &'v Value, at: impl Into<String>, object: &'v str) -> Result<Fields<'v>, ModelError> {
        let at = at.into();
        match value {
            Value::Null => Ok(Fields { map: None, at, object }),
            Value::Object(map) => Ok(Fields { map: Some(map), at, object }),
            other => Err(field_error(object, &at, format!("expected an object, found {}", type_name(other)))),
        }
    }

    pub fn path(&self, key: &str) -> String {
        format!("{}.{key}", self.at)
    }

    pub fn raw(&self, key: &str) -> &'v Value {
        self.map.and_then(|m| m.get(key)).unwrap_or(&Value::Null)
    }

    /// The field as `T`; `None` when absent or null.
    pub fn get<T: DeserializeOwned>(&self, key: &str) -> Result<Option<T>, ModelError> {
        match self.raw(key) {
            Value::Null => Ok(None),
            value => T::deserialize(value).map(Some).map_err(|e| self.error(key, e.to_string())),
        }
    }

    /// The field as `T`, or `T`'s default when absent.
    pub fn or_default<T: DeserializeOwned + Default>(&self, key: &str) -> Result<T, ModelError> {
        Ok(self.get(key)?.unwrap_or_default())
    }

    /// Each item of an array field, with its own fields, index and path.
    pub fn items(&self, key: &str) -> Result<Vec<(usize, Fields<'v>)>, ModelError> {
        match self.raw(key) {
            Value::Null => Ok(Vec::new()),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .map(|(i, item)| Ok((i, Fields::of(item, format!("{}[{i}]", self.path(key)), self.object)?)))
                .collect(),
            other => Err(self.error(key, format!("expected a list, found {}", type_name(other)))),
        }
    }

    /// The fields of an object field.
    pub fn nested(&self, key: &str) -> Result<Fields<'v>, ModelError> {
        Fields::of(self.raw(key), self.path(key), self.object)
    }

    pub fn error(&self, key: &str, message: String) -> ModelError {
        field_error(self.object, &self.path(key), message)
    }

    /// An error about this object as a whole (`spec.policyRefs[2]`).
    pub fn own_error(&self, message: String) -> ModelError {
        field_error(self.object, &self.at, message)
    }
}

pub fn field_error(object: &str, field: &str, message: String) -> ModelError {
    ModelError::Field { object: object.to_string(), field: field.to_string(), message }
}

fn type_name(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "a list",
        Value::Object(_) => "an object",
    }
}

/// `metadata.name`, `metadata.namespace` and a label/annotation map of an object.
pub struct Metadata<'v> {
    pub name: &'v str,
    pub namespace: Option<&'v str>,
    pub fields: Fields<'v>,
}

impl<'v> Metadata<'v> {
    /// The metadata of `value`, named `kind` in messages until its name is known.
    pub fn of(value: &'v Value, kind: &'v str) -> Result<Metadata<'v>, ModelError> {
        let fields = Fields::of(&value["metadata"], "metadata", kind)?;
        let name = match fields.raw("name") {
            Value::String(name) if !name.is_empty() => name.as_str(),
            _ => return Err(ModelError::Malformed { object: kind.to_string(), message: "no metadata.name".into() }),
        };
        let namespace = fields.raw("namespace").as_str().filter(|n| !n.is_empty());
        Ok(Metadata { name, namespace, fields })
    }

    /// A string map such as `labels` or `annotations`.
    pub fn map(&self, key: &str) -> Result<std::collections::BTreeMap<String, String>, ModelError> {
        self.fields.or_default(key)
    }
}

/// Refuses an object of a Sveltos kind in another version than the one read.
pub fn check_version(value: &Value, object: &str) -> Result<(), ModelError> {
    let api_version = value["apiVersion"].as_str().unwrap_or_default();
    match api_version.rsplit_once('/') {
        Some((_, SVELTOS_VERSION)) => Ok(()),
        _ => Err(ModelError::Malformed {
            object: object.to_string(),
            message: format!("apiVersion {api_version}: airlock-publisher reads {} only; convert the object", SVELTOS_VERSION),
        }),
    }
}
