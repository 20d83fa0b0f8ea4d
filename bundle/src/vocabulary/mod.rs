//! The contract's vocabulary: the `airlock.dev/*` label and annotation names both binaries
//! read or write, and the Helm hook events and delete policies of spec 2.5.3, named once so
//! that a typo on one side does not compile. It acts on nothing: parsing an object's
//! annotations, deciding what a hook does and writing the objects are the publisher's and
//! the puller's business.
//!
//! [`objects`] holds the names on the objects a bundle carries (and on what the puller
//! writes beside them), [`management`] those the publisher writes on the management
//! cluster's objects and the puller on its own state, [`hooks`] the hook annotations and
//! their values.

pub mod hooks;
pub mod management;
pub mod objects;

pub use hooks::*;
pub use management::*;
pub use objects::*;
