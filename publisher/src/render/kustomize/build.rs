//! `kubectl kustomize` over a source tree, as Sveltos's `buildKustomization`: the tree
//! written from the source, `<path>/kustomization.yaml` (that exact name, as Sveltos reads
//! it) with the ref's `components` appended, the references confined (`confine`), then
//! `kubectl kustomize --load-restrictor LoadRestrictionsNone <path>`, plugins off (kubectl's
//! default). One build per source, path and components per publish (`once`); each
//! cluster's values and namespace are applied to a copy (`substitute`).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde_json::Value;

use super::error::{KustomizeError, io_error};
use super::source::KustomizeSource;
use super::substitute::Built;
use super::tree::{SourceTree, inside_tree};
use super::{confine, git, substitute};
use crate::once::OnceMap;
use crate::process::{self, ProcessError, Run};
use crate::sandbox::Sandbox;
use crate::source_mirrors::Mirrors;

/// A build is CPU only; large trees take seconds.
const BUILD_TIMEOUT: Duration = Duration::from_secs(120);
/// No larger output could fit in a bundle.
const BUILD_OUTPUT_BYTES: u64 = airlock_bundle::Limits::SPEC.total_bytes;
/// The file Sveltos reads and extends.
const KUSTOMIZATION: &str = "kustomization.yaml";

/// One `kustomizationRefs` entry for one cluster.
#[derive(Debug, Clone, Copy)]
pub struct KustomizeRequest<'a> {
    /// Names the profile and the referenced object in errors: `ClusterProfile/web:
    /// ConfigMap default/kustomize`.
    pub origin: &'a str,
    pub source: &'a KustomizeSource,
    /// `path`, already instantiated; "" for the root.
    pub path: &'a str,
    /// `components`, already instantiated.
    pub components: &'a [String],
    pub target_namespace: Option<&'a str>,
    /// The substitution values, already instantiated: a flat string map.
    pub values: &'a BTreeMap<String, String>,
}

type BuildKey = (KustomizeSource, String, Vec<String>);

/// A [`Kustomizer`] located when a profile first needs one, so a publisher without
/// kubectl fails only the profiles that build kustomizations.
#[derive(Debug, Default)]
pub struct LazyKustomizer {
    flag: Option<PathBuf>,
    mirrors: Mirrors,
    located: std::sync::OnceLock<Result<Kustomizer, KustomizeError>>,
}

impl LazyKustomizer {
    /// Will locate the kubectl at `flag`, else on `PATH`, and fetch Git sources through
    /// `mirrors`.
    pub fn new(flag: Option<PathBuf>, mirrors: Mirrors) -> LazyKustomizer {
        LazyKustomizer { flag, mirrors, located: std::sync::OnceLock::new() }
    }

    pub fn get(&self) -> Result<&Kustomizer, KustomizeError> {
        let locate = || Kustomizer::locate(self.flag.as_deref()).map(|k| Kustomizer { mirrors: self.mirrors.clone(), ..k });
        self.located.get_or_init(locate).as_ref().map_err(Clone::clone)
    }
}

/// Builds kustomizations for one publish.
#[derive(Debug)]
pub struct Kustomizer {
    kubectl: PathBuf,
    version: String,
    /// Where Git sources are fetched from instead of the URLs GitRepositories name.
    mirrors: Mirrors,
    invocations: AtomicU64,
    builds: OnceMap<BuildKey, Result<Arc<Built>, KustomizeError>>,
}

impl Kustomizer {
    /// The kubectl at `flag`, else on `PATH`, after asking it its kustomize version.
    pub fn locate(flag: Option<&Path>) -> Result<Kustomizer, KustomizeError> {
        let kubectl = process::locate("kubectl", flag).map_err(|searched| KustomizeError::KubectlNotFound { searched })?;
        let unusable = |message: String| KustomizeError::KubectlUnusable { path: kubectl.display().to_string(), message };
        let args = ["version".to_string(), "--client".into(), "--output=json".into()];
        let out = run_kubectl(&kubectl, &args, None).map_err(|e| unusable(e.message()))?;
        let parsed: Value = serde_json::from_slice(&out).map_err(|e| unusable(format!("kubectl version: {e}")))?;
        let version = parsed["kustomizeVersion"].as_str().ok_or_else(|| unusable("kubectl has no kustomize built in".into()))?;
        Ok(Kustomizer {
            kubectl: kubectl.clone(),
            version: version.into(),
            mirrors: Mirrors::default(),
            invocations: AtomicU64::new(1),
            builds: OnceMap::default(),
        })
    }

    /// The kustomize version kubectl has built in, `v5.5.0`.
    pub fn kustomize_version(&self) -> &str {
        &self.version
    }

    /// How many kubectl processes this value started, `kubectl version` included.
    pub fn invocations(&self) -> u64 {
        self.invocations.load(Ordering::Relaxed)
    }

    /// The objects of `request`, in kustomize's output order.
    pub fn build(&self, request: &KustomizeRequest<'_>) -> Result<Vec<Value>, KustomizeError> {
        let key = (request.source.clone(), request.path.to_string(), request.components.to_vec());
        let built = self.builds.get_or_init(key, || self.build_now(request).map(Arc::new))?;
        substitute::instantiate(&built, request.values, request.target_namespace, request.origin)
    }

