//! Standard tools read what Airlock writes: `skopeo copy` moves a cluster's artifact from
//! the registry to an oci-archive and on to a second registry, keeping the manifest digest,
//! and the result still verifies (spec 9.1-9.4).

use std::process::Command;

use airlock_bundle::Limits;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::verify::Floor;
use airlock_store::{Fetch, PublishMeta, StoreRef, fetch_verified, open};

fn skopeo(args: &[&str]) -> String {
    let out = Command::new("skopeo").args(args).output().expect("skopeo is installed by hack/test.sh");
    assert!(out.status.success(), "skopeo {args:?}: {}", String::from_utf8_lossy(&out.stderr));
    String::from_utf8(out.stdout).unwrap()
}

fn manifest_digest(reference: &str) -> String {
    let raw = skopeo(&["inspect", "--raw", "--tls-verify=false", reference]);
    airlock_bundle::Digest::of(raw.as_bytes()).to_string()
}

#[tokio::test]
async fn skopeo_copies_registry_to_archive_to_registry_keeping_digest_and_signature() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (src_host, dst_host) = (airlock_e2e::service_env("AIRLOCK_REGISTRY"), airlock_e2e::service_env("AIRLOCK_REGISTRY_REMOTE"));
    let prefix = format!("interop-{}-{}", jiff::Timestamp::now().as_second(), std::process::id());
    let fx = Fixture::new(1);
    let signed = fx.signed(7, Fixture::files());

    let src = StoreRef::OciRegistry { host: src_host.clone(), prefix: prefix.clone(), plain_http: true };
    open(&src, &Default::default()).await.unwrap().publish(&[signed], &PublishMeta::default()).await.unwrap();
    let source_ref = format!("docker://{src_host}/{prefix}/fleet/edge-1:v7");
    let original = manifest_digest(&source_ref);

    let tmp = tempfile::tempdir().unwrap();
    let archive = tmp.path().join("carried.tar");
    let archive_ref = format!("oci-archive:{}:fleet/edge-1:latest", archive.display());
    skopeo(&["copy", "--quiet", "--src-tls-verify=false", &source_ref, &archive_ref]);
    let dest_ref = format!("docker://{dst_host}/{prefix}/fleet/edge-1:latest");
    skopeo(&["copy", "--quiet", "--dest-tls-verify=false", &archive_ref, &dest_ref]);
    assert_eq!(manifest_digest(&dest_ref), original, "skopeo changed the manifest");

    // The archive skopeo wrote and the far registry both still verify in full.
    for reference in
        [StoreRef::OciArchive(archive.clone()), StoreRef::OciRegistry { host: dst_host.clone(), prefix: prefix.clone(), plain_http: true }]
    {
        let store = open(&reference, &Default::default()).await.unwrap();
        let fetched = fetch_verified(store.as_ref(), &fx.expect(&Floor::default()), &Limits::SPEC).await;
        let Ok(Fetch::New(bundle)) = fetched else { panic!("{reference}: {fetched:?}") };
        assert_eq!(bundle.predicate().version, 7);
        assert_eq!(bundle.bundle().file_count(), 3);
    }
}
