//! Source A: a directory of YAML and JSON files holding the same objects a management
//! cluster would (`--from-dir`), so a CI job can publish from a Git checkout.
//!
//! Every `.yaml`, `.yml` and `.json` file under the directory is read (hidden files and
//! directories such as `.git` are skipped), each document parsed with the limits of
//! `yaml`. Documents without apiVersion and kind (Helm values, say) are ignored; a
//! `kind: List` contributes its items, as `kubectl get -o yaml` writes them. Errors name
//! the file and the document (counted from 1).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use rayon::prelude::*;
use serde_json::Value;
use walkdir::WalkDir;

use super::inventory::{Inventory, ObjectKey, Reference, Resources, SourceError};
use crate::yaml::{MAX_INPUT_FILE_BYTES, parse_documents};

/// The objects of a directory, read once.
#[derive(Debug, Clone, Default)]
pub struct DirSource {
    /// Each object with where it was defined: `path document N`.
    objects: BTreeMap<ObjectKey, (Value, String)>,
}

impl DirSource {
    /// Reads every manifest file under `dir`.
    pub fn read(dir: &Path) -> Result<DirSource, SourceError> {
        let io = |path: &Path, e: &dyn std::fmt::Display| SourceError::Io { path: path.display().to_string(), message: e.to_string() };
        if !dir.is_dir() {
            return Err(io(dir, &"not a directory"));
        }
        let walk = WalkDir::new(dir).follow_links(false).sort_by_file_name().into_iter();
        let visible = walk.filter_entry(|e| e.depth() == 0 || !e.file_name().to_string_lossy().starts_with('.'));
        let mut files = Vec::new();
        for entry in visible {
            let entry = entry.map_err(|e| io(e.path().unwrap_or(dir), &e))?;
            let path = entry.path();
            let is_manifest = path.extension().is_some_and(|e| e == "yaml" || e == "yml" || e == "json");
            if !entry.file_type().is_file() || !is_manifest {
                continue;
            }
            let size = entry.metadata().map_err(|e| io(path, &e))?.len();
            if size > MAX_INPUT_FILE_BYTES {
                return Err(SourceError::TooLarge { path: path.display().to_string(), size, limit: MAX_INPUT_FILE_BYTES });
            }
            files.push(path.to_path_buf());
        }
        // Parsing is the slow part of a fleet's directory; files parse on every core and
        // are then taken in name order, so errors and duplicates are reported as before.
        let parsed: Vec<Result<(String, Vec<Value>), SourceError>> = files
            .par_iter()
            .map(|path| {
                let text = std::fs::read_to_string(path).map_err(|e| io(path, &e))?;
                let name = path.display().to_string();
                let docs = parse_documents(&text).map_err(|message| SourceError::Yaml { path: name.clone(), message })?;
                Ok((name, docs))
            })
            .collect();
        let mut source = DirSource::default();
        for file in parsed {
            let (path, docs) = file?;
            source.add_file(&path, docs)?;
        }
        tracing::debug!(dir = %dir.display(), objects = source.objects.len(), "read management objects");
        Ok(source)
    }

    fn add_file(&mut self, path: &str, docs: Vec<Value>) -> Result<(), SourceError> {
        for (i, doc) in docs.into_iter().enumerate() {
            let document = i + 1;
            let items = match doc.get("kind").and_then(Value::as_str) {
                Some("List") => match doc.get("items") {
                    Some(Value::Array(items)) => items.clone(),
                    _ => {
                        let message = "kind List without an items array".to_string();
                        return Err(SourceError::Document { path: path.to_string(), document, message });
                    }
                },
                _ => vec![doc],
            };
            for item in items {
                self.add_object(path, document, item)?;
            }
        }
        Ok(())
    }

