//! What a run tells about itself, and why a command failed: the report of a run
//! ([`report`]), the error every command ends with ([`failure`]), the copy of the latest
//! report kept in the cluster ([`last_report`]), the signed report files (`writer`, read
//! back by [`files`] for export) and the push of reports to the store (`push`). Filling a
//! report is the commands' business; these modules only carry it.

pub mod failure;
pub mod files;
pub mod last_report;
pub(crate) mod push;
pub mod report;
pub(crate) mod writer;
