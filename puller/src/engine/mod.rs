//! The apply engine: turns a `VerifiedBundle` into live objects and keeps them so.
//!
//! The path follows the data, and the code stacks by stage, each importing only those
//! below it: `model` (objects and their identities, settings, the order of stages,
//! outcomes, errors: the data every stage shares, acting on nothing), `checks`, `api`
//! (every API request through one counting wrapper), `plan`, `parse`, `drift`, `prune`,
//! then `apply`. [`desired`] parses and labels every manifest and reads each part's rules,
//! drift exclusions included (no API calls, `parse`); then [`sync`], [`check_drift`] and
//! [`plan()`] resolve kinds by discovery and check the watch-namespaces policy on the whole
//! bundle before any write (`plan`), apply with server-side apply in a safe order, one
//! object at a time, skipping what a refusal or a held-back part stops and firing Helm
//! hooks around their release's objects (`apply`), compare with live objects (`drift`),
//! prune by inventory, releasing adopted objects (`prune`) or, for a plan, preview all of
//! it with server-side dry-run (`apply::preview`); a sync and a plan alike refuse
//! takeovers and hold mass prunes before the first write (`prune::ownership`).
//!
//! It knows nothing about stores, state objects, leases or reports: the caller passes the
//! previous inventory and the kinds it learnt (`KnownKind`) in, and persists the new ones,
//! and only when `Outcome::failed()` is false. A drift check runs in two steps
//! ([`check_drift`], then [`DriftCheck::correct`]) so that the caller can take its Lease
//! only when there is something to correct. The reloader (`apply::reload`) runs in two steps
//! alike: [`check_reload`] reads, [`ReloadCheck::restart`] writes. Entry points:
//! [`desired`], [`sync`], [`check_drift`], [`plan()`], [`workloads`] and [`check_reload`].

#[cfg(any(test, feature = "testing"))]
pub mod testing;

pub(crate) mod api;
pub(crate) mod apply;
pub(crate) mod checks;
pub(crate) mod drift;
pub(crate) mod evaluate;
pub(crate) mod model;
pub(crate) mod parse;
pub(crate) mod plan;
pub(crate) mod prune;

use std::collections::BTreeMap;

use airlock_bundle::{SyncMode, VerifiedBundle};

pub use plan::charts::releases;
pub use plan::namespace_keys;

use api::kube_api::Api;
pub use apply::reload::{Mounted, ReloadCheck, Workload, check_reload, workloads};
pub use model::error::{ApiError, EngineError};
pub use model::exclusion::Exclusions;
pub use model::helm::Hook;
pub use model::object::PartRules;
pub use model::object::{DesiredObject, InventoryEntry, KnownKind, Manifest, ObjectId};
use model::outcome::Finished;
pub use model::outcome::{Action, ObjectResult, Outcome, Plan};
pub use model::settings::{NamespacePolicy, Settings};
pub use model::tenants::Tenants;
pub use parse::manifest::cluster_label;
use plan::gate::Held;
use plan::scope::Target;
pub use plan::tenant::accounts;
pub use prune::ownership::{MASS_PRUNE_MIN, MASS_PRUNE_PERCENT};

/// Resolves kinds and applies the watch-namespaces policy: the objects that may be
/// written, and the results of those refused. Read-only, so nothing is written when the
/// policy rejects the bundle.
async fn admit(api: &Api, desired: Vec<DesiredObject>, settings: &Settings) -> Result<(Vec<Target>, Vec<ObjectResult>), EngineError> {
    let mut parts = BTreeMap::new();
    for o in &desired {
        if let Some(account) = &o.rules.service_account {
            parts.entry(account.clone()).or_insert_with(|| o.profile.clone());
        }
    }
    let admitted = plan::policy::enforce(plan::scope::resolve(api, desired).await?, settings)?;
    plan::tenant::may_impersonate(api, settings, &parts).await?;
    Ok(admitted)
}

