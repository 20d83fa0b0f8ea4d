//! OCI manifests and indexes as stores return them.
#![no_main]

use airlock_store::oci::{OciIndex, RawManifest};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(m) = RawManifest::parse("fuzz", "manifest", data.to_vec()) {
        let _ = m.descriptors();
    }
    let _ = serde_json::from_slice::<OciIndex>(data);
});
