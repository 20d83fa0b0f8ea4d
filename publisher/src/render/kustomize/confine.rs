//! Keeps a kustomization inside its source tree before kustomize reads it.
//!
//! Sveltos builds with `LoadRestrictionsNone`, which lets a kustomization reach files
//! outside its own directory: overlays need `../base`. It also lets one read any file the
//! builder can (`configMapGenerator: [{files: [/etc/airlock/signing.key]}]`) and fetch
//! remote bases (`github.com/org/repo//path?ref=v1`). The publisher holds the signing keys,
//! so every file reference of every kustomization file in the tree is checked first: it
//! must be relative, stay inside the source tree after `..` is resolved, and name
//! something that exists there (a reference to nothing would be tried as a URL). Symbolic
//! links never exist in a tree (`tree`), so the lexical check is the real one.

use std::path::{Component, Path, PathBuf};

use serde_json::Value;

use super::error::{KustomizeError, io_error};

/// The file names kustomize reads a kustomization from.
const KUSTOMIZATION_FILES: [&str; 3] = ["kustomization.yaml", "kustomization.yml", "Kustomization"];

/// Checks every kustomization file under `root`.
pub(super) fn check_tree(root: &Path, origin: &str) -> Result<(), KustomizeError> {
    for entry in walkdir::WalkDir::new(root) {
        let entry = entry.map_err(|e| io_error(root, e))?;
        let name = entry.file_name().to_string_lossy();
        if entry.file_type().is_file() && KUSTOMIZATION_FILES.contains(&name.as_ref()) {
            check_file(root, entry.path(), origin)?;
        }
    }
    Ok(())
}

/// Each file reference of one kustomization file: (field, entry).
fn references(doc: &Value) -> Vec<(String, String)> {
    let mut out = Vec::new();
    let mut strings = |field: &str, value: &Value| match value {
        Value::String(s) => out.push((field.to_string(), s.clone())),
        Value::Array(items) => out.extend(items.iter().filter_map(Value::as_str).map(|s| (field.to_string(), s.to_string()))),
        _ => {}
    };
    for field in ["resources", "bases", "components", "crds", "configurations", "generators", "transformers", "validators"] {
        strings(field, &doc[field]);
    }
    // An entry with a line break is an inline patch, not a file.
    if let Some(items) = doc["patchesStrategicMerge"].as_array() {
        for item in items.iter().filter_map(Value::as_str).filter(|s| !s.contains('\n')) {
            strings("patchesStrategicMerge", &Value::String(item.into()));
        }
    }
    for field in ["patches", "patchesJson6902", "replacements"] {
        for item in doc[field].as_array().into_iter().flatten() {
            strings(&format!("{field}[].path"), &item["path"]);
        }
    }
    strings("openapi.path", &doc["openapi"]["path"]);
    for field in ["configMapGenerator", "secretGenerator"] {
        for item in doc[field].as_array().into_iter().flatten() {
            for file in item["files"].as_array().into_iter().flatten().filter_map(Value::as_str) {
                // `key=path` names the data key; the path follows the first `=`.
                let path = file.split_once('=').map_or(file, |(_, p)| p);
                strings(&format!("{field}[].files"), &Value::String(path.into()));
            }
            strings(&format!("{field}[].envs"), &item["envs"]);
            strings(&format!("{field}[].env"), &item["env"]);
        }
    }
    out
}

fn check_file(root: &Path, file: &Path, origin: &str) -> Result<(), KustomizeError> {
    let text = std::fs::read_to_string(file).map_err(|e| io_error(file, e))?;
    let shown = file.strip_prefix(root).unwrap_or(file).display().to_string();
    let docs = crate::yaml::parse_documents(&text)
        .map_err(|message| KustomizeError::Manifest { origin: origin.into(), message: format!("{shown}: {message}") })?;
    let dir = file.parent().expect("a file has a directory");
    for doc in &docs {
        for (field, entry) in references(doc) {
            let refuse = |reason: &str| KustomizeError::Escape {
                origin: origin.into(),
                file: shown.clone(),
                field: field.clone(),
                entry: entry.clone(),
                reason: reason.into(),
            };
            if entry.contains("://") || entry.starts_with("git@") {
                return Err(refuse("is a remote URL: the publisher fetches nothing a kustomization names"));
            }
            let resolved = resolve(dir, &entry).ok_or_else(|| refuse("is an absolute path"))?;
            if !resolved.starts_with(root) {
                return Err(refuse("leaves the source tree"));
            }
            if !resolved.exists() {
                return Err(refuse("names nothing in the source tree (remote bases are not fetched)"));
            }
        }
    }
    Ok(())
}

/// `dir` joined with the relative `entry`, `..` resolved lexically; `None` for an absolute
/// entry.
fn resolve(dir: &Path, entry: &str) -> Option<PathBuf> {
    let mut at = dir.to_path_buf();
    for component in Path::new(entry).components() {
        match component {
            Component::Normal(part) => at.push(part),
            Component::ParentDir => {
                at.pop();
            }
            Component::CurDir => {}
            Component::RootDir | Component::Prefix(_) => return None,
        }
    }
    Some(at)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tree(files: &[(&str, &str)]) -> tempfile::TempDir {
        let dir = tempfile::tempdir().expect("tempdir");
        for (path, text) in files {
            let at = dir.path().join(path);
            std::fs::create_dir_all(at.parent().unwrap()).unwrap();
            std::fs::write(at, text).unwrap();
        }
        dir
    }

    #[test]
    fn accepts_overlays_that_stay_inside() {
        let dir = tree(&[
            ("base/kustomization.yaml", "resources: [deploy.yaml]\nconfigMapGenerator: [{name: c, files: [k=conf.txt]}]\n"),
            ("base/deploy.yaml", "kind: x\n"),
            ("base/conf.txt", "x\n"),
            (
                "overlays/prod/kustomization.yaml",
                "resources: [../../base]\npatches: [{path: p.yaml}]\npatchesStrategicMerge:\n- |\n  kind: inline\n",
            ),
            ("overlays/prod/p.yaml", "kind: x\n"),
        ]);
        check_tree(dir.path(), "o").expect("confined");
    }

    #[test]
    fn rejects_references_out_of_the_tree() {
        for (text, reason) in [
            ("resources: [../../etc]\n", "leaves the source tree"),
            ("configMapGenerator: [{name: k, files: [key=/etc/airlock/signing.key]}]\n", "absolute"),
            ("resources: [github.com/org/repo//base?ref=v1]\n", "names nothing"),
            ("resources: [https://example.com/x.yaml]\n", "remote URL"),
            ("secretGenerator: [{name: s, envs: [../../../.env]}]\n", "leaves the source tree"),
        ] {
            let dir = tree(&[("a/kustomization.yaml", text)]);
            let err = check_tree(dir.path(), "o").unwrap_err();
            assert!(matches!(&err, KustomizeError::Escape { reason: r, .. } if r.contains(reason)), "{text}: {err}");
        }
    }
}
