//! Encrypting what a cluster with an age recipient must not get in clear (bundles-format.md
//! 2.7), once its bundle's parts are assembled and before anything is digested or compared
//! with the store: every `v1` `Secret`, every object of a source marked
//! `airlock.dev/confidential`, and the whole part `Airlock.system` (relayed store
//! credentials). The files are sealed to the cluster's recipient first, then to the
//! publisher's extra (break-glass) recipients. Entry point: [`seal`].
//!
//! A cluster without a recipient gets none of that in clear unless its SveltosCluster
//! allows it (`airlock.dev/plaintext-secrets: allow`): [`refuse_clear`] fails the profile
//! that would carry it, like any profile that cannot render, and [`seal`] fails the whole
//! cluster for what no profile answers for (relayed credentials, a part kept from the
//! store with a `Secret` in clear), since dropping those would prune the cluster's copies.
//!
//! Sealing is deterministic (`airlock_bundle::seal`), so an unchanged Secret seals to the
//! same bytes and an unchanged cluster is not published again. A part with nothing to seal
//! is kept as it is, still shared with every other cluster it serves; only a part that
//! holds something to seal becomes the cluster's own. Parts kept from the store keep their
//! encrypted files byte for byte, since the publisher cannot decrypt them.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use airlock_bundle::age::Recipient;
use airlock_bundle::mac::Mac;
use airlock_bundle::seal::{Sealer, holds_secret};
use airlock_bundle::{ClusterId, Limits, Part};

use super::credentials::SYSTEM_PART;
use super::error::RenderError;
use super::hold::KeptContent;
use super::object::Object;
use crate::sources::model::SveltosCluster;

/// What sealing needs of the run: the publisher's seal secret, and the recipients every
/// sealed file is encrypted to after the cluster's own.
#[derive(Clone)]
pub struct Sealing {
    secret: Arc<dyn Mac>,
    extra: Vec<Recipient>,
}

impl Sealing {
    /// `secret` keys every random value of a seal (`Sealer`); `extra` are the publisher's
    /// break-glass recipients, for clusters that have a recipient of their own.
    pub fn new(secret: Arc<dyn Mac>, extra: Vec<Recipient>) -> Sealing {
        Sealing { secret, extra }
    }
}

impl std::fmt::Debug for Sealing {
    // By hand, so the secret never reaches a log or a test failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sealing").field("extra", &self.extra).finish_non_exhaustive()
    }
}

/// What one cluster's bundle is sealed for.
pub struct Seal<'a> {
    pub cluster: &'a ClusterId,
    /// The cluster's own recipient; `None` leaves every file in clear, if allowed.
    pub recipient: Option<Recipient>,
    /// `airlock.dev/plaintext-secrets: allow`: without a recipient, what would be sealed
    /// goes in clear instead of failing the cluster.
    pub allow_clear: bool,
    pub sealing: Option<&'a Sealing>,
}

/// Refuses a profile's `objects` for `cluster` when one of them would be sealed for a
/// recipient, the cluster has none, and it does not allow Secrets in clear.
pub fn refuse_clear(cluster: &SveltosCluster, objects: &[std::sync::Arc<Object>]) -> Result<(), RenderError> {
    if cluster.age_recipient.is_some() || cluster.allow_plaintext_secrets {
        return Ok(());
    }
    let mut confidential = objects.iter().filter(|o| o.confidential);
    let Some(first) = confidential.next() else { return Ok(()) };
    let what = match confidential.count() {
        0 => format!("{} ({})", first.key, first.origin),
        more => format!("{} ({}) and {more} more confidential object(s)", first.key, first.origin),
    };
    Err(RenderError::Clear { cluster: cluster.id.to_string(), what })
}

/// A bundle's parts once sealed.
#[derive(Debug)]
pub struct Sealed {
    pub parts: Vec<(String, Part)>,
    /// The recipients the statement lists: `Some` exactly when a file of the bundle is
    /// encrypted, be it sealed now or kept so from the store.
    pub recipients: Option<Vec<String>>,
}

