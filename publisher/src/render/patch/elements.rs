//! kyaml's list primitives over a [`Tree`], and the `$patch` directive: the leaf of the
//! strategic merge.
//!
//! Each function ports one kyaml filter (`FieldMatcher`, `ElementMatcher`, `ElementSetter`)
//! with its quirks, since the merge's results depend on them: an `ElementSetter` drops the
//! list's null and empty-map items whatever it sets, and one given fewer values than keys
//! matches nothing and keeps nothing.

use super::tree::{Id, Kind, Tree};

/// Why a strategic merge patch failed, at a dotted path of the object.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MergeError {
    #[error("at `{path}` the object holds {object} and the patch {patch}")]
    KindMismatch { path: String, object: &'static str, patch: &'static str },
    #[error("at `{path}` a list item is {found}, where merging needs a map")]
    NotAMap { path: String, found: &'static str },
    #[error("at `{path}` a list of scalars holds {found}")]
    NotAScalar { path: String, found: &'static str },
    #[error("at `{path}`: unknown directive `$patch: {value}` (kustomize knows replace, delete and merge)")]
    UnknownDirective { path: String, value: String },
}

/// What a `$patch` directive asks of the map or list that holds it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Directive {
    Merge,
    Replace,
    Delete,
}

const DIRECTIVE: &str = "$patch";

pub(super) fn dotted(path: &[String]) -> String {
    if path.is_empty() { ".".to_string() } else { path.join(".") }
}

fn kind_name(tree: &Tree, id: Id) -> &'static str {
    tree.kind(id).map_or("null", Kind::name)
}

/// kyaml's `determineSmpDirective`: reads the directive of a patch map or list and removes
/// it from the patch. A list's directive is its first map item holding `$patch`, if that
/// item holds nothing else.
pub(super) fn directive(tree: &mut Tree, id: Id, path: &[String]) -> Result<Directive, MergeError> {
    if tree.is_map(id) {
        let Some(value) = tree.field(id, DIRECTIVE) else { return Ok(Directive::Merge) };
        let directive = parse_directive(tree.text(value), path)?;
        tree.remove_field(id, DIRECTIVE);
        return Ok(directive);
    }
    let Some(items) = tree.items(id) else { return Ok(Directive::Merge) };
    let Some(item) = items.iter().copied().find(|&item| tree.field(item, DIRECTIVE).is_some()) else {
        return Ok(Directive::Merge);
    };
    if tree.field_names(item).len() > 1 {
        return Ok(Directive::Merge);
    }
    let text = tree.text(tree.field(item, DIRECTIVE).expect("found above"));
    let directive = parse_directive(text.clone(), path)?;
    element_setter(tree, id, None, &[DIRECTIVE.to_string()], &[text], path)?;
    Ok(directive)
}

fn parse_directive(text: String, path: &[String]) -> Result<Directive, MergeError> {
    match text.as_str() {
        "merge" => Ok(Directive::Merge),
        "replace" => Ok(Directive::Replace),
        "delete" => Ok(Directive::Delete),
        _ => Err(MergeError::UnknownDirective { path: dotted(path), value: text }),
    }
}

/// kyaml's `FieldMatcher{Name, StringValue}` on a list item: the field's value when the
/// item has the field (with this text, unless `value` is empty). An empty `name` matches
/// a scalar item by its text.
pub(super) fn field_matcher(tree: &Tree, item: Id, name: &str, value: &str, path: &[String]) -> Result<Option<Id>, MergeError> {
    if tree.is_null(item) {
        return Ok(None);
    }
    if name.is_empty() {
        if tree.kind(item) != Some(Kind::Scalar) {
            return Err(MergeError::NotAScalar { path: dotted(path), found: kind_name(tree, item) });
        }
        return Ok((tree.text(item) == value).then_some(item));
    }
    if !tree.is_map(item) {
        return Err(MergeError::NotAMap { path: dotted(path), found: kind_name(tree, item) });
    }
    Ok(tree.field(item, name).filter(|&v| value.is_empty() || tree.text(v) == value))
}

/// kyaml's `ElementMatcher` (`ElementList`): the first item of a list whose fields `keys`
/// hold exactly the texts `values`; with no key, the first item with text `values[0]`.
pub(super) fn element_list(tree: &Tree, list: Id, keys: &[String], values: &[String]) -> Option<Id> {
    let items = tree.items(list)?;
    if keys.first().is_none_or(|k| k.is_empty()) {
        let wanted = values.first().map_or("", String::as_str);
        return items.iter().copied().find(|&item| tree.text(item) == wanted);
    }
    if keys.len() != values.len() {
        return None;
    }
    items.iter().copied().find(|&item| {
        tree.is_map(item) && keys.iter().zip(values).all(|(key, value)| tree.field(item, key).is_some_and(|f| tree.text(f) == *value))
    })
}

/// kyaml's `ElementSetter`: replaces the items matching `keys`/`values` with `element`, or
/// deletes them when there is none; appends `element` when nothing matched.
pub(super) fn element_setter(
    tree: &mut Tree,
    list: Id,
    element: Option<Id>,
    keys: &[String],
    values: &[String],
    path: &[String],
) -> Result<(), MergeError> {
    let no_key = [String::new()];
    let keys = if keys.is_empty() { &no_key[..] } else { keys };
    let mapping_setter = !keys[0].is_empty() && values.first().is_some_and(|v| !v.is_empty());
    let Some(items) = tree.items(list).map(<[Id]>::to_vec) else {
        return Err(MergeError::KindMismatch { path: dotted(path), object: kind_name(tree, list), patch: "a list" });
    };
    let mut kept = Vec::with_capacity(items.len() + 1);
    let mut matched_any = false;
    for item in items {
        if tree.is_null(item) || tree.is_empty_map(item) {
            continue;
        }
        if !tree.is_map(item) && mapping_setter {
            kept.push(item);
            continue;
        }
        let mut matched = None;
        let mut found = true;
        for (j, key) in keys.iter().enumerate() {
            if let Some(value) = values.get(j) {
                matched = field_matcher(tree, item, key, value, path)?;
            }
            if matched.is_none() {
                found = false;
                break;
            }
        }
        if !found {
            if !values.is_empty() {
                kept.push(item);
            }
            continue;
        }
        matched_any = true;
        kept.extend(element);
    }
    if let Some(element) = element.filter(|&e| !tree.is_null(e) && !matched_any) {
        kept.push(element);
    }
    *tree.items_mut(list).expect("checked above") = kept;
    Ok(())
}
