//! Lists the schema merges by key (kyaml's `walkAssociativeSequence`): containers by
//! `name`, ports by `containerPort` and `protocol`, finalizers by value.
//!
//! The order is kustomize's, which prepends: items of the patch first, in the patch's
//! order, then the object's other items. Items match on every merge key the list's items
//! use (`protocol` counts once any item names one, though an item without it still matches
//! an item that has it: kyaml's `mergeValues`). An item that merges to nothing (`$patch:
//! delete`) leaves the list. The merge of each pair of items is the caller's [`Walk`].

use std::collections::BTreeSet;

use super::elements::{Directive, MergeError, directive, element_list, element_setter, field_matcher};
use super::schema::Schema;
use super::style;
use super::tree::{Id, Node, Tree};

/// Merges one pair of nodes (object side, patch side) under a schema.
pub(super) type Walk = fn(&mut Tree, Option<Id>, Option<Id>, Option<Schema>, &mut Vec<String>) -> Result<Option<Id>, MergeError>;

/// Merges a list whose schema gives these merge keys (none: a list of scalars).
pub(super) fn merge(
    tree: &mut Tree,
    dest: Option<Id>,
    origin: Option<Id>,
    schema: Schema,
    keys: &[&str],
    path: &mut Vec<String>,
    walk: Walk,
) -> Result<Option<Id>, MergeError> {
    let dest = match dest.filter(|&d| !tree.is_null(d)) {
        None => origin,
        Some(d) => match origin {
            Some(o) if tree.is_null(o) => return Ok(None),
            Some(o) => match directive(tree, o, path)? {
                Directive::Delete => return Ok(None),
                Directive::Replace => Some(o),
                Directive::Merge => Some(d),
            },
            None => Some(d),
        },
    };
    let Some(dest) = dest else { return Ok(None) };
    let list = List { dest, origin, items: schema.elements() };
    let keys: Vec<String> = keys.iter().map(|k| k.to_string()).collect();
    let values = list.key_values(tree, &keys);
    if !values.is_empty() || !keys.is_empty() {
        list.set_items(tree, values, &keys, path, walk)
    } else {
        list.set_items(tree, list.scalar_values(tree), &[String::new()], path, walk)
    }
}

/// The two sides of a list merge, after the patch's directive has had its say.
struct List {
    dest: Id,
    origin: Option<Id>,
    items: Option<Schema>,
}

impl List {
    /// kyaml's `elementValues`: each item's merge-key texts, patch first, without repeats.
    fn key_values(&self, tree: &Tree, keys: &[String]) -> Vec<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for list in self.origin.into_iter().chain([self.dest]) {
            for &item in tree.items(list).unwrap_or_default() {
                let values: Vec<String> = keys
                    .iter()
                    .map(|k| tree.field(item, k).filter(|&v| !tree.is_nil_or_empty(v)).map(|v| tree.text(v)).unwrap_or_default())
                    .collect();
                if !values.is_empty() && seen.insert(values.clone()) {
                    out.push(values);
                }
            }
        }
        out
    }

    /// kyaml's `elementPrimitiveValues`: the items' texts, patch first, without repeats.
    fn scalar_values(&self, tree: &Tree) -> Vec<Vec<String>> {
        let mut seen = BTreeSet::new();
        let mut out = Vec::new();
        for list in self.origin.into_iter().chain([self.dest]) {
            for &item in tree.items(list).unwrap_or_default() {
                let text = tree.text(item);
                if seen.insert(text.clone()) {
                    out.push(vec![text]);
                }
            }
        }
        out
    }

    /// kyaml's `setAssociativeSequenceElements`.
    fn set_items(
        &self,
        tree: &mut Tree,
        mut values_list: Vec<Vec<String>>,
        keys: &[String],
        path: &mut Vec<String>,
        walk: Walk,
    ) -> Result<Option<Id>, MergeError> {
        let merged = tree.push(Node::Seq(Vec::new()));
        if keys.len() > 1 {
            merge_values(&mut values_list);
        }
        let mut valid_keys = keys.to_vec();
        for values in &values_list {
            if values.is_empty() {
                continue;
            }
            let valid_values;
            (valid_keys, valid_values) = validate_keys(&values_list, values, keys);
            let (match_keys, match_values) = validate_keys(std::slice::from_ref(&valid_values), &valid_values, &valid_keys);
            let dest_item = element_list(tree, self.dest, &match_keys, &match_values);
            let origin_item = self.origin.and_then(|o| element_list(tree, o, &match_keys, &match_values));
            let item = walk(tree, dest_item, origin_item, self.items, path)?;
            let Some(item) = item.filter(|&i| !tree.is_null(i) && !tree.is_empty_map(i)) else {
                element_setter(tree, self.dest, None, &valid_keys, &valid_values, path)?;
                continue;
            };
            for (key, value) in valid_keys.iter().zip(&valid_values) {
                if value.is_empty() || tree.field(item, key).is_some() {
                    continue;
                }
                // kyaml's `SetField`: a keyed item gets its key back; an item of a list of
                // scalars is set to itself. Either fails on an item of the wrong kind.
                if !key.is_empty() && tree.is_map(item) {
                    let scalar = tree.push(Node::Scalar { value: style::plain_value(value), quoted: false });
                    tree.set_field(item, key, Some(scalar));
                } else {
                    field_matcher(tree, item, key, "", path)?;
                }
            }
            element_setter(tree, merged, Some(item), &valid_keys, &valid_values, path)?;
        }
        if values_list.is_empty() {
            return Ok(Some(self.dest));
        }
        append_list_node(tree, merged, self.dest, &valid_keys, path)?;
        Ok(Some(merged))
    }
}

