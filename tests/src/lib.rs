//! End-to-end tests live in tests/*.rs; this crate has no library code. `src/bin` holds
//! the helpers they run as processes of their own.
