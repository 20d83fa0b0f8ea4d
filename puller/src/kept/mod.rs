//! What the puller keeps in the cluster between runs, all in its state namespace: the state
//! Secret (`state`) and the inventory Secret (`inventory`), read and written as a pair by
//! `state_store`; inside the state, the record of the envelope last verified (`verified`)
//! and the count of failed runs per part (`failures`). The latest report, kept in a
//! ConfigMap, is `reports::last_report`'s.
//!
//! `gz_secret` is the codec and compare-and-swap the two Secrets share, `meta` names and
//! marks every kept object (the Lease too), and `error` says why a kept object could not
//! be used. Nothing here decides what to apply or fetches a bundle; the sync command
//! (`cmd::sync`) decides when each is read and written.

pub mod delete_checks;
pub mod error;
pub mod failures;
pub mod gz_secret;
pub mod identity;
pub mod inventory;
pub mod meta;
pub mod state;
pub mod state_store;
pub mod verified;