    fn build_now(&self, request: &KustomizeRequest<'_>) -> Result<Built, KustomizeError> {
        let origin = request.origin;
        let source_err = |message: String| KustomizeError::Source { origin: origin.into(), message };
        let mut tree = SourceTree::new(origin)?;
        match request.source {
            KustomizeSource::Tarball(bytes) => tree.unpack(bytes)?,
            KustomizeSource::Git { url, reference } => {
                git::checkout(origin, &self.mirrors.rewrite(url).url, reference, &mut tree)?;
            }
        }
        let Some(relative) = inside_tree(request.path) else {
            return Err(source_err(format!("path {:?} leaves the source tree", request.path)));
        };
        let dir = tree.root().join(relative);
        let file = dir.join(KUSTOMIZATION);
        if !file.is_file() {
            return Err(source_err(format!("no {KUSTOMIZATION} in {:?}", request.path)));
        }
        if !request.components.is_empty() {
            add_components(&file, request.components, origin)?;
        }
        confine::check_tree(tree.root(), origin)?;
        let args =
            ["kustomize".to_string(), "--load-restrictor".into(), "LoadRestrictionsNone".into(), "--".into(), dir.display().to_string()];
        self.invocations.fetch_add(1, Ordering::Relaxed);
        let out = run_kubectl(&self.kubectl, &args, Some(tree.root())).map_err(|e| KustomizeError::Build {
            origin: origin.into(),
            path: request.path.into(),
            message: e.message().trim_start_matches("error: ").to_string(),
        })?;
        let text = String::from_utf8(out).map_err(|_| source_err("kustomize printed bytes that are not UTF-8".into()))?;
        Built::of(&text, origin)
    }
}

/// Appends `components` to the kustomization's own list, as Sveltos does before building.
fn add_components(file: &Path, components: &[String], origin: &str) -> Result<(), KustomizeError> {
    let text = std::fs::read_to_string(file).map_err(|e| io_error(file, e))?;
    let mut docs = crate::yaml::parse_documents(&text)
        .map_err(|message| KustomizeError::Manifest { origin: origin.into(), message: format!("{KUSTOMIZATION}: {message}") })?;
    let Some(Value::Object(doc)) = docs.first_mut() else {
        return Err(KustomizeError::Manifest { origin: origin.into(), message: format!("{KUSTOMIZATION} is not a mapping") });
    };
    let list = doc.entry("components").or_insert_with(|| Value::Array(vec![]));
    let Value::Array(list) = list else {
        return Err(KustomizeError::Manifest { origin: origin.into(), message: format!("{KUSTOMIZATION}: components is not a list") });
    };
    list.extend(components.iter().cloned().map(Value::String));
    std::fs::write(file, crate::yaml::emit(&docs[..1])).map_err(|e| io_error(file, e))
}

/// Runs kubectl confined to `tree`, the only files a build may read: whatever a
/// kustomization names, nothing outside its source tree can be read, and nothing fetched.
fn run_kubectl(kubectl: &Path, args: &[String], tree: Option<&Path>) -> Result<Vec<u8>, ProcessError> {
    // kustomize reads nothing from HOME; an empty one keeps kubectl's own config out.
    let home = std::env::temp_dir().join("airlock-kubectl-home");
    let env = vec![("HOME", home.into_os_string()), ("KUBECONFIG", "/dev/null".into())];
    let mut sandbox = Sandbox::new().read("/dev/null");
    if let Some(tree) = tree {
        sandbox = sandbox.read(tree);
    }
    process::run(&Run { program: kubectl, args, env, stdin: None, timeout: BUILD_TIMEOUT, output_limit: BUILD_OUTPUT_BYTES, sandbox })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn kustomizer() -> Kustomizer {
        // Never started: the requests below fail before kubectl would run.
        let kubectl = PathBuf::from("/nonexistent/kubectl");
        Kustomizer {
            kubectl,
            version: "v5".into(),
            mirrors: Mirrors::default(),
            invocations: AtomicU64::new(0),
            builds: OnceMap::default(),
        }
    }

    fn build(files: &[(&str, &str)], path: &str) -> Result<Vec<Value>, KustomizeError> {
        let entries: Vec<_> = files.iter().map(|(p, text)| (*p, tar::EntryType::Regular, text.as_bytes())).collect();
        let source = KustomizeSource::Tarball(crate::render::kustomize::tree::tests::tar_gz(&entries));
        let values = BTreeMap::new();
        let request = KustomizeRequest {
            origin: "ClusterProfile/p: ConfigMap n/k",
            source: &source,
            path,
            components: &[],
            target_namespace: None,
            values: &values,
        };
        kustomizer().build(&request)
    }

    #[test]
    fn resolves_a_path_as_sveltos_joins_it_to_the_tree() {
        assert_eq!(inside_tree("/apps/base"), Some(PathBuf::from("apps/base")), "a leading slash is the tree's root");
        assert_eq!(inside_tree("./overlays/../base/"), Some(PathBuf::from("base")));
        assert_eq!(inside_tree(""), Some(PathBuf::new()));
        assert_eq!(inside_tree("base/../.."), None);
        assert_eq!(inside_tree("../sibling"), None);
    }

    #[test]
    fn rejects_a_plain_yaml_directory_without_a_kustomization() {
        // Sveltos reads <path>/kustomization.yaml and fails the reference without it; it
        // generates none for plain YAML.
        let err = build(&[("plain/deployment.yaml", "kind: Deployment\n")], "plain").unwrap_err();
        assert!(matches!(&err, KustomizeError::Source { message, .. } if message == "no kustomization.yaml in \"plain\""), "{err}");
        let other_name = build(&[("plain/kustomization.yml", "resources: []\n")], "plain").unwrap_err();
        assert!(matches!(other_name, KustomizeError::Source { .. }), "only the exact name is read, as Sveltos reads it");
    }

    #[test]
    fn rejects_a_path_above_the_tree() {
        let err = build(&[("base/kustomization.yaml", "resources: []\n")], "base/../../etc").unwrap_err();
        assert!(matches!(&err, KustomizeError::Source { message, .. } if message.contains("leaves the source tree")), "{err}");
    }
}
