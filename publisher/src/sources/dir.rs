//! Source A: a directory of YAML and JSON files holding the same objects a management
//! cluster would (`--from-dir`), so a CI job can publish from a Git checkout.
//!
//! Every `.yaml`, `.yml` and `.json` file under the directory is read (hidden files and
//! directories such as `.git` are skipped), each document parsed with the limits of
//! `yaml`. Documents without apiVersion and kind (Helm values, say) are ignored; a
//! `kind: List` contributes its items, as `kubectl get -o yaml` writes them.
//!
//! One unreadable file or document is an error for what it touches, never for the whole
//! fleet: a file that does not parse is read again document by document, and a document
//! that still does not is recorded as broken, with the object it seems to be when its
//! `kind` and `metadata.name` lines say (`guess`). An object defined twice is broken in
//! both places. Errors name the file and the document (counted from 1).

mod guess;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;
use serde_json::Value;
use walkdir::WalkDir;

use super::broken::{Broken, Touches};
use super::inventory::{Inventory, Resources, SourceError};
use super::key::{ObjectKey, Reference};
use crate::yaml::{MAX_INPUT_FILE_BYTES, parse_documents, split_documents};

/// The objects of a directory, read once.
#[derive(Debug, Clone, Default)]
pub struct DirSource {
    /// Each object with where it was defined: `path document N`.
    objects: BTreeMap<ObjectKey, (Value, String)>,
    /// Objects defined more than once, with where.
    duplicates: BTreeMap<ObjectKey, Vec<String>>,
    broken: Vec<Broken>,
}

/// One document of a file, numbered from 1: its value, or why it does not parse and what
/// it seems to be.
type Document = (usize, Result<Value, (String, Touches)>);
/// One file's documents, or why the whole file could not be read.
type ReadFile = (String, Result<Vec<Document>, String>);

impl DirSource {
    /// Reads every manifest file under `dir`. Only a directory that cannot be read at all
    /// is an error.
    pub fn read(dir: &Path) -> Result<DirSource, SourceError> {
        let io = |path: &Path, e: &dyn std::fmt::Display| SourceError::Io { path: path.display().to_string(), message: e.to_string() };
        if !dir.is_dir() {
            return Err(io(dir, &"not a directory"));
        }
        let mut source = DirSource::default();
        let walk = WalkDir::new(dir).follow_links(false).sort_by_file_name().into_iter();
        let visible = walk.filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        let mut files = Vec::new();
        for entry in visible {
            let entry = match entry {
                Ok(entry) => entry,
                Err(e) if e.depth() == 0 => return Err(io(dir, &e)),
                Err(e) => {
                    source.unreadable(e.path().unwrap_or(dir).display().to_string(), e.to_string());
                    continue;
                }
            };
            let path = entry.path();
            let is_manifest = path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
            if !entry.file_type().is_file() || !is_manifest {
                continue;
            }
            match entry.metadata() {
                Ok(m) if m.len() > MAX_INPUT_FILE_BYTES => {
                    source.unreadable(path.display().to_string(), format!("{} bytes, over the limit of {MAX_INPUT_FILE_BYTES}", m.len()))
                }
                Ok(_) => files.push(path.to_path_buf()),
                Err(e) => source.unreadable(path.display().to_string(), e.to_string()),
            }
        }
        // Parsing is the slow part of a fleet's directory; files parse on every core and
        // are then taken in name order, so errors and duplicates are reported in order.
        let parsed: Vec<ReadFile> = files
            .par_iter()
            .map(|path| {
                let name = path.display().to_string();
                let docs = std::fs::read_to_string(path).map_err(|e| e.to_string()).map(|text| documents(&text));
                (name, docs)
            })
            .collect();
        for (path, docs) in parsed {
            match docs {
                Ok(docs) => source.add_file(&path, docs),
                Err(message) => source.unreadable(path, message),
            }
        }
        source.mark_duplicates();
        tracing::debug!(dir = %dir.display(), objects = source.objects.len(), broken = source.broken.len(), "read management objects");
        Ok(source)
    }

    /// A file or directory entry that could not be read at all.
    fn unreadable(&mut self, path: String, message: String) {
        self.broken.push(Broken { origin: path, what: Touches::Unknown, message });
    }

    fn add_file(&mut self, path: &str, docs: Vec<Document>) {
        for (document, doc) in docs {
            let origin = format!("{path} document {document}");
            let doc = match doc {
                Ok(doc) => doc,
                Err((message, what)) => {
                    self.broken.push(Broken { origin, what, message: format!("not valid YAML: {message}") });
                    continue;
                }
            };
            let items = match doc.get("kind").and_then(Value::as_str) {
                Some("List") => match doc.get("items") {
                    Some(Value::Array(items)) => items.clone(),
                    _ => {
                        self.broken.push(Broken { origin, what: Touches::Unknown, message: "kind List without an items array".into() });
                        continue;
                    }
                },
                _ => vec![doc],
            };
            for item in items {
                self.add_object(&origin, item);
            }
        }
    }

