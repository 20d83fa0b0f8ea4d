//! Drift detection: live objects listed per kind and compared with the desired ones
//! (`detect`, `compare`). Correcting what drifted is a run of the apply stages.

pub(crate) mod compare;
pub(crate) mod detect;
