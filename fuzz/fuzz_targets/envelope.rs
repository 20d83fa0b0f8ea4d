//! Envelope bytes from anywhere: decode, check against the test keyring, parse the payload.
//! Nothing may panic, and nothing unsigned may verify.
#![no_main]

use airlock_bundle::verify::{Floor, verify_envelope};
use airlock_bundle::testkit::Fixture;
use airlock_bundle::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let fx = Fixture::new(1);
    let floor = Floor::default();
    if let Ok(v) = verify_envelope(data, None, &fx.expect(&floor), &Limits::SPEC) {
        // Only the fixture key can sign: an accepted input must carry its valid signature.
        assert_eq!(v.signers(), [fx.keys[0].public().key_id()]);
    }
});
