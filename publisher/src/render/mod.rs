//! Rendering: one cluster's profiles in, one unsigned bundle out, each profile failing
//! alone.
//!
//! [`plan`] (`resolve`, `names`, [`helm::chart_fields`] for a helmCharts entry's templated
//! fields) resolves what each profile references; the source fetches it;
//! [`Renderer::prepare`] renders every profile (`shared`: `content` with `data` for
//! templates and Lua, `kustomization_refs` for kustomizationRefs, `helm_charts` for
//! helmCharts, `patches`, `namespaces`; `checks` for the part's checks) and
//! [`Renderer::assemble`] builds the bundle (`assemble`, `tier`), each part with its
//! settings. A cluster whose bundle depends on what the store holds (a profile that failed
//! and keeps its last good part, a tie between profiles, a clock-reading template to render
//! with its recorded time) is assembled once `hold` (with [`hold::releases`] for a Helm
//! release two profiles deploy) has decided from the store's statement; `publish` fetches
//! it. `credentials` adds the store credentials a cluster registered with `--token` gets
//! relayed, in the part `Airlock.system`; `seal` encrypts what a cluster with an age
//! recipient must not get in clear; `inputs` fingerprints what a cluster's rendering reads;
//! `object` is the prepared object the stages pass along, `error` why a profile or a
//! cluster fails.
//!
//! The engines: [`template`] (Go templates), [`patch`] (Sveltos's post-render patches),
//! [`helm`] (charts through the helm binary), [`kustomize`] (kubectl's kustomize); Lua is
//! the `airlock_lua` crate's, run from `data`.

pub mod assemble;
mod checks;
mod content;
pub mod credentials;
pub mod data;
mod error;
pub mod helm;
mod helm_charts;
pub mod hold;
pub mod inputs;
mod instantiated;
mod kustomization_refs;
pub mod kustomize;
pub mod manifest;
mod names;
mod namespaces;
mod object;
pub mod patch;
mod patches;
pub mod prepared;
pub mod resolve;
mod role_request;
pub mod seal;
pub mod shared;
pub mod template;
pub mod tier;

use std::collections::BTreeMap;
use std::sync::Arc;

use airlock_bundle::age::Recipient;
use airlock_bundle::statement::{ActiveWindow, ClusterScopedObject, Evaluation};
use airlock_bundle::{Bundle, ClusterId, Limits, PartSettings};
use jiff::{SignedDuration, Timestamp};

use crate::render::helm::LazyRenderer;
use crate::render::kustomize::LazyKustomizer;
use crate::source_mirrors::Mirrors;
use crate::sources::Resources;
use crate::sources::model::{Profile, ProfileKind};
pub use assemble::Assembly;
pub use data::Entropy;
pub use error::RenderError;
pub use hold::KeptContent;
pub use object::Object;
use prepared::{Env, Prepared};
pub use resolve::{ClusterPlan, ProfilePlan, plan};
pub use seal::Sealing;
use shared::SharedProfiles;

/// A cluster's bundle before signing.
#[derive(Debug, Clone)]
pub struct Rendered {
    pub cluster: ClusterId,
    pub watch_namespaces: Option<Vec<String>>,
    pub active_window: Option<ActiveWindow>,
    /// The recipients of its encrypted files, the cluster's own first; `None` when no file
    /// is encrypted.
    pub recipients: Option<Vec<String>>,
    pub allow_plaintext_secrets: bool,
    pub allow_mass_prune: bool,
    pub cluster_scoped: Vec<ClusterScopedObject>,
    /// What its puller evaluates (bundles-format.md 5.14).
    pub evaluations: Vec<Evaluation>,
    pub bundle: Bundle,
    /// Settings of every part, by part name.
    pub settings: BTreeMap<String, PartSettings>,
    /// Objects in the bundle.
    pub objects: usize,
    pub warnings: Vec<String>,
    /// The profiles that failed for this cluster in this render.
    pub failures: Vec<Failure>,
}

/// A profile that failed for a cluster: its part name and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Failure {
    pub part: String,
    pub message: String,
}

