//! What `testdata/sveltos-docs/` says Sveltos deploys: the clusters of `clusters.yaml`, and
//! for each feature directory its management objects, the parts its profiles make, and its
//! `expected/<cluster>.yaml` files, gathered per cluster into what that cluster's bundle
//! must hold. Reading only: comparing is `check`'s job. Test data that contradicts itself
//! (a pull-mode cluster without an expected file, one part claimed by two features) panics,
//! since no publisher could satisfy it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

use serde_json::{Map, Value};

/// The whole directory.
pub struct Suite {
    pub root: PathBuf,
    pub features: Vec<Feature>,
    /// `namespace/name` of the pull-mode SveltosClusters, which must each get a bundle.
    pub pull: Vec<String>,
    /// The others, which must get nothing.
    pub push: Vec<String>,
}

/// One feature directory, `features/NN-name/`.
pub struct Feature {
    pub name: String,
    pub management: PathBuf,
    /// The parts its profiles would make (`ClusterProfile.x`, `Profile.ns.x`).
    pub parts: BTreeSet<String>,
    /// By cluster id.
    pub expected: BTreeMap<String, ExpectedCluster>,
}

/// One `expected/<cluster>.yaml`.
pub struct ExpectedCluster {
    /// Predicate fields the bundle must carry (`activeWindow`).
    pub bundle: Map<String, Value>,
    pub parts: Vec<ExpectedPart>,
}

/// One part of a cluster's bundle as Sveltos would deploy the profile.
pub struct ExpectedPart {
    pub name: String,
    pub objects: Vec<Value>,
    /// Namespaces Sveltos would create bare before applying: create-only Namespaces.
    pub implicit_namespaces: Vec<String>,
    /// Part settings that differ from the defaults.
    pub settings: Map<String, Value>,
    pub notes: Vec<ExpectedNote>,
    /// A substring of the failure message, when the profile must fail on this cluster.
    pub failure: Option<String>,
}

pub struct ExpectedNote {
    pub field: String,
    pub support: String,
    /// A substring of the note's detail, when the example cares.
    pub detail: Option<String>,
}

/// Everything one cluster's bundle must hold, with the feature each piece comes from.
pub struct ClusterExpectation<'s> {
    pub parts: BTreeMap<&'s str, (&'s str, &'s ExpectedPart)>,
    /// Predicate field → (feature, value).
    pub bundle: BTreeMap<&'s str, (&'s str, &'s Value)>,
}

/// The YAML documents of a file, empty ones left out.
pub fn documents(path: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let docs: Vec<Value> = serde_saphyr::from_multiple(&text).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    docs.into_iter().filter(|d| !d.is_null()).collect()
}

fn str_at<'v>(v: &'v Value, pointer: &str) -> &'v str {
    v.pointer(pointer).and_then(Value::as_str).unwrap_or_default()
}

impl Suite {
    pub fn load(root: &Path) -> Suite {
        let mut pull = Vec::new();
        let mut push = Vec::new();
        for doc in documents(&root.join("clusters.yaml")).iter().filter(|d| str_at(d, "/kind") == "SveltosCluster") {
            let id = format!("{}/{}", str_at(doc, "/metadata/namespace"), str_at(doc, "/metadata/name"));
            if doc.pointer("/spec/pullMode") == Some(&Value::Bool(true)) { pull.push(id) } else { push.push(id) }
        }
        let mut dirs: Vec<PathBuf> = std::fs::read_dir(root.join("features"))
            .expect("features/ exists")
            .map(|e| e.expect("a directory entry").path())
            .filter(|p| p.is_dir())
            .collect();
        dirs.sort();
        let features = dirs.iter().map(|d| Feature::load(d, &pull)).collect();
        Suite { root: root.to_path_buf(), features, pull, push }
    }

    /// The management files to apply or publish from: clusters first.
    pub fn management_files(&self) -> Vec<PathBuf> {
        std::iter::once(self.root.join("clusters.yaml")).chain(self.features.iter().map(|f| f.management.clone())).collect()
    }

    /// The feature whose profile makes `part`, or `?` for a part no feature makes.
    pub fn feature_of(&self, part: &str) -> &str {
        self.features.iter().find(|f| f.parts.contains(part)).map_or("?", |f| f.name.as_str())
    }

