//! Settling one cluster: compare what it renders to with what the store holds, and sign
//! it when it changed. Entry point: [`settle`].

use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::statement::Statement;
use airlock_bundle::{ClusterId, Digest, SignedBundle};

use super::compare::{Decision, Held, decide_held};
use super::draft::{Draft, Full, Stage};
use super::{Row, Run, Status};
use crate::memo::{Outline, Stored};

/// A failed cluster's row.
pub fn failed(cluster: ClusterId, message: String, warnings: Vec<String>) -> Row {
    Row { cluster, version: None, digest: None, objects: None, status: Status::Failed(message), warnings, failures: Vec::new() }
}

/// Compares one drafted cluster with what the store holds, and signs it when it changed.
pub fn settle(run: &Run<'_>, mut draft: Draft<'_>) -> (Row, Option<(SignedBundle, Digest)>) {
    let p = run.publisher;
    let id = draft.cluster.id.clone();
    let expiry = draft.expiry.take();
    let (outline, full) = match std::mem::replace(&mut draft.stage, Stage::Failed(String::new())) {
        Stage::Failed(message) => return (failed(id, message, expiry.into_iter().collect()), None),
        Stage::Recalled(outline) => (outline, None),
        Stage::Full(full) => {
            let r = &full.rendered;
            (Outline::of(&full.statement, r.objects, r.warnings.clone(), r.failures.clone()), Some(full))
        }
        Stage::Pending(_) => unreachable!("every pending cluster was completed"),
    };
    let mut warnings = outline.warnings.clone();
    warnings.extend(expiry);
    let held = match draft.held.take().expect("every drafted cluster was read") {
        Ok(held) => held,
        Err(message) => return (failed(id, message, warnings), None),
    };
    let remembered = draft.remembered.take();
    let signer = &p.signer;
    let decision = decide_held(
        &held,
        &outline,
        remembered.as_ref(),
        signer.keyring_version,
        signer.chain.as_deref(),
        run.times.now,
        signer.expires_in,
    );
    let row = |version, status| Row {
        cluster: id.clone(),
        version: Some(version),
        digest: Some(outline.bundle),
        objects: Some(outline.objects),
        status,
        warnings: warnings.clone(),
        failures: outline.failures.clone(),
    };
    let (out, stored) = match decision {
        Decision::Unchanged { version } => {
            let stored = match held {
                Held::Bundle { statement, chain, envelope } => Some(stored_of(&statement, chain.as_deref(), envelope)),
                Held::Remembered { manifest } => remembered.map(|stored| Stored { manifest: manifest.or(stored.manifest), ..stored }),
                Held::Nothing => unreachable!("nothing stored is never unchanged"),
            };
            ((row(version, Status::Unchanged), None), stored)
        }
        Decision::Publish { version, .. } if p.dry_run => ((row(version, Status::WouldPublish), None), None),
        Decision::Publish { version, refresh } => {
            let status = if refresh { Status::Refreshed } else { Status::Published };
            let Full { rendered, mut statement, .. } = *full.expect("a cluster to publish was rendered");
            statement.predicate.version = version;
            match envelope::sign_by(IN_TOTO_PAYLOAD_TYPE, &statement.to_json(), &signer.keys) {
                Ok(envelope) => {
                    let stored = stored_of(&statement, signer.chain.as_deref(), Digest::of(&envelope));
                    let signed = SignedBundle { bundle: rendered.bundle, statement, envelope, keyring_chain: signer.chain.clone() };
                    ((row(version, status), Some((signed, draft.inputs))), Some(stored))
                }
                // A token gone mid-run: this cluster keeps what the store holds.
                Err(e) => ((failed(id.clone(), e.to_string(), warnings.clone()), None), None),
            }
        }
    };
    let mut outline = outline;
    outline.stored = stored;
    p.memo.keep(draft.inputs, outline);
    out
}

/// What the memo remembers of a bundle in the store whose content is the outline's.
fn stored_of(statement: &Statement, chain: Option<&[u8]>, envelope: Digest) -> Stored {
    let p = &statement.predicate;
    Stored {
        envelope,
        chain: chain.map(Digest::of),
        version: p.version,
        expires: p.expires,
        keyring_version: p.keyring_version,
        manifest: None,
    }
}
