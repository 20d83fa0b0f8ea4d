//! Keyring files and keyring chains: parse, and follow a chain from the test keyring.
#![no_main]

use airlock_bundle::Keyring;
use airlock_bundle::testkit::Fixture;
use airlock_bundle::Limits;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(k) = Keyring::parse(data, &Limits::SPEC) {
        assert!(k.threshold() >= 1 && k.threshold() <= k.keys().len());
        assert_eq!(Keyring::parse(&k.to_json(), &Limits::SPEC).as_ref(), Ok(&k));
    }
    let fx = Fixture::new(1);
    if let Ok(next) = fx.keyring.follow_chain(data, &Limits::SPEC) {
        assert!(next.version() >= fx.keyring.version());
    }
});
