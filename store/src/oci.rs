//! The OCI artifact of a bundle (spec 9.1): manifest and index types, and building the
//! artifact's blobs from a signed bundle. Shared by the registry, layout and archive stores,
//! which is what keeps their manifests identical byte for byte.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, OnceLock};

use serde::{Deserialize, Serialize};

use crate::error::StoreError;
use crate::meta::PublishMeta;
use airlock_bundle::SignedBundle;
use airlock_bundle::digest::Digest;
use airlock_bundle::gzip;
use airlock_bundle::statement::rfc3339;

pub const MANIFEST_MEDIA_TYPE: &str = "application/vnd.oci.image.manifest.v1+json";
pub const INDEX_MEDIA_TYPE: &str = "application/vnd.oci.image.index.v1+json";
pub const ARTIFACT_TYPE: &str = "application/vnd.airlock.bundle.v1";
pub const EMPTY_MEDIA_TYPE: &str = "application/vnd.oci.empty.v1+json";
pub const EMPTY_BLOB: &[u8] = b"{}";
pub const ENVELOPE_MEDIA_TYPE: &str = "application/vnd.dsse.envelope.v1+json";
pub const KEYRINGS_MEDIA_TYPE: &str = "application/vnd.airlock.keyrings.v1+json";
pub const PART_MEDIA_TYPE: &str = "application/vnd.airlock.part.v1.tar+gzip";

pub const TITLE: &str = "org.opencontainers.image.title";
pub const CREATED: &str = "org.opencontainers.image.created";
pub const SOURCE: &str = "org.opencontainers.image.source";
pub const REVISION: &str = "org.opencontainers.image.revision";
pub const REF_NAME: &str = "org.opencontainers.image.ref.name";
pub const PART_DIGEST: &str = "dev.airlock.part.digest";
pub const CLUSTER: &str = "dev.airlock.cluster";
pub const VERSION: &str = "dev.airlock.version";
pub const BUNDLE_DIGEST: &str = "dev.airlock.bundle.digest";

/// An OCI content descriptor.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OciDescriptor {
    pub media_type: String,
    pub digest: Digest,
    pub size: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image manifest. Other writers may add fields; reading ignores them, and stores
/// keep the exact bytes they received, so nothing is lost.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OciManifest {
    pub schema_version: u32,
    pub media_type: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_type: Option<String>,
    pub config: OciDescriptor,
    pub layers: Vec<OciDescriptor>,
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub annotations: BTreeMap<String, String>,
}

/// An OCI image index, as `index.json` of a layout.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OciIndex {
    pub schema_version: u32,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub media_type: Option<String>,
    pub manifests: Vec<OciDescriptor>,
}

impl OciIndex {
    pub fn new(manifests: Vec<OciDescriptor>) -> OciIndex {
        OciIndex { schema_version: 2, media_type: Some(INDEX_MEDIA_TYPE.to_string()), manifests }
    }
}

/// One blob of an artifact.
#[derive(Debug, Clone)]
pub struct Blob {
    pub digest: Digest,
    pub bytes: Arc<Vec<u8>>,
}

/// A bundle as an OCI artifact: its manifest's exact bytes and every blob it names.
#[derive(Debug, Clone)]
pub struct Artifact {
    pub manifest: OciManifest,
    pub manifest_bytes: Vec<u8>,
    pub manifest_digest: Digest,
    pub blobs: Vec<Blob>,
}

/// Compressed parts by part digest, so a part shared by many clusters is compressed once,
/// even when several threads build artifacts at the same time.
#[derive(Debug, Default)]
pub struct GzipCache(Mutex<HashMap<Digest, Arc<OnceLock<Blob>>>>);

impl GzipCache {
    fn get(&self, part: Digest, tar: impl FnOnce() -> Vec<u8>) -> Blob {
        let cell = self.0.lock().expect("not poisoned").entry(part).or_default().clone();
        // Outside the map's lock: other parts compress meanwhile; a second thread asking
        // for this part waits for the first instead of compressing it again.
        cell.get_or_init(|| {
            let gz = gzip::compress(&tar());
            Blob { digest: Digest::of(&gz), bytes: Arc::new(gz) }
        })
        .clone()
    }
}

fn descriptor(media_type: &str, blob: &Blob, title: String) -> OciDescriptor {
    OciDescriptor {
        media_type: media_type.to_string(),
        digest: blob.digest,
        size: blob.bytes.len() as u64,
        artifact_type: None,
        annotations: BTreeMap::from([(TITLE.to_string(), title)]),
    }
}

/// A blob from its bytes.
pub fn blob(bytes: Vec<u8>) -> Blob {
    Blob { digest: Digest::of(&bytes), bytes: Arc::new(bytes) }
}

