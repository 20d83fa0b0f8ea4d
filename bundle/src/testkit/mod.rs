//! Deterministic keys, clusters and bundles for tests, examples and the test vectors
//! (feature `testing`; no release build enables it).
//! Everything here is fixed: the same call gives the same bytes on every machine.

pub mod yaml;

use jiff::Timestamp;

use crate::Bundle;
use crate::age::Recipient;
use crate::cluster::ClusterId;
use crate::key::SigningKey;
use crate::keyring::Keyring;
use crate::limits::Limits;
use crate::seal::{Sealer, holds_secret};
use crate::sign::{self, PartSettings, Release, SignedBundle};
use crate::statement::ClusterSettings;
use crate::verify::{Expectation, Floor};

/// The fixed time test bundles are issued at: 2026-01-01T00:00:00Z.
pub const ISSUED_AT: i64 = 1_767_225_600;
/// Test bundles expire 30 days after they are issued.
pub const LIFETIME_SECS: i64 = 30 * 24 * 3600;

/// A signer, its keyring and a cluster.
pub struct Fixture {
    pub keys: Vec<SigningKey>,
    pub keyring: Keyring,
    pub cluster: ClusterId,
}

impl Fixture {
    /// One key from seed `[seed; 32]`, threshold 1, cluster `fleet/edge-1`.
    pub fn new(seed: u8) -> Fixture {
        Fixture::with_keys(&[seed], 1)
    }

    /// Keys from the given seeds, with a threshold.
    pub fn with_keys(seeds: &[u8], threshold: usize) -> Fixture {
        let keys: Vec<SigningKey> = seeds.iter().map(|s| SigningKey::from_seed([*s; 32])).collect();
        let keyring =
            Keyring::new(1, threshold, keys.iter().map(SigningKey::public).collect(), &Limits::SPEC).expect("fixture keyring is valid");
        Fixture { keys, keyring, cluster: "fleet/edge-1".parse().expect("valid id") }
    }

    /// The time test bundles are issued at.
    pub fn now() -> Timestamp {
        Timestamp::from_second(ISSUED_AT).expect("valid time")
    }

    /// Two profiles, three files, one of them in a long path.
    pub fn files() -> Vec<(String, Vec<u8>)> {
        vec![
            (
                "ClusterProfile.web/ConfigMap.web.nginx-conf.yaml".into(),
                b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: nginx-conf\n  namespace: web\ndata:\n  port: \"8080\"\n".to_vec(),
            ),
            ("ClusterProfile.web/Namespace.web.yaml".into(), b"apiVersion: v1\nkind: Namespace\nmetadata:\n  name: web\n".to_vec()),
            (
                "Profile.fleet.monitoring/ServiceAccount.monitoring.agent.yaml".into(),
                b"apiVersion: v1\nkind: ServiceAccount\nmetadata:\n  name: agent\n  namespace: monitoring\n".to_vec(),
            ),
        ]
    }

    /// A bundle of `files`, declaring the parts they use.
    pub fn bundle(files: Vec<(String, Vec<u8>)>) -> Bundle {
        let mut parts: Vec<String> = files.iter().map(|(p, _)| p.split('/').next().unwrap_or("").to_string()).collect();
        parts.dedup();
        Bundle::new(parts, files, &Limits::SPEC).expect("fixture bundle is valid")
    }

    pub fn release(&self, version: u64) -> Release {
        Release {
            cluster: self.cluster.clone(),
            version,
            issued_at: Fixture::now(),
            expires: Timestamp::from_second(ISSUED_AT + LIFETIME_SECS).expect("valid time"),
            keyring_version: self.keyring.version(),
            settings: ClusterSettings::default(),
            decommission: false,
        }
    }

    /// `files` signed by every fixture key as `version`.
    pub fn signed(&self, version: u64, files: Vec<(String, Vec<u8>)>) -> SignedBundle {
        let settings = |name: &str| PartSettings {
            depends_on: if name == "Profile.fleet.monitoring" { vec!["ClusterProfile.web".into()] } else { vec![] },
            ..PartSettings::default()
        };
        sign::sign(Fixture::bundle(files), &self.release(version), &settings, &self.keys, None)
    }

    /// [`Fixture::signed`] with every file holding a `Secret` encrypted to `recipients`.
    pub fn sealed(&self, version: u64, files: Vec<(String, Vec<u8>)>, recipients: &[Recipient]) -> SignedBundle {
        let sealer = Sealer::new(&self.cluster, recipients.to_vec(), std::sync::Arc::new(crate::mac::Secret::new(&[9; 32])));
        let plain = Fixture::bundle(files);
        let parts = plain.parts().map(|(name, part)| {
            let sealed = sealer.seal_part(name, part, |_, bytes| holds_secret(bytes), &Limits::SPEC).expect("fixture part seals");
            (name.to_string(), sealed)
        });
        let bundle = Bundle::from_parts(parts, &Limits::SPEC).expect("fixture bundle is valid");
        let mut release = self.release(version);
        release.settings.recipients = Some(sealer.recipients());
        sign::sign(bundle, &release, &|_: &str| PartSettings::default(), &self.keys, None)
    }

    /// What the puller of this fixture's cluster expects, at the issue time.
    pub fn expect<'a>(&'a self, floor: &'a Floor) -> Expectation<'a> {
        Expectation { cluster: &self.cluster, keyring: &self.keyring, floor, now: Fixture::now() }
    }
}
