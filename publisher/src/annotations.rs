//! What the publisher writes on a management cluster's SveltosClusters, named once for
//! `register`, which creates them, `ingest`, which records the pullers' reports on them,
//! and `publish`, which reads how to seal each cluster's bundle: the field manager of those
//! writes. The annotations' names are the contract's (`airlock_bundle::vocabulary`),
//! Sveltos's own annotations `sources::model`'s.

/// Field manager of the SveltosClusters `register` applies and `ingest` updates.
pub const FIELD_MANAGER: &str = "airlock-publisher";
