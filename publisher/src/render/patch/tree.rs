//! The node graph a strategic merge runs on: kyaml's YAML nodes, as an arena.
//!
//! kustomize merges by moving node pointers: a merged list holds some of the object's own
//! element nodes, changed in place, and some of the patch's. Porting that faithfully needs
//! node identity, so object and patch are loaded into one [`Tree`] and the merge works on
//! [`Id`]s; [`Tree::value`] reads the result back out. Only kyaml's field setter, with its
//! quoting rule, lives here; what merges with what is the walk's business.

use serde_json::{Map, Value};

use super::style;

/// A node of a [`Tree`].
pub(super) type Id = usize;

pub(super) enum Node {
    /// A null in the data (YAML's `!!null`): to the merge, a missing value.
    Null,
    /// A scalar. `quoted` when yaml.v3 writes it in quotes: a value that replaces it takes
    /// the quotes on. `Value::Null` here is a null the merge kept (kyaml's untagged `null`).
    Scalar {
        value: Value,
        quoted: bool,
    },
    Map(Vec<(String, Id)>),
    Seq(Vec<Id>),
}

/// A node's YAML kind; nulls have none.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Kind {
    Map,
    Seq,
    Scalar,
}

impl Kind {
    pub(super) fn name(self) -> &'static str {
        match self {
            Kind::Map => "a map",
            Kind::Seq => "a list",
            Kind::Scalar => "a scalar",
        }
    }
}

#[derive(Default)]
pub(super) struct Tree {
    nodes: Vec<Node>,
}

impl Tree {
    /// Loads a JSON value, returning its root.
    pub(super) fn add(&mut self, value: &Value) -> Id {
        let node = match value {
            Value::Null => Node::Null,
            Value::String(s) => Node::Scalar { value: value.clone(), quoted: style::quoted(s) },
            Value::Bool(_) | Value::Number(_) => Node::Scalar { value: value.clone(), quoted: false },
            Value::Array(items) => Node::Seq(items.iter().map(|v| self.add(v)).collect()),
            Value::Object(map) => Node::Map(map.iter().map(|(k, v)| (k.clone(), self.add(v))).collect()),
        };
        self.push(node)
    }

    pub(super) fn push(&mut self, node: Node) -> Id {
        self.nodes.push(node);
        self.nodes.len() - 1
    }

    /// The JSON value of the graph below `id`.
    pub(super) fn value(&self, id: Id) -> Value {
        match &self.nodes[id] {
            Node::Null => Value::Null,
            Node::Scalar { value, .. } => value.clone(),
            Node::Map(fields) => Value::Object(fields.iter().map(|(k, v)| (k.clone(), self.value(*v))).collect::<Map<_, _>>()),
            Node::Seq(items) => Value::Array(items.iter().map(|v| self.value(*v)).collect()),
        }
    }

    /// kyaml's `IsMissingOrNull` for a present node.
    pub(super) fn is_null(&self, id: Id) -> bool {
        matches!(self.nodes[id], Node::Null)
    }

    pub(super) fn kind(&self, id: Id) -> Option<Kind> {
        match self.nodes[id] {
            Node::Null => None,
            Node::Scalar { .. } => Some(Kind::Scalar),
            Node::Map(_) => Some(Kind::Map),
            Node::Seq(_) => Some(Kind::Seq),
        }
    }

    pub(super) fn is_map(&self, id: Id) -> bool {
        matches!(self.nodes[id], Node::Map(_))
    }

    pub(super) fn is_empty_map(&self, id: Id) -> bool {
        matches!(&self.nodes[id], Node::Map(fields) if fields.is_empty())
    }

    /// kyaml's `IsNilOrEmpty`: null, or an empty map or list.
    pub(super) fn is_nil_or_empty(&self, id: Id) -> bool {
        match &self.nodes[id] {
            Node::Null => true,
            Node::Map(fields) => fields.is_empty(),
            Node::Seq(items) => items.is_empty(),
            Node::Scalar { .. } => false,
        }
    }

    /// A node's text (the YAML node's `Value`): a scalar as written, nothing for a map or
    /// list. kyaml compares merge keys by this text, so `80` and `"80"` are one key.
    pub(super) fn text(&self, id: Id) -> String {
        match &self.nodes[id] {
            Node::Null => "null".to_string(),
            Node::Scalar { value, .. } => scalar_text(value),
            Node::Map(_) | Node::Seq(_) => String::new(),
        }
    }

    /// The value of a map's field; `None` for a missing field or a node that is no map.
    pub(super) fn field(&self, id: Id, name: &str) -> Option<Id> {
        match &self.nodes[id] {
            Node::Map(fields) => fields.iter().find(|(k, _)| k == name).map(|(_, v)| *v),
            _ => None,
        }
    }

    pub(super) fn field_names(&self, id: Id) -> Vec<String> {
        match &self.nodes[id] {
            Node::Map(fields) => fields.iter().map(|(k, _)| k.clone()).collect(),
            _ => Vec::new(),
        }
    }

    /// A list's items; `None` for a node that is no list.
    pub(super) fn items(&self, id: Id) -> Option<&[Id]> {
        match &self.nodes[id] {
            Node::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub(super) fn items_mut(&mut self, id: Id) -> Option<&mut Vec<Id>> {
        match &mut self.nodes[id] {
            Node::Seq(items) => Some(items),
            _ => None,
        }
    }

    pub(super) fn remove_field(&mut self, id: Id, name: &str) {
        if let Node::Map(fields) = &mut self.nodes[id] {
            fields.retain(|(k, _)| k != name);
        }
    }

    /// kyaml's `FieldSetter` on a map: a missing or null value clears the field; a value
    /// replacing a scalar takes its quotes on, so a number over a quoted string becomes a
    /// string.
    pub(super) fn set_field(&mut self, id: Id, name: &str, value: Option<Id>) {
        let Some(value) = value.filter(|v| !self.is_null(*v)) else {
            self.remove_field(id, name);
            return;
        };
        let old = self.field(id, name);
        if let Some(old) = old.filter(|old| *old != value) {
            self.inherit_quotes(old, value);
        }
        if let Node::Map(fields) = &mut self.nodes[id] {
            match fields.iter_mut().find(|(k, _)| k == name) {
                Some(field) => field.1 = value,
                None => fields.push((name.to_string(), value)),
            }
        }
    }

    fn inherit_quotes(&mut self, old: Id, new: Id) {
        if !matches!(self.nodes[old], Node::Scalar { quoted: true, .. }) {
            return;
        }
        if let Node::Scalar { value, quoted } = &mut self.nodes[new] {
            if matches!(value, Value::Bool(_) | Value::Number(_)) {
                *value = Value::String(scalar_text(value));
            }
            *quoted = true;
        }
    }
}

/// A scalar's text as yaml.v3 writes it.
pub(super) fn scalar_text(value: &Value) -> String {
    match value {
        Value::String(s) => s.clone(),
        Value::Null => "null".to_string(),
        other => other.to_string(),
    }
}

/// A value's text as kyaml's `GetValue` reads it: a scalar's text, nothing for a map or
/// a list.
pub(super) fn value_text(value: &Value) -> String {
    match value {
        Value::Object(_) | Value::Array(_) => String::new(),
        scalar => scalar_text(scalar),
    }
}
