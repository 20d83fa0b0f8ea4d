//! Every API request of the engine, through one counting wrapper (`kube_api`), and
//! polling an object until it settles (`poll`).

pub(crate) mod kube_api;
pub(crate) mod poll;
