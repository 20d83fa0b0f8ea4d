//! What a run does with one object, decided before anything is sent: the step the apply
//! stages, drift correction, a plan's preview and the ownership rules share. Doing it is
//! `apply::send`'s.

use airlock_bundle::vocabulary::HookEvent;

use super::object::InventoryEntry;

/// What to do with one target.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Step {
    /// Server-side apply (a dry-run one under `Settings::dry_run`).
    Apply,
    /// Re-apply because the live object drifted; the text says how.
    Correct(String),
    /// Server-side dry-run only, reported with a diff (DryRun profiles, plan).
    Preview,
    /// Nothing to send: unchanged since the previous inventory.
    Unchanged,
    /// OneTime and applied before: never touched again; the previous entry stays.
    Keep(Box<InventoryEntry>),
    /// Create-only: created when absent, else left alone; never in the inventory.
    CreateOnly,
    /// Not sent, with why (spec 5.7); the previous entry stays.
    Skip(String),
    /// A Helm hook fired on this event: applied, waited for, deleted by its policy
    /// (`hook_run`).
    Fire(HookEvent),
    /// A Helm hook that does not fire this run, with why: recorded, not sent.
    Idle(&'static str),
}

impl Step {
    /// Whether the step sends the object, so that a refusal before it may stop it.
    pub(crate) fn sends(&self) -> bool {
        matches!(self, Step::Apply | Step::Correct(_) | Step::Preview | Step::CreateOnly | Step::Fire(_))
    }
}