/// A cluster's profiles rendered, before the bundle is assembled.
#[derive(Debug)]
pub struct PreparedCluster {
    pub cluster: ClusterId,
    pub watch_namespaces: Option<Vec<String>>,
    pub active_window: Option<ActiveWindow>,
    /// The cluster's own age recipient: confidential files are sealed to it.
    pub recipient: Option<Recipient>,
    pub allow_plaintext_secrets: bool,
    pub allow_mass_prune: bool,
    pub cluster_scoped: Vec<ClusterScopedObject>,
    pub evaluations: Vec<Evaluation>,
    /// One per planned profile, in part-name order.
    pub parts: Vec<PartDraft>,
    /// The relayed store credentials, as the system part's object.
    credentials: Option<Arc<Object>>,
    pub warnings: Vec<String>,
}

/// One profile of a prepared cluster.
#[derive(Debug)]
pub struct PartDraft {
    pub name: Arc<str>,
    /// `ClusterProfile/web`, for messages.
    pub display: String,
    /// The profile's settings (its `dependsOn` as part names, its notes).
    pub settings: PartSettings,
    pub continue_on_conflict: bool,
    /// The objects, or why the profile failed.
    pub outcome: Result<Arc<Prepared>, String>,
}

impl PreparedCluster {
    /// Whether its bundle depends on what the store holds, beyond the parts of profiles
    /// that are not planned (which `publish` checks against the stored statement): a
    /// profile failed, a template read the clock, a prerequisite is not planned, or two
    /// profiles deploy one Helm release.
    pub fn needs_store(&self) -> bool {
        hold::releases::contested(self)
            || self.parts.iter().any(|d| match &d.outcome {
                Err(_) => true,
                Ok(p) => p.clock.is_some() || d.settings.depends_on.iter().any(|dep| !self.parts.iter().any(|o| *o.name == **dep)),
            })
    }
}

/// Renders the clusters of one run from the resources fetched for it. One renderer may
/// render many clusters at once, from several threads.
pub struct Renderer<'r> {
    resources: &'r Resources,
    limits: &'r Limits,
    shared: SharedProfiles,
    entropy: Option<Entropy>,
    /// How to seal for clusters with a recipient; without it, such a cluster fails.
    sealing: Option<Sealing>,
    /// What `now` returns, unless a part's recorded time is given.
    now: Timestamp,
    kustomizer: LazyKustomizer,
    helm: Arc<LazyRenderer>,
}

