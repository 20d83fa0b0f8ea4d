//! What one sync run reads and writes of its cluster's state, apart from the run's order
//! of steps in `sync`: where the puller's objects are ([`names`]), the rollback floor of a
//! run that found no state Secret, the failure counts and keyring updates it records
//! before or instead of an apply, and the state a fully applied bundle leaves. Reading and
//! writing the Secrets themselves is `kept::state_store`'s.

use airlock_bundle::{Floor, VerifiedEnvelope};
use jiff::Timestamp;

use crate::config::SyncSettings;
use crate::engine::KnownKind;
use crate::identities::Identities;
use crate::kept::delete_checks;
use crate::kept::failures::PartFailures;
use crate::kept::meta::Names;
use crate::kept::state::State;
use crate::kept::state_store::StateStore;
use crate::kept::verified::Verified;
use crate::reports::failure::Failure;
use crate::reports::last_report::KeptRead;
use crate::reports::report::Report;
use crate::trusted::Trusted;

/// Where this cluster's puller objects are.
pub(crate) fn names(settings: &SyncSettings) -> Names {
    Names::of(&settings.state_namespace, &settings.cluster)
}

/// Writes the failure counts of a failed run into the state it read, when they changed.
/// A cluster without a state has no place for them: its counts start with its first
/// recorded apply. Not recording them fails nothing; the run has failed already.
pub(super) async fn record_failures(store: &mut StateStore, state: Option<State>, counts: Vec<PartFailures>) {
    let Some(state) = state.filter(|s| s.failures != counts) else { return };
    if let Err(e) = store.record(&State { failures: counts, ..state }).await {
        tracing::warn!("the failure counts were not recorded: {e}");
    }
}

/// Records in the state the keyring updates `envelope` adopted, before anything is
/// applied: a revocation the root signed holds from this run on, even while the apply
/// fails (spec 7.3). A cluster without a state keeps them with its first applied bundle.
pub(super) async fn keep_adopted(
    store: &mut StateStore,
    state: Option<State>,
    trusted: &Trusted,
    envelope: &VerifiedEnvelope,
) -> Result<Option<State>, Failure> {
    let Some(state) = state else { return Ok(None) };
    // The floor stays the applied bundle's, whose keyring an older state names by its chain.
    let floor_keyring = Some(state.keyring_version.unwrap_or(trusted.keyring.version()));
    let kept = State { keyring_chain: trusted.chain_after(envelope), keyring_version: floor_keyring, ..state };
    store.record(&kept).await?;
    tracing::info!(keyring = envelope.keyring().version(), "keyring rotation kept before the apply");
    Ok(Some(kept))
}

/// The floor of a run that found no state Secret: the applied version and digest of the
/// `kept` report (an older version is then refused as a rollback), else an empty one. The
/// newest `issuedAt` accepted is not in the report; expiry is judged by the clock alone.
pub(super) fn floor_without_state(settings: &SyncSettings, report: &mut Report, kept: &KeptRead) -> Floor {
    let names = names(settings);
    let (secret, config_map) = (names.describe(&names.state), names.describe(&names.report));
    let applied = kept.applied(&settings.cluster);
    match applied {
        Some((version, digest)) => {
            tracing::warn!(
                %secret,
                %config_map,
                "no state Secret (it was deleted?): the rollback floor is version {version} ({digest}), applied as \
                 the kept report ConfigMap says"
            );
            (report.applied_version, report.applied_digest) = (Some(version), Some(digest));
        }
        None => tracing::warn!(
            %secret,
            %config_map,
            "no state Secret (a first run, or it was deleted) and no applied version in the kept report ConfigMap: \
             starting from an empty floor"
        ),
    }
    Floor { applied, highest_issued_at: None, keyring_version: None }
}

/// What the state says once `envelope`'s bundle, verified as `verified` says, is fully applied.
pub(super) fn applied_state(
    settings: &SyncSettings,
    trusted: &Trusted,
    identities: &Identities,
    envelope: &VerifiedEnvelope,
    verified: Verified,
    floor: &Floor,
    kinds: Vec<KnownKind>,
) -> State {
    let p = envelope.predicate();
    // A keyring the root rotated starts the floor afresh (spec 7.4), the newest issuedAt too.
    let renewed = floor.renewed_by(envelope.keyring().version());
    let highest = floor.highest_issued_at.filter(|_| !renewed);
    State {
        cluster: settings.cluster.to_string(),
        version: p.version,
        digest: envelope.digest(),
        highest_issued_at: highest.map_or(p.issued_at, |h| h.max(p.issued_at)),
        keyring_chain: trusted.chain_after(envelope),
        keyring_version: Some(envelope.keyring().version()),
        // Set by `StateStore::save`, which writes the inventory beside the state.
        inventory_digest: None,
        inventory: Vec::new(),
        kinds,
        verified: Some(Box::new(verified)),
        failures: Vec::new(),
        mounted: Vec::new(),
        delete_checks: delete_checks::of(&p.profiles),
        age_identities: identities.kept_after(p),
        applied_at: Timestamp::now(),
        decommissioned: p.decommission.then(Timestamp::now),
    }
}
