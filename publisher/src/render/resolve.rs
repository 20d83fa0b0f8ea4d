//! Resolving a cluster's profiles to the objects they reference ([`plan`]), so a source
//! can fetch exactly those.
//!
//! For each profile and cluster it resolves the templated names and namespaces of
//! `policyRefs`, `templateResourceRefs` and `patchesFrom` (`names`), confines a Profile's
//! references to its namespace, and checks that every `dependsOn` names a profile. A
//! profile that fails any of that fails alone, for this cluster: its plan carries the
//! problem and renders nothing. Reading what was fetched is `content`'s, and `shared`'s.

use airlock_bundle::statement::Evaluation;
use std::borrow::Cow;
use std::collections::BTreeMap;

use super::credentials::{self, Relay};
use super::error::RenderError;
use super::helm::chart_fields;
use super::names::{self, Resolved};
use crate::sources::model::helm_chart::{HelmChartRef, chart_revision_reference};
use crate::sources::model::kustomization::{KustomizationRef, KustomizeKind, ValuesFromRef, revision_reference};
use crate::sources::model::{PatchesFromRef, PolicyRef, Profile, RemoteUrl, SveltosCluster, TEMPLATE_ANNOTATION, TemplateRef};
use crate::sources::{Inventory, ObjectKey, Reference, Resources, Touches, health_check, select};

/// What one cluster needs fetched, profile by profile.
#[derive(Debug, Clone)]
pub struct ClusterPlan<'a> {
    pub cluster: &'a SveltosCluster,
    pub profiles: Vec<ProfilePlan<'a>>,
    /// The store credentials to relay, for a cluster registered with `--token`.
    pub credentials: Option<Relay>,
    /// What the cluster's puller evaluates, by kind and name: every Classifier of the
    /// fleet, the EventSources the EventTriggers watching it name, then the HealthChecks
    /// of the ClusterHealthChecks that select it.
    pub evaluations: Vec<Evaluation>,
}

/// One reference of a profile, resolved for a cluster.
#[derive(Debug, Clone)]
pub struct Resolution<'a, R> {
    pub spec: &'a R,
    pub reference: Reference,
    /// The templates its namespace and name came from, when they were templates.
    templates: Option<String>,
}

impl<R: Described> Resolution<'_, R> {
    /// How messages name it: `ConfigMap fleet/nginx-edge-1 (from the template "...")`,
    /// `remoteURL https://example.com/x.yaml`.
    pub fn describe(&self) -> String {
        if let Some(shown) = self.spec.remote_shown() {
            return format!("remoteURL {shown}");
        }
        let key = &self.reference.key;
        match &self.templates {
            None => format!("{} {}/{}", key.kind, key.namespace, key.name),
            Some(t) => format!("{} {}/{} (from the template {t})", key.kind, key.namespace, key.name),
        }
    }
}

/// What a reference is named by in messages when it is no object of the cluster.
pub trait Described {
    /// The URL of a `remoteURL` reference, as messages show it.
    fn remote_shown(&self) -> Option<String> {
        None
    }
}

impl Described for PolicyRef {
    fn remote_shown(&self) -> Option<String> {
        self.remote.as_ref().map(RemoteUrl::shown)
    }
}

impl Described for TemplateRef {}
impl Described for KustomizationRef {
    fn remote_shown(&self) -> Option<String> {
        self.remote.as_ref().map(RemoteUrl::shown)
    }
}
impl Described for PatchesFromRef {}

impl Resolution<'_, PolicyRef> {
    /// Whether its content renders as a template: a ConfigMap or Secret with the template
    /// annotation, or a `remoteURL` with `template: true`.
    pub fn templated(&self, value: &serde_json::Value) -> bool {
        self.spec.remote.as_ref().map_or_else(|| is_template(value), |r| r.template)
    }
}

/// A `kustomizationRefs` entry resolved for a cluster.
#[derive(Debug, Clone)]
pub struct KustomizePlan<'a> {
    pub source: Resolution<'a, KustomizationRef>,
    /// Where the commit or artifact of a Flux source's ref is kept once looked up.
    pub revision: Option<Reference>,
    /// The objects of its `valuesFrom`, in order.
    pub values_from: Vec<(&'a ValuesFromRef, Reference)>,
}

impl KustomizePlan<'_> {
    /// Every object building it reads.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        std::iter::once(&self.source.reference).chain(&self.revision).chain(self.values_from.iter().map(|(_, r)| r))
    }
}

/// A `helmCharts` entry resolved for a cluster.
#[derive(Debug, Clone)]
pub struct HelmPlan<'a> {
    /// The entry with its templated fields rendered for the cluster (`chart_fields`).
    pub chart: Cow<'a, HelmChartRef>,
    /// Where the chart's resolved version and digest are kept once looked up.
    pub revision: Reference,
    /// The objects of its `valuesFrom`, in order.
    pub values_from: Vec<(&'a ValuesFromRef, Reference)>,
    /// Its `registryCredentialsConfig` Secrets: the login, then the CA.
    pub secrets: Vec<Reference>,
}

