//! A compressed or plain part against a valid signed envelope: decompression caps, digest,
//! walk. Whatever passes must be exactly the signed part.
#![no_main]

use airlock_bundle::gzip;
use airlock_bundle::verify::{Floor, Transport, verify_envelope};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fx = Fixture::new(1);
    let signed = fx.signed(1, Fixture::files());
    let expected = signed.bundle.part("ClusterProfile.web").expect("fixture part").tar();
    let floor = Floor::default();
    let env = verify_envelope(&signed.envelope, None, &fx.expect(&floor), &Limits::SPEC).expect("fixture verifies");
    if env.verify_part("ClusterProfile.web", Transport::Tar(data), &Limits::SPEC).is_ok() {
        assert_eq!(data, expected.as_slice());
    }
    if env.verify_part("ClusterProfile.web", Transport::Gzip(data), &Limits::SPEC).is_ok() {
        assert_eq!(gzip::decompress(data, expected.len() as u64, &Limits::SPEC).unwrap(), expected);
    }
});
