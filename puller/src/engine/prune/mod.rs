//! Removing what left the bundle: prune by inventory (`by_inventory`), releasing
//! adopted objects (`release`), and the ownership rules that refuse takeovers and hold
//! mass prunes (`ownership`, `owner`, and `foreign`, which reads what a run would take over).

pub(crate) mod by_inventory;
pub(crate) mod foreign;
pub(crate) mod owner;
pub(crate) mod ownership;
pub(crate) mod release;
