//! Hostile store content, made with the library's own writers so that everything but the
//! one flaw a case is about stays well-formed: envelope and tar surgery, OCI artifacts with
//! a layer swapped and the manifest resealed around it, stores written from them, and
//! damage done to a store's files after the fact.

use std::path::Path;

use airlock_bundle::envelope::{self, Envelope, IN_TOTO_PAYLOAD_TYPE};
use airlock_bundle::statement::Statement;
use airlock_bundle::tar::write_canonical;
use airlock_bundle::{ClusterId, Digest};
use airlock_bundle::{SignedBundle, SigningKey};
use airlock_store::oci::{self, Artifact, GzipCache};
use airlock_store::{PublishMeta, RegistryCredentials, StoreRef, open_oci};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;

/// The OCI artifact the publisher would write for `signed`.
pub fn artifact(signed: &SignedBundle) -> Artifact {
    oci::artifact(signed, &PublishMeta::default(), &GzipCache::default())
}

/// The title of a part's layer (spec 9.1).
pub fn part_title(part: &str) -> String {
    format!("{part}.tar.gz")
}

pub const ENVELOPE_TITLE: &str = "envelope.json";

/// Points the layer titled `title` at a blob of `bytes` and reseals the manifest. The old
/// blob stays in the artifact, unreferenced, as a registry would keep it.
pub fn replace_layer(artifact: &mut Artifact, title: &str, bytes: Vec<u8>) {
    let blob = oci::blob(bytes);
    let layer = artifact
        .manifest
        .layers
        .iter_mut()
        .find(|l| l.annotations.get(oci::TITLE).is_some_and(|t| t == title))
        .unwrap_or_else(|| panic!("no layer titled {title}"));
    layer.digest = blob.digest;
    layer.size = blob.bytes.len() as u64;
    artifact.blobs.push(blob);
    reseal(artifact);
}

/// Drops the layer titled `title` from the manifest and reseals it.
pub fn remove_layer(artifact: &mut Artifact, title: &str) {
    edit_manifest(artifact, |m| m.layers.retain(|l| l.annotations.get(oci::TITLE).is_none_or(|t| t != title)));
}

/// Edits the manifest, blobs left as they are, and reseals it.
pub fn edit_manifest(artifact: &mut Artifact, edit: impl FnOnce(&mut oci::OciManifest)) {
    edit(&mut artifact.manifest);
    reseal(artifact);
}

fn reseal(artifact: &mut Artifact) {
    artifact.manifest_bytes = serde_json::to_vec(&artifact.manifest).expect("manifest serialises");
    artifact.manifest_digest = Digest::of(&artifact.manifest_bytes);
}

/// Writes `artifact` as the newest bundle of `cluster` into a new store (a layout or an
/// archive) and returns the store's reference. The version tag is the one the manifest
/// claims, whatever the envelope inside says.
pub async fn write_store(reference: StoreRef, cluster: &ClusterId, artifact: &Artifact) -> String {
    let version = artifact.manifest.annotations[oci::VERSION].parse().expect("decimal version annotation");
    let store = open_oci(&reference, &RegistryCredentials::default()).await.expect("store opens");
    store.put_artifact(cluster, version, artifact).await.expect("artifact written");
    reference.to_string()
}

/// An envelope's JSON, to edit.
pub fn parse_envelope(bytes: &[u8]) -> Envelope {
    serde_json::from_slice(bytes).expect("a DSSE envelope")
}

pub fn envelope_bytes(envelope: &Envelope) -> Vec<u8> {
    serde_json::to_vec(envelope).expect("envelope serialises")
}

/// Flips one bit of the decoded bytes of a base64 field, keeping it valid base64.
pub fn flip_base64(b64: &str, at: usize) -> String {
    let mut bytes = STANDARD.decode(b64).expect("base64");
    bytes[at] ^= 0x01;
    STANDARD.encode(bytes)
}

/// A statement payload signed as it is, however it reads.
pub fn sign_payload(payload: &[u8], keys: &[SigningKey]) -> Vec<u8> {
    envelope::sign(IN_TOTO_PAYLOAD_TYPE, payload, keys)
}

/// `signed` with its statement edited by `edit` and signed again by `keys`: a bundle
/// whose signatures are valid, so only a later check can refuse it.
pub fn resigned(signed: &SignedBundle, keys: &[SigningKey], edit: impl FnOnce(&mut Statement)) -> SignedBundle {
    let mut statement = signed.statement.clone();
    edit(&mut statement);
    let envelope = sign_payload(&statement.to_json(), keys);
    SignedBundle { statement, envelope, ..signed.clone() }
}

/// The artifact of the one-part bundle `signed`, carrying `tar` as its part, with the
/// part's digest and size re-signed to match `tar`: verification gets past the length and
/// digest checks, so the walk of the tar is what has to refuse it.
pub fn with_hostile_tar(signed: &SignedBundle, keys: &[SigningKey], tar: Vec<u8>) -> Artifact {
    let part = signed.statement.predicate.profiles[0].name.clone();
    let matching = resigned(signed, keys, |s| {
        s.predicate.profiles[0].digest = Digest::of(&tar);
        s.predicate.profiles[0].size = tar.len() as u64;
    });
    let mut artifact = artifact(&matching);
    replace_layer(&mut artifact, &part_title(&part), airlock_bundle::gzip::compress(&tar));
    artifact
}

/// The canonical tar of one file, then `edit` applied to its header and the checksum
/// recomputed, so only the edited field is wrong.
pub fn one_file_tar_with_header_edit(path: &str, bytes: &[u8], edit: impl FnOnce(&mut [u8])) -> Vec<u8> {
    let mut tar = write_canonical(&[(path, bytes)]);
    let header = &mut tar[..512];
    edit(header);
    fix_checksum(header);
    tar
}

/// Recomputes a ustar header's checksum (spec 3.2), so an edited header still parses.
pub fn fix_checksum(header: &mut [u8]) {
    header[148..156].copy_from_slice(b"        ");
    let sum: u32 = header.iter().map(|&b| u32::from(b)).sum();
    header[148..156].copy_from_slice(format!("{sum:06o}\0 ").as_bytes());
}

/// The one blob file of a layout whose content `accept` picks.
pub fn blob_file(layout: &Path, accept: impl Fn(&[u8]) -> bool) -> std::path::PathBuf {
    let blobs = layout.join("blobs/sha256");
    let mut found: Vec<_> = std::fs::read_dir(&blobs)
        .expect("layout has blobs")
        .map(|e| e.expect("blob entry").path())
        .filter(|p| accept(&std::fs::read(p).expect("blob reads")))
        .collect();
    assert_eq!(found.len(), 1, "expected one matching blob in {}", blobs.display());
    found.pop().expect("one blob")
}

/// A ustar entry (header and padded data) to put in front of an archive's own entries.
pub fn tar_entry(name: &str, typeflag: u8, link: &str, data: &[u8]) -> Vec<u8> {
    let mut entry = airlock_bundle::tar::header(name, data.len() as u64).expect("a ustar name").to_vec();
    entry[156] = typeflag;
    entry[157..157 + link.len()].copy_from_slice(link.as_bytes());
    fix_checksum(&mut entry);
    entry.extend_from_slice(data);
    entry.resize(entry.len().next_multiple_of(512), 0);
    entry
}
