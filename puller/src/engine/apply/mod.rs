//! Writing the desired objects: the stages in order (`stages`), one object at a time
//! (`send`, `recreate`), Helm hooks and waits (`hook_run`, `ready`), cleanup after a failed
//! release operation (`cleanup`), the reloader (`reload`) and the dry-run preview of a
//! plan (`preview`).

pub(crate) mod cleanup;
pub(crate) mod hook_run;
pub(crate) mod preview;
pub(crate) mod ready;
pub(crate) mod recreate;
pub(crate) mod reload;
pub(crate) mod send;
pub(crate) mod stages;