impl HelmPlan<'_> {
    /// Every object rendering it reads.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        std::iter::once(&self.revision).chain(self.values_from.iter().map(|(_, r)| r)).chain(&self.secrets)
    }
}

#[derive(Debug, Clone)]
pub struct ProfilePlan<'a> {
    pub profile: &'a Profile,
    pub policies: Vec<Resolution<'a, PolicyRef>>,
    pub templates: Vec<Resolution<'a, TemplateRef>>,
    pub patches_from: Vec<Resolution<'a, PatchesFromRef>>,
    pub kustomizations: Vec<KustomizePlan<'a>>,
    pub helm_charts: Vec<HelmPlan<'a>>,
    /// The Secrets of its `remoteURL`s' `secretRef`s.
    pub remote_secrets: Vec<Reference>,
    /// The ConfigMaps and Secrets holding its Job checks' Jobs, by `JobRef::field`.
    pub jobs: BTreeMap<String, Reference>,
    /// Why the profile cannot render for this cluster, found before anything is read.
    pub problem: Option<String>,
}

/// Resolves every reference of `profiles` for `cluster`. Only relayed credentials that
/// cannot be read fail the cluster as a whole.
pub fn plan<'a>(cluster: &'a SveltosCluster, profiles: Vec<&'a Profile>, inventory: &Inventory) -> Result<ClusterPlan<'a>, RenderError> {
    // Only templated names read it: built once, when the first one does.
    let data = std::cell::OnceCell::new();
    let profiles = profiles
        .into_iter()
        .map(|profile| {
            // An EventTrigger's instance resolves its names with its event too.
            let event = profile.event.as_ref().map(|e| std::cell::OnceCell::from(names::with_event(names::name_data(cluster), e)));
            (profile, profile_plan(profile, cluster, event.as_ref().unwrap_or(&data), inventory))
        })
        .map(|(profile, planned)| match planned {
            Ok(plan) => plan,
            Err(problem) => ProfilePlan {
                profile,
                policies: Vec::new(),
                templates: Vec::new(),
                patches_from: Vec::new(),
                kustomizations: Vec::new(),
                helm_charts: Vec::new(),
                remote_secrets: Vec::new(),
                jobs: BTreeMap::new(),
                problem: Some(problem),
            },
        })
        .collect();
    let health = health_check::carried(&inventory.cluster_health_checks, &inventory.health_checks, &cluster.labels);
    let classifiers = inventory.classifiers.iter().map(|c| c.evaluation.clone());
    let evaluations = classifiers.chain(select::event_sources_for(cluster, inventory)).chain(health.into_iter().cloned()).collect();
    Ok(ClusterPlan { cluster, profiles, credentials: credentials::relay_of(cluster)?, evaluations })
}