/// Builds the artifact of spec 9.1 for a signed bundle.
pub fn artifact(signed: &SignedBundle, meta: &PublishMeta, cache: &GzipCache) -> Artifact {
    let p = &signed.statement.predicate;
    let config = blob(EMPTY_BLOB.to_vec());
    let envelope = blob(signed.envelope.clone());
    let mut layers = vec![descriptor(ENVELOPE_MEDIA_TYPE, &envelope, "envelope.json".into())];
    let mut blobs = vec![config.clone(), envelope];
    if let Some(chain) = &signed.keyring_chain {
        let chain = blob(chain.clone());
        layers.push(descriptor(KEYRINGS_MEDIA_TYPE, &chain, "keyrings.json".into()));
        blobs.push(chain);
    }
    for profile in &p.profiles {
        let part = signed.bundle.part(&profile.name).expect("statement describes the bundle");
        let gz = cache.get(profile.digest, || part.tar());
        let mut d = descriptor(PART_MEDIA_TYPE, &gz, format!("{}.tar.gz", profile.name));
        d.annotations.insert(PART_DIGEST.to_string(), profile.digest.to_string());
        layers.push(d);
        blobs.push(gz);
    }
    let mut annotations = BTreeMap::from([
        (CREATED.to_string(), rfc3339::format(&p.issued_at)),
        (CLUSTER.to_string(), p.cluster.clone()),
        (VERSION.to_string(), p.version.to_string()),
        (BUNDLE_DIGEST.to_string(), bundle_digest(signed)),
    ]);
    if let Some(s) = &meta.source {
        annotations.insert(SOURCE.to_string(), s.clone());
    }
    if let Some(r) = &meta.revision {
        annotations.insert(REVISION.to_string(), r.clone());
    }
    let manifest = OciManifest {
        schema_version: 2,
        media_type: MANIFEST_MEDIA_TYPE.to_string(),
        artifact_type: Some(ARTIFACT_TYPE.to_string()),
        config: OciDescriptor {
            media_type: EMPTY_MEDIA_TYPE.to_string(),
            digest: config.digest,
            size: config.bytes.len() as u64,
            artifact_type: None,
            annotations: BTreeMap::new(),
        },
        layers,
        annotations,
    };
    let manifest_bytes = serde_json::to_vec(&manifest).expect("manifest serialises");
    blobs.dedup_by_key(|b| b.digest);
    Artifact { manifest_digest: Digest::of(&manifest_bytes), manifest_bytes, manifest, blobs }
}

/// The bundle digest the statement names: a signed statement is made from its bundle, and
/// hashing every file again cost a large publish as much as compressing its new parts.
fn bundle_digest(signed: &SignedBundle) -> String {
    match signed.statement.subject.as_slice() {
        [subject] => format!("sha256:{}", subject.digest.sha256),
        _ => signed.digest().to_string(),
    }
}

/// A manifest as a store holds it: exact bytes, their digest, and the parsed form.
#[derive(Debug, Clone)]
pub struct RawManifest {
    pub bytes: Vec<u8>,
    pub digest: Digest,
    pub manifest: OciManifest,
}

/// As its bytes: what it parses from is all it holds.
impl Serialize for RawManifest {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        airlock_bundle::b64::serialize(&self.bytes, s)
    }
}

impl<'de> Deserialize<'de> for RawManifest {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<RawManifest, D::Error> {
        let bytes = airlock_bundle::b64::deserialize(d)?;
        RawManifest::parse("channel", "manifest", bytes).map_err(serde::de::Error::custom)
    }
}

impl RawManifest {
    /// Parses bytes a store returned; they must be an Airlock bundle manifest.
    pub fn parse(store: &str, what: &str, bytes: Vec<u8>) -> Result<RawManifest, StoreError> {
        let manifest = parse_manifest(store, what, &bytes)?;
        Ok(RawManifest { digest: Digest::of(&bytes), bytes, manifest })
    }

    /// Every blob the manifest names: config first, then layers, without repeats.
    pub fn descriptors(&self) -> Vec<&OciDescriptor> {
        let mut out: Vec<&OciDescriptor> = Vec::with_capacity(self.manifest.layers.len() + 1);
        for d in std::iter::once(&self.manifest.config).chain(&self.manifest.layers) {
            if !out.iter().any(|o| o.digest == d.digest) {
                out.push(d);
            }
        }
        out
    }

    /// The artifact made of this manifest and its blobs, for copying it unchanged.
    pub fn into_artifact(self, blobs: Vec<Blob>) -> Artifact {
        Artifact { manifest: self.manifest, manifest_bytes: self.bytes, manifest_digest: self.digest, blobs }
    }
}

