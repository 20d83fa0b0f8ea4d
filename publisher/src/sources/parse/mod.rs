//! Parsing the Sveltos v1beta1 objects into `model`'s typed values: [`parse_cluster`] for a
//! SveltosCluster, [`parse_set`] for a ClusterSet or Set, [`parse_profile`] for a
//! ClusterProfile or Profile. Fields the publisher does not honour become notes on the
//! profile (`fields`), so nothing is dropped silently; what cannot be used at all is a
//! [`ModelError`](super::model::ModelError) naming the object and the field.
//!
//! Fields are read one at a time (`reader`), so a value of the wrong type is named by its
//! path (`spec.policyRefs[2].tier`) rather than by serde's position in the object.

mod checks;
mod classifier;
mod cluster;
mod event;
mod health_check;
mod helm_chart;
mod kustomization;
mod profile;
mod reader;
mod refs;
mod role_request;
mod tenant;
#[cfg(test)]
mod tests;

pub use classifier::parse_classifier;
pub use cluster::{parse_cluster, parse_set};
pub use event::{parse_event_source, parse_event_trigger};
pub use health_check::{parse_cluster_health_check, parse_health_check};
pub use profile::{parse_profile, part_of_unreadable};
pub use role_request::parse_role_request;