    fn add_object(&mut self, path: &str, document: usize, value: Value) -> Result<(), SourceError> {
        let typed = value.get("apiVersion").is_some_and(Value::is_string) && value.get("kind").is_some_and(Value::is_string);
        if !typed {
            tracing::debug!(path, document, "no apiVersion and kind: not a Kubernetes object, ignored");
            return Ok(());
        }
        let Some(key) = ObjectKey::of(&value) else {
            let message = "Kubernetes object without metadata.name".to_string();
            return Err(SourceError::Document { path: path.to_string(), document, message });
        };
        let origin = format!("{path} document {document}");
        if let Some((_, first)) = self.objects.get(&key) {
            return Err(SourceError::Duplicate { object: key.to_string(), first: first.clone(), second: origin });
        }
        self.objects.insert(key, (value, origin));
        Ok(())
    }

    pub fn inventory(&self) -> Result<Inventory, SourceError> {
        Inventory::from_objects(self.objects.values().map(|(v, origin)| (origin.clone(), v)))
    }

    pub fn fetch(&self, wanted: &BTreeSet<Reference>) -> Resources {
        Resources(wanted.iter().filter_map(|r| self.objects.get(&r.key).map(|(v, _)| (r.key.clone(), v.clone()))).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) {
        let path = dir.join(name);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }

    const CLUSTER: &str =
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {name: c1, namespace: fleet}\nspec: {pullMode: true}\n";

    #[test]
    fn reads_files_lists_and_json_and_skips_the_rest() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "clusters.yaml", &format!("{CLUSTER}---\nreplicas: 3\n"));
        write(
            tmp.path(),
            "sub/list.yml",
            "apiVersion: v1\nkind: List\nitems:\n- {apiVersion: v1, kind: ConfigMap, metadata: {name: a, namespace: fleet}}\n",
        );
        write(
            tmp.path(),
            "profile.json",
            r#"{"apiVersion":"config.projectsveltos.io/v1beta1","kind":"ClusterProfile","metadata":{"name":"p"}}"#,
        );
        write(tmp.path(), ".git/config.yaml", "not: [valid");
        write(tmp.path(), "README.md", "# not read");
        let src = DirSource::read(tmp.path()).unwrap();
        let inv = src.inventory().unwrap();
        assert_eq!((inv.clusters.len(), inv.profiles.len()), (1, 1));
        let key = ObjectKey::new("v1", "ConfigMap", "fleet", "a");
        let wanted = BTreeSet::from([
            Reference { key: key.clone(), api_version: "v1".into() },
            Reference { key: ObjectKey::new("v1", "ConfigMap", "fleet", "missing"), api_version: "v1".into() },
        ]);
        assert_eq!(src.fetch(&wanted).0.keys().collect::<Vec<_>>(), vec![&key]);
    }

    #[test]
    fn errors_name_the_file_and_document() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "a.yaml", &format!("{CLUSTER}---\napiVersion: v1\nkind: ConfigMap\nmetadata: {{}}\n"));
        let err = DirSource::read(tmp.path()).unwrap_err();
        assert!(matches!(&err, SourceError::Document { path, document: 2, .. } if path.ends_with("a.yaml")), "{err}");

        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "a.yaml", CLUSTER);
        write(tmp.path(), "b.yaml", CLUSTER);
        let err = DirSource::read(tmp.path()).unwrap_err();
        assert!(
            matches!(&err, SourceError::Duplicate { first, second, .. } if first.contains("a.yaml") && second.contains("b.yaml")),
            "{err}"
        );

        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "bad.yaml", "a: [\n");
        let err = DirSource::read(tmp.path()).unwrap_err();
        assert!(matches!(&err, SourceError::Yaml { path, .. } if path.ends_with("bad.yaml")), "{err}");

        let tmp = tempfile::tempdir().unwrap();
        write(
            tmp.path(),
            "c.yaml",
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata: {name: UPPER, namespace: fleet}\n",
        );
        let err = DirSource::read(tmp.path()).unwrap().inventory().unwrap_err();
        assert!(matches!(&err, SourceError::Object { origin, .. } if origin.ends_with("c.yaml document 1")), "{err}");
    }
}
