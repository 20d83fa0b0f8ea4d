//! The Sveltos v1beta1 objects the publisher reads, checked into typed values.
//!
//! `SveltosCluster` (lib.projectsveltos.io), `ClusterProfile` and `Profile`
//! (config.projectsveltos.io) arrive as JSON values from either source; `parse` turns them
//! into the [`SveltosCluster`] and [`Profile`] defined here, with the Sveltos conventions
//! (groups, annotations, the manifest Secret type) the publisher reads them by. Which
//! clusters a profile matches is `select`'s business.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde_json::Value;

use super::selector::Selector;

pub const CLUSTER_GROUP: &str = "lib.projectsveltos.io";
pub const PROFILE_GROUP: &str = "config.projectsveltos.io";
/// Relayed into the bundle as the puller's watch-namespaces setting.
pub const WATCH_NAMESPACES_ANNOTATION: &str = "agent.projectsveltos.io/watch-namespaces";
/// A referenced ConfigMap or Secret with this annotation is a template.
pub const TEMPLATE_ANNOTATION: &str = "projectsveltos.io/template";
/// The only Secret type whose data Sveltos deploys as manifests.
pub const MANIFEST_SECRET_TYPE: &str = "addons.projectsveltos.io/cluster-profile";

/// Why a Sveltos object cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ModelError {
    #[error("{object}: {message}")]
    Malformed { object: String, message: String },
    #[error("{object}: field {field}: {message}")]
    Field { object: String, field: String, message: String },
}

/// A SveltosCluster, reduced to what selection and rendering need.
#[derive(Debug, Clone, PartialEq)]
pub struct SveltosCluster {
    pub id: ClusterId,
    pub labels: BTreeMap<String, String>,
    pub pull_mode: bool,
    pub paused: bool,
    /// From the watch-namespaces annotation; `None` when absent or empty.
    pub watch_namespaces: Option<Vec<String>>,
    /// The whole object: templates see it as `.Cluster`.
    pub object: Value,
}

/// Which kind of profile, and so which part name and scope it has.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord)]
pub enum ProfileKind {
    ClusterProfile,
    /// A namespaced Profile: it matches only clusters of its namespace.
    Profile {
        namespace: String,
    },
}

/// A ConfigMap or Secret whose data keys hold manifests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    ConfigMap,
    Secret,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRef {
    pub kind: PolicyKind,
    /// Empty on a ClusterProfile means the matched cluster's namespace.
    pub namespace: String,
    pub name: String,
    pub optional: bool,
}

/// A management-cluster object templates see under `.MgmtResources.<identifier>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub api_version: String,
    pub kind: String,
    /// Empty means the matched cluster's namespace. May be a template.
    pub namespace: String,
    /// May be a template, e.g. `{{ .Cluster.metadata.name }}-settings`.
    pub name: String,
    pub identifier: String,
    pub optional: bool,
}

/// A ClusterProfile or Profile with the spec fields the publisher honours.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub kind: ProfileKind,
    pub name: String,
    /// `None` when the spec has no clusterSelector: Sveltos then matches by clusterRefs only.
    pub selector: Option<Selector>,
    pub cluster_refs: Vec<ClusterId>,
    pub policy_refs: Vec<PolicyRef>,
    pub template_refs: Vec<TemplateRef>,
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub depends_on: Vec<String>,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub extra_labels: BTreeMap<String, String>,
    pub extra_annotations: BTreeMap<String, String>,
    /// Unsupported fields and skipped references, reported with every cluster it matches.
    pub warnings: Vec<String>,
}

impl Profile {
    /// The bundle part this profile's files go to (spec 2.3).
    pub fn part_name(&self) -> String {
        match &self.kind {
            ProfileKind::ClusterProfile => format!("ClusterProfile.{}", self.name),
            ProfileKind::Profile { namespace } => format!("Profile.{namespace}.{}", self.name),
        }
    }

    /// The part name of a profile this one names in `dependsOn`: a ClusterProfile depends
    /// on ClusterProfiles, a Profile on Profiles of its namespace.
    pub fn dependency_part(&self, name: &str) -> String {
        match &self.kind {
            ProfileKind::ClusterProfile => format!("ClusterProfile.{name}"),
            ProfileKind::Profile { namespace } => format!("Profile.{namespace}.{name}"),
        }
    }

    /// How messages name it: `ClusterProfile/web` or `Profile/team-a/db`.
    pub fn display(&self) -> String {
        match &self.kind {
            ProfileKind::ClusterProfile => format!("ClusterProfile/{}", self.name),
            ProfileKind::Profile { namespace } => format!("Profile/{namespace}/{}", self.name),
        }
    }
}
