//! A profile's `spec.kustomizationRefs` as the publisher builds them: where the source
//! tree comes from, which directory of it, and the values substituted per cluster.
//!
//! A Flux GitRepository names a repository and a branch, tag or commit, an OCIRepository
//! an artifact and a tag or digest; which commit or artifact that is today is looked up
//! once per run and kept among the fetched resources under [`revision_key`], so a branch
//! or tag that moved changes what a cluster's rendering reads (and so its fingerprint)
//! even though no management object changed.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;

use super::{PolicyKind, RemoteUrl};
use crate::duration::parse_go_duration;
use crate::sources::{Lookup, ObjectKey, Reference, Resources};

/// The API group of Flux's sources.
pub const FLUX_SOURCE_GROUP: &str = "source.toolkit.fluxcd.io";
/// The API version the publisher asks a Flux source in first; a management cluster whose
/// Flux predates it serves the sources only as `v1beta2`, whose fields the publisher reads
/// alike, so the live source falls back to whichever version the API server serves.
pub const FLUX_SOURCE_API_VERSION: &str = "source.toolkit.fluxcd.io/v1";
/// The kind of the key a Flux source's resolved commit or artifact is kept under: no API
/// server has it, so no source is asked for it.
pub const SOURCE_REVISION_KIND: &str = "SourceRevision";
const SOURCE_REVISION_API_VERSION: &str = "airlock.dev/v1";

/// What a `kustomizationRefs` entry's files are read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KustomizeKind {
    /// `binaryData["kustomize.tar.gz"]`.
    ConfigMap,
    /// `data["kustomize.tar.gz"]` of a Secret of Sveltos's manifest type.
    Secret,
    /// A Flux GitRepository the publisher fetches itself.
    GitRepository,
    /// A Flux OCIRepository: an artifact whose layer is a gzip'ed tar of the tree.
    OCIRepository,
    /// `remoteURL`: a gzip'ed tar served over HTTP, or an OCI artifact's first layer.
    Remote,
}

impl KustomizeKind {
    pub fn kind(self) -> &'static str {
        match self {
            KustomizeKind::ConfigMap => "ConfigMap",
            KustomizeKind::Secret => "Secret",
            KustomizeKind::GitRepository => "GitRepository",
            KustomizeKind::OCIRepository => "OCIRepository",
            KustomizeKind::Remote => "remoteURL",
        }
    }

    pub fn api_version(self) -> &'static str {
        match self {
            KustomizeKind::ConfigMap | KustomizeKind::Secret => "v1",
            KustomizeKind::GitRepository | KustomizeKind::OCIRepository => FLUX_SOURCE_API_VERSION,
            KustomizeKind::Remote => "airlock.dev/v1",
        }
    }
}

/// A `spec.kustomizationRefs` entry the publisher builds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KustomizationRef {
    /// Its index in `spec.kustomizationRefs`, for messages.
    pub index: usize,
    pub kind: KustomizeKind,
    /// A template; empty means the matched cluster's namespace.
    pub namespace: String,
    /// A template.
    pub name: String,
    /// The directory of the tree holding `kustomization.yaml`; a template; empty for the
    /// root.
    pub path: String,
    /// Component paths relative to `path`, each a template.
    pub components: Vec<String>,
    /// Set on every object built, when not empty.
    pub target_namespace: String,
    /// The substitution values, each a template over the cluster's data.
    pub values: BTreeMap<String, String>,
    /// ConfigMaps and Secrets whose data adds substitution values, in order.
    pub values_from: Vec<ValuesFromRef>,
    pub optional: bool,
    /// Decides between two references of the profile deploying one object.
    pub tier: u32,
    pub skip_namespace_creation: bool,
    /// Its objects carry the force-recreate annotation, as a policyRef's with `force`.
    pub force: bool,
    /// Where a `remoteURL` reference fetches its tree; kind, name and namespace are then
    /// not read.
    pub remote: Option<RemoteUrl>,
}

impl KustomizationRef {
    /// Whether anything of it changes from cluster to cluster.
    pub fn templated(&self) -> bool {
        let t = |s: &String| s.contains("{{");
        !self.values_from.is_empty()
            || self.values.values().any(t)
            || t(&self.path)
            || t(&self.target_namespace)
            || self.components.iter().any(t)
    }
}

/// A `valuesFrom` entry of a kustomizationRef.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValuesFromRef {
    /// Its path in the profile, for messages: `spec.kustomizationRefs[0].valuesFrom[1]`.
    pub field: String,
    pub kind: PolicyKind,
    /// A template; empty means the matched cluster's namespace.
    pub namespace: String,
    pub name: String,
    pub optional: bool,
}

/// The key the commit a GitRepository's ref points at, or the artifact an OCIRepository's
/// does, is kept under.
pub fn revision_key(repository: &ObjectKey) -> ObjectKey {
    ObjectKey::new(SOURCE_REVISION_API_VERSION, SOURCE_REVISION_KIND, &repository.namespace, &repository.name)
}

/// A long-running publisher looks at a Flux source again no more often than this,
/// whatever its `spec.interval` says.
pub const MIN_SOURCE_INTERVAL: Duration = Duration::from_secs(10);

/// How soon a long-running publisher should look at the Flux source `object` again: its
/// `spec.interval`, at least [`MIN_SOURCE_INTERVAL`].
pub fn source_interval(object: &Value) -> Option<Duration> {
    let interval = parse_go_duration(object["spec"]["interval"].as_str()?).ok()?;
    Some(interval.max(MIN_SOURCE_INTERVAL))
}

/// A Flux source's key, and its object as the sources hold it or why it could not be read.
pub type FluxSource = (ObjectKey, Result<Value, String>);

/// The Flux sources of `repositories` that `resources` holds (or why one could not be
/// read), and the soonest any of them asks to be looked at again ([`source_interval`]).
/// A source that is missing is left out: the reference is missing, and `optional` decides.
pub fn flux_sources(repositories: &BTreeSet<ObjectKey>, resources: &Resources) -> (Vec<FluxSource>, Option<Duration>) {
    let mut soonest: Option<Duration> = None;
    let mut found = Vec::new();
    for repository in repositories {
        let source = match resources.lookup(repository) {
            Lookup::Missing => continue,
            Lookup::Failed(why) => Err(why.to_string()),
            Lookup::Found(value) => {
                soonest = soonest.into_iter().chain(source_interval(value)).min();
                Ok(value.clone())
            }
        };
        found.push((repository.clone(), source));
    }
    (found, soonest)
}

/// Whether `key` is where a Flux source's revision is kept, which no source holds.
pub fn is_source_revision(key: &ObjectKey) -> bool {
    key.kind == SOURCE_REVISION_KIND && key.group == "airlock.dev"
}

/// The reference a plan carries for a Flux source's revision.
pub fn revision_reference(repository: &ObjectKey) -> Reference {
    Reference { key: revision_key(repository), api_version: SOURCE_REVISION_API_VERSION.into() }
}
