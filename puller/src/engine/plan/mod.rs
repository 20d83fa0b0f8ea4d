//! What a run will do before it writes: kinds resolved by discovery (`scope`), the
//! watch-namespaces policy (`policy`, `namespace_keys`), tenants (`tenant`), what a
//! refusal or a held-back part stops (`gate`), and each Helm release's operation
//! (`hook`, listed for the report by `charts`).

pub(crate) mod charts;
pub(crate) mod gate;
pub(crate) mod hook;
pub mod namespace_keys;
pub(crate) mod policy;
pub(crate) mod scope;
pub(crate) mod tenant;