    /// Every (cluster, part) pair whose profile must fail, in cluster then part order.
    pub fn failures(&self) -> Vec<(&str, &str)> {
        let mut out: Vec<(&str, &str)> = self
            .features
            .iter()
            .flat_map(|f| f.expected.iter())
            .flat_map(|(cluster, e)| e.parts.iter().filter(|p| p.failure.is_some()).map(move |p| (cluster.as_str(), p.name.as_str())))
            .collect();
        out.sort_unstable();
        out
    }

    /// What `cluster`'s bundle must hold, over all features.
    pub fn for_cluster(&self, cluster: &str) -> ClusterExpectation<'_> {
        let mut parts = BTreeMap::new();
        let mut bundle = BTreeMap::new();
        for f in &self.features {
            let expected = &f.expected[cluster];
            for p in &expected.parts {
                if let Some((other, _)) = parts.insert(p.name.as_str(), (f.name.as_str(), p)) {
                    panic!("{cluster}: part {} expected by both {other} and {}", p.name, f.name);
                }
            }
            for (k, v) in &expected.bundle {
                if let Some((other, _)) = bundle.insert(k.as_str(), (f.name.as_str(), v)) {
                    panic!("{cluster}: bundle field {k} expected by both {other} and {}", f.name);
                }
            }
        }
        ClusterExpectation { parts, bundle }
    }
}

impl Feature {
    fn load(dir: &Path, pull: &[String]) -> Feature {
        let name = dir.file_name().expect("a directory name").to_string_lossy().into_owned();
        let management = dir.join("management.yaml");
        let parts = documents(&management)
            .iter()
            .filter_map(|d| match str_at(d, "/kind") {
                "ClusterProfile" => Some(format!("ClusterProfile.{}", str_at(d, "/metadata/name"))),
                "Profile" => Some(format!("Profile.{}.{}", str_at(d, "/metadata/namespace"), str_at(d, "/metadata/name"))),
                _ => None,
            })
            .collect();
        let mut expected = BTreeMap::new();
        for cluster in pull {
            let short = cluster.rsplit('/').next().expect("namespace/name");
            let path = dir.join("expected").join(format!("{short}.yaml"));
            assert!(path.is_file(), "{name}: no expected file for the pull-mode cluster {cluster} ({})", path.display());
            let file = ExpectedCluster::load(&path);
            assert_eq!(file.0, *cluster, "{}: names another cluster", path.display());
            expected.insert(cluster.clone(), file.1);
        }
        Feature { name, management, parts, expected }
    }
}

impl ExpectedCluster {
    /// The cluster the file names, and what it expects.
    fn load(path: &Path) -> (String, ExpectedCluster) {
        let mut docs = documents(path);
        assert_eq!(docs.len(), 1, "{}: one document", path.display());
        let doc = docs.remove(0);
        let cluster = str_at(&doc, "/cluster").to_string();
        let bundle = doc.get("bundle").and_then(Value::as_object).cloned().unwrap_or_default();
        let parts = doc.get("parts").and_then(Value::as_array).unwrap_or_else(|| panic!("{}: no parts list", path.display()));
        let parts = parts.iter().map(|p| ExpectedPart::read(p, path)).collect();
        (cluster, ExpectedCluster { bundle, parts })
    }
}

impl ExpectedPart {
    fn read(p: &Value, path: &Path) -> ExpectedPart {
        let list = |key: &str| p.get(key).and_then(Value::as_array).cloned().unwrap_or_default();
        let name = str_at(p, "/name").to_string();
        assert!(!name.is_empty(), "{}: a part without a name", path.display());
        let notes = list("notes")
            .iter()
            .map(|n| ExpectedNote {
                field: str_at(n, "/field").to_string(),
                support: str_at(n, "/support").to_string(),
                detail: n.get("detail").and_then(Value::as_str).map(str::to_string),
            })
            .collect();
        ExpectedPart {
            objects: list("objects"),
            implicit_namespaces: list("implicitNamespaces").iter().map(|v| v.as_str().unwrap_or_default().to_string()).collect(),
            settings: p.get("settings").and_then(Value::as_object).cloned().unwrap_or_default(),
            notes,
            failure: p.pointer("/failure/message").and_then(Value::as_str).map(str::to_string),
            name,
        }
    }
}
