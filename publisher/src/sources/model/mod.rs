//! The Sveltos v1beta1 objects the publisher reads, checked into typed values.
//!
//! `SveltosCluster`, `ClusterSet` and `Set` (lib.projectsveltos.io), `ClusterProfile` and
//! `Profile` (config.projectsveltos.io) arrive as JSON values from either source; `parse`
//! turns them into the types here, with the Sveltos conventions (groups, annotations, the
//! manifest Secret type) the publisher reads them by. Which clusters a profile matches is
//! `select`'s business; what each field is honoured as, `fields`'.

use std::collections::BTreeMap;

use airlock_bundle::ClusterId;
use airlock_bundle::age::Recipient;
use airlock_bundle::statement::{ActiveWindow, ClusterScopedObject, DriftExclusion, FieldNote, check_list};
use airlock_bundle::{StopMatchingBehavior, SyncMode};
use serde_json::Value;

use super::key::{ObjectKey, Reference};
use super::selector::Selector;

pub mod helm_chart;
pub mod helm_options;
pub mod kustomization;
mod patch;

pub use kustomization::KustomizationRef;
pub use patch::{ProfilePatch, Target};

pub const CLUSTER_GROUP: &str = "lib.projectsveltos.io";
pub const PROFILE_GROUP: &str = "config.projectsveltos.io";
/// The only version of the Sveltos kinds the publisher reads.
pub const SVELTOS_VERSION: &str = "v1beta1";
/// Relayed into the bundle as the puller's watch-namespaces setting.
pub const WATCH_NAMESPACES_ANNOTATION: &str = "agent.projectsveltos.io/watch-namespaces";
/// A referenced ConfigMap or Secret with this annotation is a template.
pub const TEMPLATE_ANNOTATION: &str = "projectsveltos.io/template";
/// A ConfigMap or Secret an EventTrigger references with this annotation is a template
/// over the event.
pub const INSTANTIATE_ANNOTATION: &str = "projectsveltos.io/instantiate";
/// A referenced ConfigMap or Secret with this annotation holds Lua (unless it is a template).
pub const LUA_ANNOTATION: &str = "projectsveltos.io/lua";
/// A profile with this annotation (any value) is not reconciled.
pub const PAUSED_ANNOTATION: &str = "profile.projectsveltos.io/paused";
/// With [`SERVICE_ACCOUNT_NAMESPACE_LABEL`] on a profile: the tenant ServiceAccount whose
/// rights its objects are applied with.
pub const SERVICE_ACCOUNT_NAME_LABEL: &str = "projectsveltos.io/serviceaccount-name";
pub const SERVICE_ACCOUNT_NAMESPACE_LABEL: &str = "projectsveltos.io/serviceaccount-namespace";
/// The only Secret type whose data Sveltos deploys as manifests (or patches).
pub const MANIFEST_SECRET_TYPE: &str = "addons.projectsveltos.io/cluster-profile";

/// Why a Sveltos object cannot be used. Every variant names the object; `Field` the field.
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
    /// `spec.paused`, unless an active window decides: Sveltos then writes it from the
    /// window by the management clock, and the puller judges the window itself.
    pub paused: bool,
    /// From the watch-namespaces annotation; `None` when absent or empty.
    pub watch_namespaces: Option<Vec<String>>,
    /// `spec.activeWindow`, checked to be two cron expressions.
    pub active_window: Option<ActiveWindow>,
    /// The cluster's own age recipient (`airlock.dev/age-recipient`): its bundles' Secrets
    /// and confidential files are sealed to it. `None` sends them in clear.
    pub age_recipient: Option<Recipient>,
    /// `airlock.dev/plaintext-secrets: allow`, relayed in its bundles.
    pub allow_plaintext_secrets: bool,
    /// `airlock.dev/allow-mass-prune: "true"`, relayed in its bundles.
    pub allow_mass_prune: bool,
    /// `airlock.dev/cluster-scoped`, sorted, relayed in its bundles as `clusterScoped`.
    pub cluster_scoped: Vec<ClusterScopedObject>,
    /// Fields set that do not apply to a pulling cluster, or are unknown.
    pub notes: Vec<FieldNote>,
    /// The whole object: templates see it as `.Cluster`.
    pub object: Value,
}

