//! Settings: raw command-line flags (`flags`) and the settings file that registration
//! writes (`file`), merged and checked into [`SyncSettings`] (`checked`) before the puller
//! touches a store or a cluster; `reporting` checks when reports go to the store.
//!
//! Flags override the file field by field. Every value is checked here (cluster id, store
//! reference, namespace names, the keyring and report key files), so later stages never
//! see an unchecked setting. This module does no network I/O; it reads only the local
//! files the settings name, each with a size cap. Entry points: `SyncArgs::check` and
//! `SourceArgs::check`.

mod checked;
mod file;
mod flags;
mod reporting;

pub use checked::{DEFAULT_STATE_NAMESPACE, Source, SourceSettings, SyncSettings, effective_watch_namespaces};
pub use file::{read_capped, read_keyring};
pub use flags::{SourceArgs, SyncArgs};
pub use reporting::{DEFAULT_REPORT_EVERY, Reporting};
