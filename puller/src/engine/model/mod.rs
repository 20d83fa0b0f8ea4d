//! The engine's shared data, acting on nothing: objects and their identities, the
//! settings of a run, the order of stages, outcomes and errors. It imports no other
//! stage of the engine, so each stage can be read and tested on top of it alone.

pub(crate) mod error;
pub(crate) mod exclusion;
pub(crate) mod helm;
pub(crate) mod id;
pub(crate) mod object;
pub(crate) mod order;
pub(crate) mod outcome;
pub(crate) mod settings;
pub(crate) mod step;
pub(crate) mod tenants;