impl SveltosCluster {
    /// The Kubernetes version the cluster last reported (`status.version`, `v1.20.2`).
    pub fn kube_version(&self) -> Option<&str> {
        self.object.pointer("/status/version").and_then(serde_json::Value::as_str).filter(|v| !v.is_empty())
    }

    /// The bundle version the cluster's puller last reported applied (the
    /// `airlock.dev/applied-version` annotation ingest writes).
    pub fn applied_version(&self) -> Option<u64> {
        self.object
            .pointer("/metadata/annotations")
            .and_then(|a| a.get(airlock_bundle::vocabulary::APPLIED_VERSION_ANNOTATION))?
            .as_str()?
            .parse()
            .ok()
    }

    /// The `group/version`s the cluster last reported its API server serves (the
    /// `airlock.dev/api-versions` annotation ingest writes); empty when it reported none.
    pub fn api_versions(&self) -> Vec<String> {
        let annotation =
            self.object.pointer("/metadata/annotations").and_then(|a| a.get(airlock_bundle::vocabulary::API_VERSIONS_ANNOTATION));
        annotation
            .and_then(serde_json::Value::as_str)
            .into_iter()
            .flat_map(|a| a.split(','))
            .filter(|v| !v.is_empty())
            .map(String::from)
            .collect()
    }
}

/// Which kind of profile, and so which part name and scope it has.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum ProfileKind {
    ClusterProfile,
    /// A namespaced Profile: it matches only clusters of its namespace.
    Profile {
        namespace: String,
    },
    /// A RoleRequest: the ServiceAccount, Roles and bindings it grants `tenant`, applied
    /// as the puller (bundles-format.md 5.13).
    RoleRequest {
        tenant: airlock_bundle::statement::ServiceAccountRef,
    },
}

impl ProfileKind {
    /// The bundle part of the profile `name` of this kind (spec 2.3).
    pub fn part_name(&self, name: &str) -> String {
        match self {
            ProfileKind::ClusterProfile => format!("ClusterProfile.{name}"),
            ProfileKind::Profile { namespace } => format!("Profile.{namespace}.{name}"),
            ProfileKind::RoleRequest { .. } => format!("RoleRequest.{name}"),
        }
    }

    /// How messages name the profile `name` of this kind.
    pub fn display(&self, name: &str) -> String {
        match self {
            ProfileKind::ClusterProfile => format!("ClusterProfile/{name}"),
            ProfileKind::Profile { namespace } => format!("Profile/{namespace}/{name}"),
            ProfileKind::RoleRequest { .. } => format!("RoleRequest/{name}"),
        }
    }
}

/// A ConfigMap or Secret whose data keys hold manifests (or patches).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PolicyKind {
    ConfigMap,
    Secret,
}

impl PolicyKind {
    pub fn kind(self) -> &'static str {
        match self {
            PolicyKind::ConfigMap => "ConfigMap",
            PolicyKind::Secret => "Secret",
        }
    }
}

/// A profile's checks, by when the puller runs them (bundles-format.md 5.11).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ProfileChecks {
    pub validate_healths: Vec<CheckSpec>,
    pub pre_deploy: Vec<CheckSpec>,
    pub pre_delete: Vec<CheckSpec>,
    pub post_delete: Vec<CheckSpec>,
}

impl ProfileChecks {
    /// The references of its Job checks.
    pub fn jobs(&self) -> impl Iterator<Item = &JobRef> {
        self.lists().flat_map(|(_, list)| list.iter().filter_map(|c| c.job.as_ref()))
    }

    /// Each list, by the name the bundle statement gives it.
    pub fn lists(&self) -> impl Iterator<Item = (&'static str, &Vec<CheckSpec>)> {
        [
            (check_list::VALIDATE_HEALTHS, &self.validate_healths),
            (check_list::PRE_DEPLOY, &self.pre_deploy),
            (check_list::PRE_DELETE, &self.pre_delete),
            (check_list::POST_DELETE, &self.post_delete),
        ]
        .into_iter()
    }
}