/// Parses manifest bytes a store returned and checks it is one of ours.
pub fn parse_manifest(store: &str, what: &str, bytes: &[u8]) -> Result<OciManifest, StoreError> {
    let malformed = |message: String| StoreError::Malformed { store: store.to_string(), what: what.to_string(), message };
    let m: OciManifest = serde_json::from_slice(bytes).map_err(|e| malformed(format!("manifest is not valid JSON: {e}")))?;
    if m.media_type != MANIFEST_MEDIA_TYPE || m.artifact_type.as_deref() != Some(ARTIFACT_TYPE) {
        return Err(malformed(format!("manifest is {} / {:?}, not an Airlock bundle", m.media_type, m.artifact_type)));
    }
    check_layout(&m).map_err(malformed)?;
    Ok(m)
}

/// Spec 9.1 fixes the config and the order of the layers; a manifest another writer
/// rearranged is refused rather than searched, so every reader finds the same envelope.
fn check_layout(m: &OciManifest) -> Result<(), String> {
    let c = &m.config;
    if c.media_type != EMPTY_MEDIA_TYPE || c.digest != Digest::of(EMPTY_BLOB) || c.size != EMPTY_BLOB.len() as u64 {
        return Err(format!("config is {} {} ({} bytes), not the empty descriptor", c.media_type, c.digest, c.size));
    }
    let mut layers = m.layers.iter().enumerate().peekable();
    match layers.next() {
        Some((_, l)) if l.media_type == ENVELOPE_MEDIA_TYPE => {}
        Some((_, l)) => return Err(format!("layer 0 is {}, not the envelope", l.media_type)),
        None => return Err("no envelope layer".into()),
    }
    layers.next_if(|(_, l)| l.media_type == KEYRINGS_MEDIA_TYPE);
    match layers.find(|(_, l)| l.media_type != PART_MEDIA_TYPE) {
        Some((i, l)) => Err(format!("layer {i} is {}, where only parts may follow the envelope and keyring chain", l.media_type)),
        None => Ok(()),
    }
}

impl OciManifest {
    pub fn layer(&self, media_type: &str) -> Option<&OciDescriptor> {
        self.layers.iter().find(|l| l.media_type == media_type)
    }

    /// The layer holding the part with this (uncompressed) digest.
    pub fn part_layer(&self, part: &Digest) -> Option<&OciDescriptor> {
        let want = part.to_string();
        self.layers.iter().find(|l| l.media_type == PART_MEDIA_TYPE && l.annotations.get(PART_DIGEST) == Some(&want))
    }
}

/// Reference names a layout or archive gives a cluster's manifest (spec 9.3).
pub fn ref_name(cluster: &str, tag: &str) -> String {
    format!("{cluster}:{tag}")
}

#[cfg(test)]
mod tests {
    use super::*;
    use airlock_bundle::testkit::Fixture;

    fn manifest() -> OciManifest {
        let fx = Fixture::new(1);
        let signed = fx.signed(1, Fixture::files());
        artifact(&signed, &PublishMeta::default(), &GzipCache::default()).manifest
    }

    fn refusal(m: &OciManifest) -> String {
        let bytes = serde_json::to_vec(m).unwrap();
        parse_manifest("oci-layout:/srv", "manifest fleet/edge-1:latest", &bytes).unwrap_err().to_string()
    }

    #[test]
    fn reads_the_manifest_it_writes() {
        let m = manifest();
        assert_eq!(parse_manifest("s", "m", &serde_json::to_vec(&m).unwrap()).unwrap(), m);
    }

    #[test]
    fn refuses_a_config_that_is_not_the_empty_descriptor_naming_it() {
        let mut m = manifest();
        m.config.media_type = "application/vnd.oci.image.config.v1+json".into();
        let err = refusal(&m);
        assert!(
            err.contains("manifest fleet/edge-1:latest") && err.contains("config is application/vnd.oci.image.config.v1+json"),
            "{err}"
        );
        let mut m = manifest();
        m.config.size = 3;
        assert!(refusal(&m).contains("(3 bytes), not the empty descriptor"));
    }

    #[test]
    fn refuses_layers_out_of_the_spec_order_naming_the_first_out_of_place() {
        let mut m = manifest();
        m.layers.rotate_left(1);
        assert!(refusal(&m).contains(&format!("layer 0 is {PART_MEDIA_TYPE}, not the envelope")), "{}", refusal(&m));
        let mut m = manifest();
        let envelope = m.layers[0].clone();
        m.layers.push(envelope);
        let last = m.layers.len() - 1;
        assert!(refusal(&m).contains(&format!("layer {last} is {ENVELOPE_MEDIA_TYPE}, where only parts may follow")));
        let mut m = manifest();
        m.layers.clear();
        assert!(refusal(&m).contains("no envelope layer"));
    }
}