/// `parts` with every confidential file sealed for `to`. `marked` gives, for each part
/// rendered now, the paths of its files that hold a confidential object; a part not in it
/// (kept from the store, or carried) is judged by its bytes.
pub fn seal(
    to: &Seal<'_>,
    parts: Vec<(String, Part)>,
    marked: &BTreeMap<String, BTreeSet<String>>,
    kept: &BTreeMap<String, KeptContent>,
    limits: &Limits,
) -> Result<Sealed, RenderError> {
    let sealer = match (to.recipient, to.sealing) {
        (None, _) => {
            if !to.allow_clear {
                refuse_clear_parts(to.cluster, &parts)?;
            }
            None
        }
        (Some(own), Some(sealing)) => Some(sealer(to.cluster, own, sealing, limits)?),
        (Some(_), None) => {
            return Err(RenderError::Seal { cluster: to.cluster.to_string(), message: "this run has no seal secret".into() });
        }
    };
    let mut sealed_any = false;
    let mut from_store = None;
    let mut out = Vec::with_capacity(parts.len());
    for (name, part) in parts {
        let part = match &sealer {
            Some(sealer) => {
                let paths = marked.get(&name);
                let confidential = |path: &str, bytes: &[u8]| match paths {
                    _ if name == SYSTEM_PART => true,
                    Some(paths) => paths.contains(path),
                    None => holds_secret(bytes),
                };
                let due = part.files().any(|(path, bytes)| part.plaintext(path).is_none() && confidential(path, bytes));
                if due { sealer.seal_part(&name, &part, confidential, limits)? } else { part }
            }
            None => part,
        };
        if part.files().any(|(path, _)| part.plaintext(path).is_some()) {
            sealed_any = true;
            from_store = from_store.or_else(|| kept.get(&name).and_then(|k| k.recipients.clone()));
        }
        out.push((name, part));
    }
    if !sealed_any {
        return Ok(Sealed { parts: out, recipients: None });
    }
    // Files kept from the store may be sealed to an earlier recipient of the cluster: its
    // puller keeps the earlier identity until a bundle for the new one has applied.
    let recipients = match (&sealer, from_store) {
        (Some(sealer), _) => sealer.recipients(),
        (None, Some(stored)) => stored,
        (None, None) => {
            let message = "a part kept from the store holds encrypted files, but its statement lists no recipients".into();
            return Err(RenderError::Seal { cluster: to.cluster.to_string(), message });
        }
    };
    Ok(Sealed { parts: out, recipients: Some(recipients) })
}

/// Refuses a bundle without recipient whose parts would carry in clear what a recipient
/// would have sealed: the relayed credentials, or a `Secret` in a part this render did not
/// make (kept from the store, carried for a withdrawal) whose profile `refuse_clear` could
/// not fail alone. A file sealed before the cluster lost its recipient stays sealed.
fn refuse_clear_parts(cluster: &ClusterId, parts: &[(String, Part)]) -> Result<(), RenderError> {
    for (name, part) in parts {
        let mut clear = part.files().filter(|(path, _)| part.plaintext(path).is_none());
        let found = match name.as_str() {
            SYSTEM_PART => clear.next().map(|_| "the relayed store credentials (part Airlock.system)".to_string()),
            _ => clear.find(|(_, bytes)| holds_secret(bytes)).map(|(path, _)| format!("the Secret in {path}")),
        };
        if let Some(what) = found {
            return Err(RenderError::Clear { cluster: cluster.to_string(), what });
        }
    }
    Ok(())
}