/// kyaml's `appendListNode`: sets each item of `source` into `target` by its key texts,
/// appending items that lack a key.
fn append_list_node(tree: &mut Tree, target: Id, source: Id, keys: &[String], path: &[String]) -> Result<(), MergeError> {
    let items = tree.items(source).map(<[Id]>::to_vec).unwrap_or_default();
    for item in items {
        if keys[0].is_empty() {
            let text = tree.text(item);
            element_setter(tree, target, Some(item), &[String::new()], &[text], path)?;
            continue;
        }
        let mut values = Vec::new();
        for key in keys {
            match field_matcher(tree, item, key, "", path)? {
                Some(value) => values.push(tree.text(value)),
                None => tree.items_mut(target).expect("a list").push(item),
            }
        }
        if keys.len() > 1 {
            element_setter(tree, target, None, keys, &values, path)?;
        }
        element_setter(tree, target, Some(item), keys, &values, path)?;
    }
    Ok(())
}

/// kyaml's `validateKeys`: the keys some item of `values_list` gives a value, and this
/// item's values for them; all of them when no item gives any.
fn validate_keys(values_list: &[Vec<String>], values: &[String], keys: &[String]) -> (Vec<String>, Vec<String>) {
    let used: BTreeSet<&str> =
        values_list.iter().flat_map(|vs| vs.iter().zip(keys).filter(|(v, _)| !v.is_empty()).map(|(_, k)| k.as_str())).collect();
    if used.is_empty() {
        return (keys.to_vec(), values.to_vec());
    }
    let valid_keys = keys.iter().filter(|k| used.contains(k.as_str())).cloned().collect();
    let valid_values =
        values.iter().zip(keys).filter(|(v, k)| !v.is_empty() || used.contains(k.as_str())).map(|(v, _)| v.clone()).collect();
    (valid_keys, valid_values)
}

/// kyaml's `mergeValues`: key tuples that agree wherever both have a value are one item.
fn merge_values(values_list: &mut [Vec<String>]) {
    for i in 0..values_list.len() {
        let first = values_list[i].clone();
        for j in 0..values_list.len() {
            if let Some(merged) = agree(&first, &values_list[j]) {
                values_list[i] = merged.clone();
                values_list[j] = merged;
            }
        }
    }
}

/// kyaml's `match`: two tuples with a common value, differing only where one is empty.
fn agree(a: &[String], b: &[String]) -> Option<Vec<String>> {
    if a.len() != b.len() {
        return None;
    }
    let mut common = false;
    let mut merged = Vec::with_capacity(a.len());
    for (x, y) in a.iter().zip(b) {
        if x == y {
            common = true;
            merged.push(x.clone());
        } else if !x.is_empty() && !y.is_empty() {
            return None;
        } else {
            merged.push(if x.is_empty() { y.clone() } else { x.clone() });
        }
    }
    common.then_some(merged)
}
