//! The final bundle of a cluster leaving Airlock (bundles-format.md 2.5.5): no parts, no
//! files, `decommission` and `allowMassPrune`, signed like any bundle at the version after
//! the one the store holds (spec 9.6). The SveltosCluster is marked first (annotation
//! `airlock.dev/decommission`), so a `publish` or `watch` running meanwhile puts nothing
//! above it; a run that failed after marking publishes on the next try. A store whose
//! newest bundle is already final is left as it is.

use airlock_bundle::ClusterSettings;
use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::sign::{PartDigests, statement};
use airlock_bundle::statement::rfc3339;
use airlock_bundle::vocabulary::DECOMMISSION_ANNOTATION;
use airlock_bundle::{Bundle, ClusterId, Limits, Part, PartSettings, Release, SignedBundle};
use airlock_store::{PublishMeta, Store, StoreError};
use jiff::Timestamp;
use kube::api::{Api, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};

use crate::annotations::FIELD_MANAGER;
use crate::publish::Signer;

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum FinalError {
    #[error("store {store}: cluster {cluster}: {source}")]
    Store { store: String, cluster: ClusterId, source: Box<StoreError> },
    #[error("store {store}: cluster {cluster}: the newest envelope cannot be read, so the next version is unknown")]
    Unreadable { store: String, cluster: ClusterId },
    #[error("management cluster: SveltosCluster {cluster}: {message}")]
    Mark { cluster: ClusterId, message: String },
    #[error("signing the final bundle of {cluster}: {message}")]
    Sign { cluster: ClusterId, message: String },
}

/// Publishes `cluster`'s final bundle to `store` (nothing with `dry_run`); what was done.
pub async fn publish(
    api: &Api<DynamicObject>,
    cluster: &ClusterId,
    object: &Value,
    signer: &Signer,
    store: &dyn Store,
    dry_run: bool,
) -> Result<String, FinalError> {
    let store_error = |source| FinalError::Store { store: store.describe(), cluster: cluster.clone(), source: Box::new(source) };
    let current = match store.fetch_envelope(cluster, &Limits::SPEC).await {
        Ok(fetched) => Some(
            fetched.unverified_statement().ok_or_else(|| FinalError::Unreadable { store: store.describe(), cluster: cluster.clone() })?,
        ),
        Err(StoreError::NotFound { .. }) => None,
        Err(e) => return Err(store_error(e)),
    };
    let current = current.map(|s| s.predicate);
    if let Some(p) = current.as_ref().filter(|p| p.decommission) {
        if !dry_run {
            mark(api, cluster, object, p.version).await?;
        }
        return Ok(format!("{cluster}: the final bundle, version {}, is already published to {}", p.version, store.describe()));
    }
    let version = current.map_or(1, |p| p.version + 1);
    if dry_run {
        return Ok(format!("{cluster}: would publish the final bundle, version {version}, to {} (dry run)", store.describe()));
    }
    mark(api, cluster, object, version).await?;
    let signed = sign(cluster, version, signer)?;
    let expires = rfc3339::format(&signed.statement.predicate.expires);
    store.publish(&[signed], &PublishMeta::default()).await.map_err(store_error)?;
    Ok(format!(
        "{cluster}: final bundle version {version} published to {} (expires {expires}); once its puller reports it \
         applied and ingest records it (annotation airlock.dev/decommissioned), run: airlock-publisher deregister cluster {cluster}",
        store.describe()
    ))
}

/// The empty, decommissioning bundle of `cluster` at `version`, signed.
fn sign(cluster: &ClusterId, version: u64, signer: &Signer) -> Result<SignedBundle, FinalError> {
    let error = |message: String| FinalError::Sign { cluster: cluster.clone(), message };
    let bundle = Bundle::from_parts(Vec::<(String, Part)>::new(), &Limits::SPEC).map_err(|e| error(e.to_string()))?;
    let now = Timestamp::now();
    let release = Release {
        cluster: cluster.clone(),
        version,
        issued_at: now,
        expires: now + signer.expires_in,
        keyring_version: signer.keyring_version,
        settings: ClusterSettings { allow_mass_prune: true, ..ClusterSettings::default() },
        decommission: true,
    };
    let statement = statement(&bundle, &release, &|_| PartSettings::default(), &PartDigests::default());
    let envelope = envelope::sign_by(IN_TOTO_PAYLOAD_TYPE, &statement.to_json(), &signer.keys).map_err(|e| error(e.to_string()))?;
    Ok(SignedBundle { bundle, statement, envelope, keyring_chain: signer.chain.clone() })
}

/// Records on the SveltosCluster that its final bundle is `version`, unless it says so.
async fn mark(api: &Api<DynamicObject>, cluster: &ClusterId, object: &Value, version: u64) -> Result<(), FinalError> {
    let value = version.to_string();
    if object["metadata"]["annotations"][DECOMMISSION_ANNOTATION] == value.as_str() {
        return Ok(());
    }
    let merge = json!({"metadata": {"annotations": {DECOMMISSION_ANNOTATION: value}}});
    let params = PatchParams { field_manager: Some(FIELD_MANAGER.into()), ..Default::default() };
    api.patch(cluster.name(), &params, &Patch::Merge(&merge))
        .await
        .map(drop)
        .map_err(|e| FinalError::Mark { cluster: cluster.clone(), message: e.to_string() })
}