fn profile_plan<'a>(
    profile: &'a Profile,
    cluster: &SveltosCluster,
    data: &std::cell::OnceCell<serde_json::Value>,
    inventory: &Inventory,
) -> Result<ProfilePlan<'a>, String> {
    for name in &profile.depends_on {
        let part = profile.dependency_part(name);
        let known = select::prerequisite(inventory, profile, name).is_some()
            || inventory.profiles.iter().any(|p| p.part_name() == part)
            || inventory.broken.iter().any(|b| matches!(&b.what, Touches::Profile { part: p, .. } if *p == part));
        if !known {
            return Err(format!(
                "spec.dependsOn names {}, which does not exist; Sveltos holds the profile back until it does",
                profile.kind.display(name)
            ));
        }
    }
    let resolve_ref = |field: &dyn Fn() -> String,
                       api_version: &str,
                       kind: &str,
                       namespace: &str,
                       name: &str|
     -> Result<(Reference, Option<String>), String> {
        if !namespace.contains("{{") && !name.contains("{{") {
            let namespace = if namespace.is_empty() { cluster.id.namespace() } else { namespace };
            return Ok((Reference { key: ObjectKey::new(api_version, kind, namespace, name), api_version: api_version.to_string() }, None));
        }
        let (display, field, data) = (profile.display(), field(), data.get_or_init(|| names::name_data(cluster)));
        let ns = names::resolve_namespace(&display, &format!("{field}.namespace"), namespace, data, cluster)?;
        let name = names::resolve(&display, &format!("{field}.name"), name, data)?;
        let key = ObjectKey::new(api_version, kind, &ns.value, &name.value);
        Ok((Reference { key, api_version: api_version.to_string() }, templates_of(&ns, &name)))
    };
    let confined = |field: &dyn Fn() -> String, reference: &Reference| match profile.own_namespace() {
        Some(own) if reference.key.namespace != own => {
            Err(format!("{}: {} is outside the Profile's namespace {own}; a Profile reads only its own namespace", field(), reference.key))
        }
        _ => Ok(()),
    };
    let mut policies = Vec::with_capacity(profile.policy_refs.len());
    let mut remote_secrets = Vec::new();
    for r in &profile.policy_refs {
        if let Some(remote) = &r.remote {
            if let Some(s) = &remote.secret {
                let secret = Reference { key: ObjectKey::new("v1", "Secret", &s.namespace, &s.name), api_version: "v1".into() };
                confined(&|| format!("spec.policyRefs[{}].remoteURL.secretRef", r.index), &secret)?;
                remote_secrets.push(secret);
            }
            policies.push(Resolution { spec: r, reference: remote.reference(), templates: None });
            continue;
        }
        let (reference, templates) = resolve_ref(&|| format!("spec.policyRefs[{}]", r.index), "v1", r.kind.kind(), &r.namespace, &r.name)?;
        policies.push(Resolution { spec: r, reference, templates });
    }
    let mut templates = Vec::with_capacity(profile.template_refs.len());
    for r in &profile.template_refs {
        let field = || format!("spec.templateResourceRefs[{}].resource", r.index);
        let (reference, written) = resolve_ref(&field, &r.api_version, &r.kind, &r.namespace, &r.name)?;
        confined(&field, &reference)?;
        templates.push(Resolution { spec: r, reference, templates: written });
    }
    let mut patches_from = Vec::with_capacity(profile.patches_from.len());
    for r in &profile.patches_from {
        let field = || format!("spec.patchesFrom[{}]", r.index);
        let (reference, written) = resolve_ref(&field, "v1", r.kind.kind(), &r.namespace, &r.name)?;
        confined(&field, &reference)?;
        patches_from.push(Resolution { spec: r, reference, templates: written });
    }
    let resolve_values_from = |list: &'a [ValuesFromRef]| -> Result<Vec<(&'a ValuesFromRef, Reference)>, String> {
        let mut values_from = Vec::with_capacity(list.len());
        for v in list {
            let field = || v.field.clone();
            let (from, _) = resolve_ref(&field, "v1", v.kind.kind(), &v.namespace, &v.name)?;
            confined(&field, &from)?;
            values_from.push((v, from));
        }
        Ok(values_from)
    };
    let mut kustomizations = Vec::with_capacity(profile.kustomization_refs.len());
    for k in &profile.kustomization_refs {
        let field = || format!("spec.kustomizationRefs[{}]", k.index);
        let (reference, written) = match &k.remote {
            Some(remote) => {
                if let Some(s) = &remote.secret {
                    let secret = Reference { key: ObjectKey::new("v1", "Secret", &s.namespace, &s.name), api_version: "v1".into() };
                    confined(&|| format!("{}.remoteURL.secretRef", field()), &secret)?;
                    remote_secrets.push(secret);
                }
                (remote.reference(), None)
            }
            None => {
                let resolved = resolve_ref(&field, k.kind.api_version(), k.kind.kind(), &k.namespace, &k.name)?;
                confined(&field, &resolved.0)?;
                resolved
            }
        };
        let flux = matches!(k.kind, KustomizeKind::GitRepository | KustomizeKind::OCIRepository);
        let revision = flux.then(|| revision_reference(&reference.key));
        let values_from = resolve_values_from(&k.values_from)?;
        kustomizations.push(KustomizePlan { source: Resolution { spec: k, reference, templates: written }, revision, values_from });
    }
    let mut helm_charts = Vec::with_capacity(profile.helm_charts.len());
    let chart_data = match &profile.event {
        Some(e) => std::cell::OnceCell::from(names::with_event(chart_fields::field_data(cluster), e)),
        None => std::cell::OnceCell::new(),
    };
    for h in &profile.helm_charts {
        let chart = chart_fields::instantiate(h, &profile.display(), cluster, &chart_data)?;
        let values_from = resolve_values_from(&h.values_from)?;
        let secrets = [&chart.access.credentials, &chart.access.ca]
            .into_iter()
            .flatten()
            .map(|s| Reference { key: ObjectKey::new("v1", "Secret", &s.namespace, &s.name), api_version: "v1".into() })
            .collect();
        let revision = chart_revision_reference(&chart);
        helm_charts.push(HelmPlan { chart, revision, values_from, secrets });
    }
    let mut jobs = BTreeMap::new();
    for job in profile.checks.jobs() {
        let field = || job.field.clone();
        let (reference, _) = resolve_ref(&field, "v1", job.kind.kind(), &job.namespace, &job.name)?;
        confined(&field, &reference)?;
        jobs.insert(job.field.clone(), reference);
    }
    Ok(ProfilePlan { profile, policies, templates, patches_from, kustomizations, helm_charts, remote_secrets, jobs, problem: None })
}