impl<'r> Renderer<'r> {
    /// `entropy` keys random functions (without it they fail); `now` is the run's clock.
    pub fn new(resources: &'r Resources, limits: &'r Limits, entropy: Option<Entropy>, now: Timestamp) -> Renderer<'r> {
        Renderer {
            resources,
            limits,
            shared: SharedProfiles::default(),
            entropy,
            sealing: None,
            now,
            kustomizer: LazyKustomizer::default(),
            helm: Arc::default(),
        }
    }

    /// Builds kustomizations with the kubectl at `kubectl`, instead of the one on `PATH`,
    /// fetching their Git sources through `mirrors`.
    pub fn with_kubectl(self, kubectl: Option<std::path::PathBuf>, mirrors: Mirrors) -> Renderer<'r> {
        Renderer { kustomizer: LazyKustomizer::new(kubectl, mirrors), ..self }
    }

    /// Seals the confidential files of clusters with an age recipient as `sealing` says.
    pub fn with_sealing(self, sealing: Sealing) -> Renderer<'r> {
        Renderer { sealing: Some(sealing), ..self }
    }

    /// Renders Helm charts with `helm`, shared with whoever resolved the run's charts.
    pub fn with_helm(self, helm: Arc<LazyRenderer>) -> Renderer<'r> {
        Renderer { helm, ..self }
    }

    /// Renders every profile of a planned cluster. Only relayed credentials that cannot
    /// be read fail the cluster; a profile that fails is recorded in its part.
    pub fn prepare(&self, plan: &ClusterPlan<'_>) -> Result<PreparedCluster, RenderError> {
        let mut warnings: Vec<String> = plan
            .cluster
            .notes
            .iter()
            .map(|n| format!("SveltosCluster {}: {} ({:?}): {}", plan.cluster.id, n.field, n.support, n.detail))
            .collect();
        let grants = role_request::grants(plan.profiles.iter().map(|pp| pp.profile));
        let parts = plan
            .profiles
            .iter()
            .map(|pp| {
                let profile = pp.profile;
                for note in &profile.notes {
                    warnings.push(format!("{}: {} ({:?}): {}", profile.display(), note.field, note.support, note.detail));
                }
                let mut settings = settings_of(profile);
                role_request::after_grants(&mut settings, &grants);
                // A profile whose references did not resolve fails in prepare_part, first.
                // So does one that would carry a Secret in clear where that is not allowed.
                let outcome = self.prepare_part(pp, plan, self.now).and_then(|prepared| {
                    seal::refuse_clear(plan.cluster, &prepared.objects).map_err(|e| e.to_string())?;
                    settings.checks = checks::checks_of(pp, self.resources, &mut warnings)?;
                    Ok(prepared)
                });
                PartDraft {
                    name: profile.part_name().into(),
                    display: profile.display(),
                    settings,
                    continue_on_conflict: profile.continue_on_conflict,
                    outcome,
                }
            })
            .collect();
        let credentials = match &plan.credentials {
            Some(relay) => Some(credentials::read(relay, self.resources)?.object(relay)),
            None => None,
        };
        Ok(PreparedCluster {
            cluster: plan.cluster.id.clone(),
            watch_namespaces: plan.cluster.watch_namespaces.clone(),
            active_window: plan.cluster.active_window.clone(),
            recipient: plan.cluster.age_recipient,
            allow_plaintext_secrets: plan.cluster.allow_plaintext_secrets,
            allow_mass_prune: plan.cluster.allow_mass_prune,
            cluster_scoped: plan.cluster.cluster_scoped.clone(),
            evaluations: plan.evaluations.clone(),
            parts,
            credentials,
            warnings,
        })
    }

    /// Renders one profile of a planned cluster with `now` as the clock.
    pub fn prepare_part(&self, pp: &ProfilePlan<'_>, plan: &ClusterPlan<'_>, now: Timestamp) -> Result<Arc<Prepared>, String> {
        let env = Env { entropy: self.entropy.as_ref(), kustomizer: &self.kustomizer, helm: &self.helm, now };
        let prepared = self.shared.get(pp, plan.cluster, self.resources, env).map_err(|e| e.to_string())?;
        Ok(match &pp.profile.kind {
            ProfileKind::RoleRequest { tenant } => Arc::new(role_request::grant(&prepared, tenant, &pp.profile.display())),
            _ => prepared,
        })
    }

    /// Assembles a prepared cluster, with what `hold` decided and the held content, its
    /// confidential files sealed.
    pub fn assemble(
        &self,
        prepared: &PreparedCluster,
        plan: &hold::Plan,
        kept: &BTreeMap<String, KeptContent>,
        decided: bool,
    ) -> Result<Assembly, RenderError> {
        assemble::assemble(prepared, plan, kept, decided, self.sealing.as_ref(), self.limits)
    }

    /// The expiry of the store credentials `plan`'s bundle relays, judged at `now`: a
    /// warning within `renew_before`, an error once expired. Apart from rendering because
    /// the answer changes with the clock while the bundle does not.
    pub fn credentials_expiry(
        &self,
        plan: &ClusterPlan<'_>,
        now: Timestamp,
        renew_before: SignedDuration,
    ) -> Result<Option<String>, RenderError> {
        match &plan.credentials {
            Some(relay) => credentials::read(relay, self.resources)?.expiry(now, renew_before),
            None => Ok(None),
        }
    }
}

/// A profile's part settings: what the bundle relays of it, its prerequisites by part
/// name (all of them: `assemble` keeps those the bundle carries) and its notes.
fn settings_of(p: &Profile) -> PartSettings {
    PartSettings {
        sync_mode: p.sync_mode,
        tier: p.tier,
        depends_on: p
            .depends_on
            .iter()
            .map(|name| p.dependency_part(name))
            .collect::<std::collections::BTreeSet<_>>()
            .into_iter()
            .collect(),
        stop_matching_behavior: p.stop_matching_behavior,
        force_conflicts: false,
        continue_on_error: p.continue_on_error,
        max_consecutive_failures: p.max_consecutive_failures,
        drift_exclusions: p.drift_exclusions.clone(),
        reloader: p.reloader,
        checks: airlock_bundle::statement::Checks::default(),
        notes: p.notes.clone(),
        failure: None,
        rendered: None,
        service_account: p.tenant.clone(),
    }
}

#[cfg(test)]
mod tests;
