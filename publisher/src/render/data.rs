//! What one profile's templates and Lua scripts see and draw on, for one cluster: the
//! content data (`.Cluster`, `.MgmtResources`...), the random stream of each template
//! and the clock. Entry point: [`Context`].
//!
//! The data is addon-controller's `currentClusterObjects` for a SveltosCluster: `.Cluster`
//! (the whole object), `.InfrastructureProvider` and `.KubeadmControlPlane` (nil: they
//! exist for CAPI clusters only) and `.MgmtResources` (the `templateResourceRefs` objects
//! by identifier), plus `.ClusterNamespace` and `.ClusterName`, which Sveltos offers only
//! to name templates: a template using them renders here and fails in Sveltos.
//!
//! Random functions draw from a stream keyed by the publisher's entropy secret and by
//! where the template is and what it renders from: the cluster, the part, the resource,
//! the key, and a digest of the template text and the data. An unchanged template renders
//! the same values on every publish; any change to its inputs rolls new ones. `now` is
//! the instant the caller gives, and the context records whether a template read it.

use std::cell::{Cell, OnceCell};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::Digest;
use airlock_bundle::mac::Mac;
use jiff::Timestamp;
use serde_json::{Map, Value, json};

use super::error::RenderError;
use super::names;
use crate::render::template::{self, RenderEntropy, RenderEnv, TemplateSource};
use crate::sources::model::{EventInstance, SveltosCluster};
use airlock_lua::{self as lua, LuaBudget, LuaSource};

/// What every render of a run shares: the secret random values come from, held here or
/// behind the signer's oracle.
#[derive(Clone)]
pub struct Entropy(pub Arc<dyn Mac>);

impl std::fmt::Debug for Entropy {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Entropy(..)")
    }
}

/// One profile's render for one cluster.
pub struct Context<'a> {
    pub cluster: &'a SveltosCluster,
    /// `ClusterProfile/web`, for messages.
    pub profile: &'a str,
    pub part: &'a str,
    pub data: Value,
    /// `.MgmtResources`, as Lua's `resources` too.
    pub resources: BTreeMap<String, Value>,
    /// Identifiers of optional `templateResourceRefs` whose object is missing.
    absent: BTreeSet<String>,
    entropy: Option<&'a Entropy>,
    now: Timestamp,
    data_digest: OnceCell<Digest>,
    read_clock: Cell<bool>,
    instance: bool,
}

impl<'a> Context<'a> {
    pub fn new(
        cluster: &'a SveltosCluster,
        profile: &'a str,
        part: &'a str,
        resources: BTreeMap<String, Value>,
        absent: BTreeSet<String>,
        entropy: Option<&'a Entropy>,
        now: Timestamp,
    ) -> Context<'a> {
        let mgmt: Map<String, Value> = resources.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        let data = json!({
            "Cluster": cluster.object,
            "ClusterNamespace": cluster.id.namespace(),
            "ClusterName": cluster.id.name(),
            "InfrastructureProvider": null,
            "KubeadmControlPlane": null,
            "MgmtResources": mgmt,
        });
        Context {
            cluster,
            profile,
            part,
            data,
            resources,
            absent,
            entropy,
            now,
            data_digest: OnceCell::new(),
            read_clock: Cell::new(false),
            instance: false,
        }
    }

    /// The context of an EventTrigger's instance: its templates see the event too.
    pub fn with_event(mut self, event: Option<&EventInstance>) -> Context<'a> {
        if let Some(event) = event {
            self.data = names::with_event(self.data, event);
            self.instance = true;
        }
        self
    }

    /// Whether it renders an EventTrigger's instance, whose `projectsveltos.io/instantiate`
    /// references are templates over the event.
    pub fn instance(&self) -> bool {
        self.instance
    }

    /// Renders one template of `resource`'s `key` with the content data.
    pub fn template(&self, resource: &str, key: &str, text: &str) -> Result<String, RenderError> {
        let source = TemplateSource { profile: self.profile, resource, key };
        let entropy = self.entropy.map(|secret| {
            let cluster = self.cluster.id.to_string();
            let inputs = Digest::of(format!("{}\n{}", Digest::of(text.as_bytes()), self.data_digest()).as_bytes()).to_string();
            RenderEntropy::derive(
                Arc::clone(&secret.0),
                &[cluster.as_bytes(), self.part.as_bytes(), resource.as_bytes(), key.as_bytes(), inputs.as_bytes()],
            )
        });
        let env = RenderEnv { entropy, now: Some(self.now), absent: self.absent.clone() };
        let out = template::render_observed(&source, text, &self.data, &env).map_err(|e| RenderError::Template(e.to_string()))?;
        if out.read_clock {
            self.read_clock.set(true);
        }
        Ok(out.text)
    }

    /// Runs one Lua script of `resource`'s `key` with the `templateResourceRefs` objects.
    pub fn lua(&self, resource: &str, key: &str, script: &str) -> Result<String, RenderError> {
        let source = LuaSource { profile: self.profile, resource, key };
        lua::evaluate(&source, script, &self.resources, &LuaBudget::DEFAULT).map_err(|e| RenderError::Lua(e.to_string()))
    }

    /// Whether a template of this render read the clock.
    pub fn read_clock(&self) -> bool {
        self.read_clock.get()
    }

    /// The instant `now` returned.
    pub fn now(&self) -> Timestamp {
        self.now
    }

    /// A digest of the data, taken once per render and only when a template needs it.
    pub fn data_digest(&self) -> Digest {
        *self.data_digest.get_or_init(|| Digest::of(&serde_json::to_vec(&self.data).expect("a JSON value serialises")))
    }
}
