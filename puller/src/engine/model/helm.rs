//! What a Helm release's annotations make of one object (spec 2.5.3), read: its hook, the
//! wait before the release's post- hooks, and which failed operations delete it. Reading
//! them is `plan::hook`'s (the hook) and `parse::helm_annotations`' (the rest); firing
//! hooks, waiting and cleaning up the apply stage's.

use std::time::Duration;

use airlock_bundle::vocabulary::HookEvent;

/// A hook object's annotations, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hook {
    pub events: Vec<HookEvent>,
    pub weight: i32,
    /// `before-hook-creation`: the previous copy is deleted, and gone, before it is created.
    pub delete_before: bool,
    /// `hook-succeeded`: deleted once it finished well.
    pub delete_succeeded: bool,
    /// `hook-failed`: deleted when it failed or timed out.
    pub delete_failed: bool,
    pub timeout: Duration,
}

/// An object's wait annotations, read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wait {
    /// A Job is waited for until it completed, not only applied.
    pub jobs: bool,
    pub timeout: Duration,
}

/// Which failed operations delete the objects they created.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CleanupOnFail {
    pub install: bool,
    pub upgrade: bool,
}