    fn add_object(&mut self, origin: &str, value: Value) {
        let typed = value.get("apiVersion").is_some_and(Value::is_string) && value.get("kind").is_some_and(Value::is_string);
        if !typed {
            tracing::debug!(origin, "no apiVersion and kind: not a Kubernetes object, ignored");
            return;
        }
        let Some(key) = ObjectKey::of(&value) else {
            let message = "Kubernetes object without metadata.name".to_string();
            self.broken.push(Broken { origin: origin.to_string(), what: Touches::Unknown, message });
            return;
        };
        if let Some(places) = self.duplicates.get_mut(&key) {
            places.push(origin.to_string());
        } else if let Some((_, first)) = self.objects.get(&key) {
            self.duplicates.insert(key, vec![first.clone(), origin.to_string()]);
        } else {
            self.objects.insert(key, (value, origin.to_string()));
        }
    }

    /// An object defined twice is used nowhere: which copy was meant cannot be told.
    fn mark_duplicates(&mut self) {
        for (key, places) in &self.duplicates {
            let (value, _) = self.objects.remove(key).expect("a duplicate was defined first");
            self.broken.push(Broken {
                origin: places[1].clone(),
                what: guess::touches(&key_identity(&value, key)),
                message: format!("{key} is defined twice: in {}", places.join(" and in ")),
            });
        }
    }

    pub fn inventory(&self) -> Inventory {
        let mut inventory = Inventory::from_objects(self.objects.values().map(|(v, origin)| (origin.clone(), v)));
        inventory.broken.splice(0..0, self.broken.iter().cloned());
        inventory
    }

    pub fn fetch(&self, wanted: &BTreeSet<Reference>) -> Resources {
        let found =
            wanted.iter().filter_map(|r| self.objects.get(&self.held_as(&r.key)).map(|(v, _)| (r.key.clone(), v.clone()))).collect();
        let failed = wanted
            .iter()
            .filter_map(|r| {
                let why = self.broken.iter().find(|b| b.what == Touches::Object(self.held_as(&r.key)))?;
                Some((r.key.clone(), why.to_string()))
            })
            .collect();
        Resources::new(found, failed)
    }

    /// The key under which the directory holds what `key` asks for. Sveltos asks for a
    /// cluster-scoped object (a Namespace) by name alone, whatever namespace the profile
    /// defaulted for the reference; a directory does not say which kinds are cluster-scoped,
    /// so a kind of which it holds no object with a namespace is taken to be one.
    fn held_as(&self, key: &ObjectKey) -> ObjectKey {
        if key.namespace.is_empty() || self.objects.contains_key(key) {
            return key.clone();
        }
        let bare = ObjectKey { namespace: String::new(), ..key.clone() };
        if !self.objects.contains_key(&bare) {
            return key.clone();
        }
        let same_kind = |k: &&ObjectKey| k.group == key.group && k.kind == key.kind;
        let namespaced = self.objects.range(&bare..).map(|(k, _)| k).take_while(same_kind).any(|k| !k.namespace.is_empty());
        if namespaced { key.clone() } else { bare }
    }
}

/// A file's non-empty documents, numbered from 1. A stream that does not parse as a whole
/// is split at its `---` lines and each piece parsed alone, so one bad document does not
/// take the others with it; a piece that does not parse comes with what it seems to be.
fn documents(text: &str) -> Vec<Document> {
    match parse_documents(text) {
        Ok(docs) => docs.into_iter().enumerate().map(|(i, d)| (i + 1, Ok(d))).collect(),
        Err(_) => {
            let mut out = Vec::new();
            for piece in split_documents(text) {
                match parse_documents(piece) {
                    Ok(docs) => out.extend(docs.into_iter().map(Ok)),
                    Err(message) => out.push(Err((message, guess::touches(&guess::identity(piece))))),
                }
            }
            out.into_iter().enumerate().map(|(i, d)| (i + 1, d)).collect()
        }
    }
}

/// What an object that parsed is, for [`guess::touches`].
fn key_identity(value: &Value, key: &ObjectKey) -> guess::Identity {
    guess::Identity {
        api_version: value["apiVersion"].as_str().unwrap_or_default().to_string(),
        kind: key.kind.clone(),
        namespace: key.namespace.clone(),
        name: key.name.clone(),
    }
}

#[cfg(test)]
mod tests;
