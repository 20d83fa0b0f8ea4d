//! Settling one cluster: compare what it renders to with what the store holds, and sign
//! it when it changed. Entry point: [`settle`].

use airlock_bundle::envelope::{self, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::statement::Statement;
use airlock_bundle::{Bundle, ClusterId, Digest, SignedBundle};

use super::compare::{Decision, Held, decide_held};
use super::draft::{Draft, Full, Stage};
use super::{Row, Run, Status};
use crate::publish::memo::{Outline, Stored};

/// A failed cluster's row.
pub fn failed(cluster: ClusterId, message: String, warnings: Vec<String>) -> Row {
    Row { cluster, version: None, digest: None, objects: None, status: Status::Failed(message), warnings, failures: Vec::new() }
}

/// A cluster settled: its row, or a statement to sign first. Signing waits for the chunk, so each key signs a chunk's statements in one call.
pub enum Settled {
    Done(Row),
    ToSign(Box<ToSign>),
}

/// A cluster whose new statement is ready to sign.
pub struct ToSign {
    row: Row,
    statement: Statement,
    payload: Vec<u8>,
    bundle: Bundle,
    inputs: Digest,
    outline: Outline,
}

/// Signs the statements of `settled` in one call per key and returns every cluster's row,
/// in order. A key that cannot sign (a token gone mid-run) fails those clusters, which keep
/// what the store holds.
pub fn sign_all(run: &Run<'_>, settled: Vec<Settled>) -> Vec<(Row, Option<(SignedBundle, Digest)>)> {
    let signer = &run.publisher.signer;
    let payloads: Vec<&[u8]> =
        settled.iter().filter_map(|s| if let Settled::ToSign(t) = s { Some(t.payload.as_slice()) } else { None }).collect();
    let signed = if payloads.is_empty() { Ok(Vec::new()) } else { envelope::sign_all_by(IN_TOTO_PAYLOAD_TYPE, &payloads, &signer.keys) };
    let mut envelopes = match signed {
        Ok(envelopes) => envelopes.into_iter().map(Ok).collect::<Vec<_>>(),
        Err(e) => payloads.iter().map(|_| Err(e.to_string())).collect(),
    }
    .into_iter();
    settled
        .into_iter()
        .map(|s| match s {
            Settled::Done(row) => (row, None),
            Settled::ToSign(t) => finish(run, *t, envelopes.next().expect("an envelope per statement")),
        })
        .collect()
}

fn finish(run: &Run<'_>, t: ToSign, envelope: Result<Vec<u8>, String>) -> (Row, Option<(SignedBundle, Digest)>) {
    let chain = &run.publisher.signer.chain;
    let (out, stored) = match envelope {
        Ok(envelope) => {
            let stored = stored_of(&t.statement, chain.as_deref(), Digest::of(&envelope));
            let signed = SignedBundle { bundle: t.bundle, statement: t.statement, envelope, keyring_chain: chain.clone() };
            ((t.row, Some((signed, t.inputs))), Some(stored))
        }
        Err(message) => ((failed(t.row.cluster, message, t.row.warnings), None), None),
    };
    let mut outline = t.outline;
    outline.stored = stored;
    run.publisher.memo.keep(t.inputs, outline);
    out
}

/// Compares one drafted cluster with what the store holds; one that changed is to sign.
pub fn settle(run: &Run<'_>, mut draft: Draft<'_>) -> Settled {
    let p = run.publisher;
    let id = draft.cluster.id.clone();
    let expiry = draft.expiry.take();
    let (outline, full) = match std::mem::replace(&mut draft.stage, Stage::Failed(String::new())) {
        Stage::Failed(message) => return Settled::Done(failed(id, message, expiry.into_iter().collect())),
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
        Err(message) => return Settled::Done(failed(id, message, warnings)),
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
            (row(version, Status::Unchanged), stored)
        }
        Decision::Publish { version, .. } if p.dry_run => (row(version, Status::WouldPublish), None),
        Decision::Publish { version, refresh } => {
            let status = if refresh { Status::Refreshed } else { Status::Published };
            let Full { rendered, mut statement, .. } = *full.expect("a cluster to publish was rendered");
            statement.predicate.version = version;
            let payload = statement.to_json();
            let (row, inputs) = (row(version, status), draft.inputs);
            return Settled::ToSign(Box::new(ToSign { row, statement, payload, bundle: rendered.bundle, inputs, outline }));
        }
    };
    let mut outline = outline;
    outline.stored = stored;
    p.memo.keep(draft.inputs, outline);
    Settled::Done(out)
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
