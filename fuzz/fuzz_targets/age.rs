//! age files: any bytes, armored or binary, decrypted with the identity the seeds are
//! encrypted to, never panic and never return more than the cap; any plaintext encrypts and
//! decrypts back to itself.
#![no_main]

use airlock_bundle::age::{Identity, decrypt, encrypt};
use libfuzzer_sys::fuzz_target;

/// The cap the fuzzer's inputs are held to: far above what 64 KiB of input can carry.
const MAX_PLAINTEXT: u64 = 1 << 20;

fuzz_target!(|data: &[u8]| {
    // One that opens nothing, then the one fuzz/seeds/age/ is encrypted to.
    let identities = [Identity::from_secret([8; 32]), Identity::from_secret([7; 32])];
    if let Ok(plain) = decrypt(data, &identities, MAX_PLAINTEXT) {
        assert!(plain.len() as u64 <= MAX_PLAINTEXT);
    }
    let file = encrypt(data, &[identities[1].recipient()], &[3; 32]);
    assert_eq!(decrypt(&file, &identities, u64::MAX).as_deref(), Ok(data));
});
