//! The in-memory tar walk: any bytes, never a panic; what it accepts re-serialises to the
//! same bytes (canonical means exactly one encoding).
#![no_main]

use airlock_bundle::tar::{walk, write_canonical};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(entries) = walk(data) {
        let files: Vec<(&str, &[u8])> = entries.iter().map(|e| (e.path.as_str(), e.bytes)).collect();
        if files.iter().all(|(p, _)| airlock_bundle::path::check_path(p).is_ok()) {
            assert_eq!(write_canonical(&files), data);
        }
    }
});