/// The cluster's sealer: its own recipient first, then the extra ones it does not repeat.
fn sealer(cluster: &ClusterId, own: Recipient, sealing: &Sealing, limits: &Limits) -> Result<Sealer, RenderError> {
    let mut recipients = vec![own];
    recipients.extend(sealing.extra.iter().filter(|r| **r != own));
    if recipients.len() > limits.recipients {
        let message = format!("{} recipients, over the limit of {}", recipients.len(), limits.recipients);
        return Err(RenderError::Seal { cluster: cluster.to_string(), message });
    }
    Ok(Sealer::new(cluster, recipients, Arc::clone(&sealing.secret)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::age::Identity;
    use airlock_bundle::mac::Secret;

    const SECRET: &[u8] = b"apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\n";
    const MAP: &[u8] = b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: m, namespace: apps}\n";

    fn part(name: &str, files: &[(&str, &[u8])]) -> (String, Part) {
        let files = files.iter().map(|(file, bytes)| (format!("{name}/{file}"), bytes.to_vec()));
        (name.to_string(), Part::new(name, files, &Limits::SPEC).unwrap())
    }

    fn sealed_paths(parts: &[(String, Part)]) -> Vec<String> {
        parts
            .iter()
            .flat_map(|(_, p)| p.files().filter(|(path, _)| p.plaintext(path).is_some()).map(|(path, _)| path.to_string()))
            .collect()
    }

    #[test]
    fn seals_the_system_part_whole_marked_files_and_unmarked_parts_by_their_bytes() {
        let cluster: ClusterId = "fleet/a".parse().unwrap();
        let sealing = Sealing::new(Arc::new(Secret::new(&[3; 32])), Vec::new());
        let to = Seal {
            cluster: &cluster,
            recipient: Some(Identity::from_secret([1; 32]).recipient()),
            allow_clear: false,
            sealing: Some(&sealing),
        };
        let parts = vec![
            part("Airlock.system", &[("ConfigMap.ops.x.yaml", MAP)]),
            part("ClusterProfile.fresh", &[("ConfigMap.apps.m.yaml", MAP), ("Secret.apps.db.yaml", SECRET)]),
            part("ClusterProfile.kept", &[("ConfigMap.apps.m.yaml", MAP), ("Secret.apps.db.yaml", SECRET)]),
        ];
        // The fresh part's marks say which of its files hold a confidential object.
        let marked = BTreeMap::from([(
            "ClusterProfile.fresh".to_string(),
            BTreeSet::from(["ClusterProfile.fresh/ConfigMap.apps.m.yaml".to_string()]),
        )]);
        let Sealed { parts: sealed, recipients } = seal(&to, parts, &marked, &BTreeMap::new(), &Limits::SPEC).unwrap();
        assert_eq!(
            sealed_paths(&sealed),
            [
                "Airlock.system/ConfigMap.ops.x.yaml.age",
                "ClusterProfile.fresh/ConfigMap.apps.m.yaml.age",
                "ClusterProfile.kept/Secret.apps.db.yaml.age"
            ]
        );
        assert_eq!(recipients.unwrap().len(), 1);
    }

    #[test]
    fn refuses_a_cluster_to_seal_for_without_a_secret_or_with_too_many_recipients() {
        let cluster: ClusterId = "fleet/a".parse().unwrap();
        let own = Identity::from_secret([1; 32]).recipient();
        let parts = || vec![part("ClusterProfile.p", &[("Secret.apps.db.yaml", SECRET)])];
        let none = Seal { cluster: &cluster, recipient: Some(own), allow_clear: false, sealing: None };
        let err = seal(&none, parts(), &BTreeMap::new(), &BTreeMap::new(), &Limits::SPEC).unwrap_err();
        assert!(matches!(err, RenderError::Seal { ref cluster, .. } if cluster == "fleet/a"), "{err}");
        let many: Vec<Recipient> = (2..=Limits::SPEC.recipients as u8 + 1).map(|s| Identity::from_secret([s; 32]).recipient()).collect();
        let sealing = Sealing::new(Arc::new(Secret::new(&[3; 32])), many);
        let err = seal(&Seal { sealing: Some(&sealing), ..none }, parts(), &BTreeMap::new(), &BTreeMap::new(), &Limits::SPEC).unwrap_err();
        assert!(err.to_string().contains("over the limit of 16"), "{err}");
        assert!(!format!("{sealing:?}").contains("3, 3"), "Debug never shows the secret");
    }
}