/// The templates a namespace and name came from, quoted, when either was one.
fn templates_of(namespace: &Resolved, name: &Resolved) -> Option<String> {
    let templates: Vec<String> =
        [namespace, name].iter().filter(|r| r.written != r.value && !r.written.is_empty()).map(|r| format!("{:?}", r.written)).collect();
    (!templates.is_empty()).then(|| templates.join(" and "))
}

impl ClusterPlan<'_> {
    /// Every object this cluster's rendering reads.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        self.profiles.iter().flat_map(ProfilePlan::references).chain(self.credentials.iter().map(|r| &r.source))
    }

    /// The Flux sources of `kind` whose revision this cluster's rendering reads.
    pub fn flux_sources(&self, kind: KustomizeKind) -> impl Iterator<Item = &ObjectKey> {
        self.profiles.iter().flat_map(|p| &p.kustomizations).filter(move |k| k.source.spec.kind == kind).map(|k| &k.source.reference.key)
    }

    /// The charts this cluster's rendering reads, each with the key its revision is kept
    /// under.
    pub fn charts(&self) -> impl Iterator<Item = &HelmPlan<'_>> {
        self.profiles.iter().flat_map(|p| &p.helm_charts)
    }

    /// The `remoteURL`s this cluster's rendering reads, by the key each is kept under.
    pub fn remotes(&self) -> impl Iterator<Item = (&ObjectKey, &RemoteUrl)> {
        let policies = self.profiles.iter().flat_map(|p| &p.policies).filter_map(|r| r.spec.remote.as_ref().map(|u| (&r.reference.key, u)));
        let trees = self.profiles.iter().flat_map(|p| &p.kustomizations).filter_map(|k| {
            let resolved = &k.source;
            resolved.spec.remote.as_ref().map(|u| (&resolved.reference.key, u))
        });
        policies.chain(trees)
    }
}

/// What a profile without templates renders from: itself and the objects its references
/// resolved to. Within one run, equal keys render equal objects.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct SharedKey {
    part: String,
    references: Vec<ObjectKey>,
    /// The cluster's Kubernetes version and API versions, for a profile with Helm charts:
    /// charts render against them.
    capabilities: Option<(String, Vec<String>)>,
}

impl ProfilePlan<'_> {
    /// Every object this profile's rendering reads, for one cluster.
    pub fn references(&self) -> impl Iterator<Item = &Reference> {
        let policies = self.policies.iter().map(|r| &r.reference);
        policies
            .chain(self.templates.iter().map(|r| &r.reference))
            .chain(self.patches_from.iter().map(|r| &r.reference))
            .chain(self.kustomizations.iter().flat_map(KustomizePlan::references))
            .chain(self.helm_charts.iter().flat_map(HelmPlan::references))
            .chain(&self.remote_secrets)
            .chain(self.jobs.values())
    }

    /// The key this profile renders the same under for every cluster, unless something it
    /// renders is a template (which sees the cluster): a templated ConfigMap or Secret, a
    /// `spec.patches` entry with an action, a templated patchesFrom object, a
    /// kustomizationRef with values or templated fields, a helmCharts entry with templated
    /// values or valuesFrom.
    pub fn shared_key(&self, resources: &Resources, cluster: &SveltosCluster) -> Option<SharedKey> {
        let templated = |r: &Reference| resources.get(&r.key).is_some_and(is_template);
        let any_templated = self.policies.iter().any(|r| resources.get(&r.reference.key).is_some_and(|v| r.templated(v)))
            || self.patches_from.iter().any(|r| templated(&r.reference))
            || self.profile.patches.iter().any(|p| p.patch.contains("{{"))
            || self.kustomizations.iter().any(|k| k.source.spec.templated())
            || self.profile.helm_charts.iter().any(HelmChartRef::templated);
        // An EventTrigger's instance is made for one cluster, with its event.
        (!any_templated && self.problem.is_none() && self.profile.event.is_none()).then(|| SharedKey {
            part: self.profile.part_name(),
            references: self.references().map(|r| r.key.clone()).collect(),
            capabilities: (!self.helm_charts.is_empty())
                .then(|| (cluster.kube_version().unwrap_or_default().to_string(), cluster.api_versions())),
        })
    }
}

/// Whether a fetched ConfigMap or Secret carries the template annotation.
pub fn is_template(value: &serde_json::Value) -> bool {
    has_annotation(value, TEMPLATE_ANNOTATION)
}

pub fn has_annotation(value: &serde_json::Value, annotation: &str) -> bool {
    value["metadata"]["annotations"].as_object().is_some_and(|a| a.contains_key(annotation))
}