/// One check as the profile writes it: all but a `jobCheck`'s Job, read per cluster.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckSpec {
    pub check: airlock_bundle::statement::Check,
    pub job: Option<JobRef>,
}

/// The ConfigMap or Secret holding a `jobCheck`'s Job.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JobRef {
    /// Its path in the profile, for messages: `spec.validateHealths[0].jobCheck.jobRef`.
    pub field: String,
    pub kind: PolicyKind,
    /// Empty means the matched cluster's namespace.
    pub namespace: String,
    pub name: String,
    pub timeout_seconds: u64,
}

/// A `spec.policyRefs` entry the publisher deploys (Remote, ConfigMap or Secret).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PolicyRef {
    /// Its index in `spec.policyRefs`, for messages.
    pub index: usize,
    pub kind: PolicyKind,
    /// A template; empty means the matched cluster's namespace.
    pub namespace: String,
    /// A template, e.g. `nginx-{{ .Cluster.metadata.name }}`.
    pub name: String,
    pub optional: bool,
    /// Decides between two references of the profile deploying one object.
    pub tier: u32,
    pub skip_namespace_creation: bool,
    /// Its objects are deleted and created again when an update of one is refused in a
    /// way only that resolves (bundles-format.md 2.5.2).
    pub force: bool,
    /// `remoteURL`: the content is fetched from there, and kind, name and namespace are
    /// not read.
    pub remote: Option<RemoteUrl>,
}

/// A `spec.policyRefs[].remoteURL`: where its content is fetched from, and how.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct RemoteUrl {
    /// `http://`, `https://` or `oci://`.
    pub url: String,
    /// `oci://` only: the registry is spoken to over plain HTTP.
    pub plain_http: bool,
    pub insecure_skip_tls_verify: bool,
    /// The management-cluster Secret with `token`, `username` and `password`, `caFile`.
    pub secret: Option<SecretName>,
    /// The content is a template, as if its ConfigMap had `projectsveltos.io/template`.
    pub template: bool,
    /// How often a long-running publisher fetches it again.
    pub interval: std::time::Duration,
    /// A kustomizationRef's tree: the body, or an artifact's first layer, is kept as the
    /// gzip'ed tar it is instead of being read as manifests.
    pub tree: bool,
}

/// What Sveltos fetches a `remoteURL` as often as, unless `interval` says.
pub const DEFAULT_INTERVAL: std::time::Duration = std::time::Duration::from_secs(300);
/// The kind of the key a fetched `remoteURL` is kept under among the fetched resources:
/// no API server has it, so no source is asked for it.
pub const REMOTE_KIND: &str = "RemoteURL";
const REMOTE_API_VERSION: &str = "airlock.dev/v1";

impl RemoteUrl {
    /// How messages name it: the URL without user, query or fragment.
    pub fn shown(&self) -> String {
        redact(&self.url)
    }

    /// The key its content is kept under: one per URL and way of fetching it, so two
    /// profiles that fetch alike fetch once.
    pub fn key(&self) -> ObjectKey {
        let secret = self.secret.as_ref().map_or_else(String::new, |s| format!("{}/{}", s.namespace, s.name));
        let tree = if self.tree { " tree" } else { "" };
        let name = format!("{} plainHTTP={} insecure={} secret={secret}{tree}", self.url, self.plain_http, self.insecure_skip_tls_verify);
        ObjectKey::new(REMOTE_API_VERSION, REMOTE_KIND, "", &name)
    }

    /// The reference a plan carries for it.
    pub fn reference(&self) -> Reference {
        Reference { key: self.key(), api_version: REMOTE_API_VERSION.into() }
    }
}

pub use crate::redact::redact;

pub use airlock_bundle::statement::SecretName;

/// A `spec.patchesFrom` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PatchesFromRef {
    pub index: usize,
    pub kind: PolicyKind,
    /// A template; empty means the matched cluster's namespace.
    pub namespace: String,
    pub name: String,
    pub optional: bool,
}

/// A management-cluster object templates see under `.MgmtResources.<identifier>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TemplateRef {
    pub index: usize,
    pub api_version: String,
    pub kind: String,
    /// Empty means the matched cluster's namespace. May be a template.
    pub namespace: String,
    /// May be a template, e.g. `{{ .Cluster.metadata.name }}-settings`.
    pub name: String,
    pub identifier: String,
    pub optional: bool,
    /// Templates see the object without its status.
    pub ignore_status_changes: bool,
}