fn outcome(api: &Api, (mut results, inventory): Finished, refused: Vec<ObjectResult>) -> Outcome {
    results.extend(refused);
    let kinds: BTreeMap<(String, String), KnownKind> =
        inventory.iter().filter_map(|e| api.learnt(&e.id)).map(|k| ((k.api_version.clone(), k.kind.clone()), k)).collect();
    Outcome { inventory, results, api_requests: api.requests(), kinds: kinds.into_values().collect() }
}

/// Parses every manifest of a verified bundle into desired objects (no API calls).
pub fn desired(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<DesiredObject>, EngineError> {
    parse::manifest::desired(bundle, settings)
}

/// Parses and checks every manifest of a verified bundle as [`desired`] does, and lists
/// each object's identity and source (file and document).
pub fn listed(bundle: &VerifiedBundle, settings: &Settings) -> Result<Vec<(ObjectId, String)>, EngineError> {
    parse::manifest::listed(bundle, settings)
}

/// A full sync: policy, apply in order, prune what `previous` had and `desired` lacks.
pub async fn sync(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Outcome, EngineError> {
    let api = Api::new(client, &[], &settings.tenants);
    let (targets, refused) = admit(&api, desired, settings).await?;
    let finished = apply::stages::sync(&api, targets, previous, settings).await?;
    Ok(outcome(&api, finished, refused))
}

/// The first step of a drift check for an unchanged bundle: for ContinuousWithDriftDetection
/// profiles, list each kind once (kinds in `known` without discovery) and compare with what
/// was applied. Create-only objects, Helm hooks and objects annotated
/// `projectsveltos.io/driftDetectionIgnore` are never compared, and parts held back are
/// skipped.
/// Read-only.
pub async fn check_drift(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    known: &[KnownKind],
    settings: &Settings,
) -> Result<DriftCheck, EngineError> {
    let api = Api::new(client, known, &settings.tenants);
    let checked = desired
        .into_iter()
        .filter(|o| o.sync_mode == SyncMode::ContinuousWithDriftDetection && !o.create_only && o.hook.is_none() && !o.drift_ignored)
        .collect();
    let (targets, mut decided) = admit(&api, checked, settings).await?;
    let held = Held::new(&settings.held_back, targets.iter().map(|t| &t.object));
    let (skipped, mut targets): (Vec<Target>, Vec<Target>) = targets.into_iter().partition(|t| held.reason(&t.object).is_some());
    decided.extend(skipped.iter().map(|t| apply::send::result(&t.object, Action::Skipped, held.reason(&t.object).map(String::from))));
    let drifted = drift::detect::detect(&api, &mut targets, settings).await?;
    Ok(DriftCheck { api, targets, drifted, decided })
}

/// What a drift check found, ready to be corrected.
pub struct DriftCheck {
    api: Api,
    targets: Vec<Target>,
    /// Per target: how it drifted, if it did.
    drifted: Vec<Option<String>>,
    /// Results known before any comparison: objects the policy refused, parts held back.
    decided: Vec<ObjectResult>,
}

impl DriftCheck {
    /// How many objects drifted (changed or deleted): `correct` writes only when some did.
    pub fn found(&self) -> usize {
        self.drifted.iter().filter(|d| d.is_some()).count()
    }

    /// The second step: re-applies only the drifted objects. The inventory is `previous`,
    /// with the re-applied objects' entries.
    pub async fn correct(self, previous: &[InventoryEntry], settings: &Settings) -> Result<Outcome, EngineError> {
        let finished = apply::stages::correct_drift(&self.api, self.targets, self.drifted, previous, settings).await?;
        Ok(outcome(&self.api, finished, self.decided))
    }
}

/// What a sync would do, with field-level diffs from server-side dry-run, and what it would
/// refuse; writes nothing.
pub async fn plan(
    client: &kube::Client,
    desired: Vec<DesiredObject>,
    previous: &[InventoryEntry],
    settings: &Settings,
) -> Result<Plan, EngineError> {
    let api = Api::new(client, &[], &settings.tenants);
    let (targets, refused) = admit(&api, desired, settings).await?;
    let (finished, refusal) = apply::preview::plan(&api, targets, previous, settings).await?;
    Ok(Plan { outcome: outcome(&api, finished, refused), refusal })
}