/// A ClusterProfile or Profile with the spec fields the publisher honours.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub kind: ProfileKind,
    pub name: String,
    /// The profile annotation `profile.projectsveltos.io/paused` is set.
    pub paused: bool,
    /// `None` when the spec has no clusterSelector: Sveltos then matches by refs only.
    pub selector: Option<Selector>,
    pub cluster_refs: Vec<ClusterId>,
    /// ClusterSet names (ClusterProfile) or Set names of the Profile's namespace.
    pub set_refs: Vec<String>,
    pub policy_refs: Vec<PolicyRef>,
    pub kustomization_refs: Vec<KustomizationRef>,
    pub helm_charts: Vec<helm_chart::HelmChartRef>,
    pub template_refs: Vec<TemplateRef>,
    pub patches: Vec<ProfilePatch>,
    pub patches_from: Vec<PatchesFromRef>,
    pub sync_mode: SyncMode,
    pub tier: u32,
    pub depends_on: Vec<String>,
    pub stop_matching_behavior: StopMatchingBehavior,
    pub continue_on_conflict: bool,
    pub continue_on_error: bool,
    pub max_consecutive_failures: Option<u32>,
    /// `spec.maxUpdate`; `None` when unset.
    pub max_update: Option<crate::sources::max_update::MaxUpdate>,
    pub drift_exclusions: Vec<DriftExclusion>,
    /// Restart the profile's workloads when a ConfigMap or Secret they mount changes.
    pub reloader: bool,
    pub checks: ProfileChecks,
    pub extra_labels: BTreeMap<String, String>,
    pub extra_annotations: BTreeMap<String, String>,
    /// The tenant of Sveltos's ServiceAccount labels: the part is applied as it.
    pub tenant: Option<airlock_bundle::statement::ServiceAccountRef>,
    /// Fields set that the publisher does not honour as Sveltos would, for every cluster
    /// the profile matches (bundles-format.md 5.9).
    pub notes: Vec<FieldNote>,
    /// For an EventTrigger's instance: the trigger, and the event its templates see.
    pub event: Option<EventInstance>,
}

/// What makes a profile an EventTrigger's instance (`event_instances`).
#[derive(Debug, Clone, PartialEq)]
pub struct EventInstance {
    /// The EventTrigger's name.
    pub trigger: String,
    /// `.Resource` and `.MatchingResource`, or `.Resources` and `.MatchingResources`.
    pub data: serde_json::Map<String, Value>,
}

impl Profile {
    /// The bundle part this profile's files go to (spec 2.3).
    pub fn part_name(&self) -> String {
        self.kind.part_name(&self.name)
    }

    /// The part name of a profile this one names in `dependsOn`: a ClusterProfile depends
    /// on ClusterProfiles, a Profile on Profiles of its namespace.
    pub fn dependency_part(&self, name: &str) -> String {
        self.kind.part_name(name)
    }

    /// How messages name it: `ClusterProfile/web` or `Profile/team-a/db`.
    pub fn display(&self) -> String {
        self.kind.display(&self.name)
    }

    /// How render messages name it: as [`Profile::display`], and for an EventTrigger's
    /// instance the trigger it comes from.
    pub fn display_with_origin(&self) -> String {
        match &self.event {
            None => self.display(),
            Some(e) => format!("{} (EventTrigger/{})", self.display(), e.trigger),
        }
    }

    /// The namespace this profile's references are confined to: a Profile's own.
    pub fn own_namespace(&self) -> Option<&str> {
        match &self.kind {
            ProfileKind::Profile { namespace } => Some(namespace),
            ProfileKind::ClusterProfile | ProfileKind::RoleRequest { .. } => None,
        }
    }
}

/// A ClusterSet or Set: the clusters Sveltos's set controller selected for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterSet {
    /// `None` for a (cluster-scoped) ClusterSet, the namespace for a Set.
    pub namespace: Option<String>,
    pub name: String,
    pub selected: Vec<ClusterId>,
}
