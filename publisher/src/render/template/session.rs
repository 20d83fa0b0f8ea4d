//! What one render lends the template functions besides their arguments: the random
//! stream, the clock, the resources of `templateResourceRefs` and a budget for costly
//! calls. Entry point: [`Session`].
//!
//! Compiled templates are cached and their functions bound once, so per-render state
//! cannot be captured when they are made; like the position tracker, each function holds
//! a [`Session`] that the render fills before it runs and empties after.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};

use gotmpl::{TemplateError, Value};
use rand_chacha::ChaCha20Rng;

use super::RenderEntropy;

/// What a function puts before its message when it cannot run in this render; `render`
/// turns such a failure into `TemplateError::Unavailable`.
pub(super) const UNAVAILABLE_PREFIX: &str = "unavailable: ";

/// Why a function cannot run in this render.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum Unavailable {
    /// A random function, in a render its caller gave no entropy.
    WithoutEntropy,
    /// `now` and what depends on it, in a render its caller gave no clock.
    WithoutClock,
    /// `getHostByName`: in pull mode the publisher does no DNS for the clusters it renders for.
    PullMode,
}

impl Unavailable {
    const ALL: [Unavailable; 3] = [Unavailable::WithoutEntropy, Unavailable::WithoutClock, Unavailable::PullMode];

    fn code(self) -> &'static str {
        match self {
            Unavailable::WithoutEntropy => "no-entropy",
            Unavailable::WithoutClock => "no-clock",
            Unavailable::PullMode => "no-network",
        }
    }

    /// The reason and function a message made by [`unavailable`] names.
    pub(super) fn parse(message: &str) -> Option<(Unavailable, &str)> {
        let (code, function) = message.strip_prefix(UNAVAILABLE_PREFIX)?.split_once(' ')?;
        Self::ALL.into_iter().find(|reason| reason.code() == code).map(|reason| (reason, function))
    }
}

impl std::fmt::Display for Unavailable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Unavailable::WithoutEntropy => "this render has no entropy source, so its random values would change on every publish",
            Unavailable::WithoutClock => "this render has no clock, so its output would change on every publish",
            Unavailable::PullMode => {
                "it is not available in pull mode: the publisher would resolve the name with its own DNS, not the managed cluster's"
            }
        })
    }
}

/// The state of the render running now, shared with every function of its template.
#[derive(Clone, Default)]
pub(super) struct Session(Arc<Mutex<Option<State>>>);

pub(super) struct State {
    /// `None` when the caller gave no entropy: random functions then fail.
    pub entropy: Option<RenderEntropy>,
    /// The stream drawn from `entropy`, opened by the first random function.
    pub stream: Option<ChaCha20Rng>,
    /// `None` when the caller gave no clock: `now` then fails.
    pub now: Option<jiff::Timestamp>,
    /// `.MgmtResources`: the `templateResourceRefs` objects by identifier.
    pub resources: Value,
    /// Identifiers of optional entries whose object is missing.
    pub absent: BTreeSet<String>,
    /// Key generations and password hashes this render may still run.
    pub costly_left: u32,
    /// Whether a function read the clock: output that did changes with it.
    pub read_clock: bool,
}

impl Session {
    pub fn begin(&self, state: State) {
        *self.lock() = Some(state);
    }

    /// Ends the render, handing back its state.
    pub fn end(&self) -> Option<State> {
        self.lock().take()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Option<State>> {
        // A function that panicked mid-call leaves nothing half-written that matters.
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn with<T>(&self, function: &str, f: impl FnOnce(&mut State) -> gotmpl::Result<T>) -> gotmpl::Result<T> {
        match self.lock().as_mut() {
            Some(state) => f(state),
            None => Err(TemplateError::Exec(format!("error calling {function}: called outside a render"))),
        }
    }

    /// What `now` returns in this render.
    pub fn now(&self, function: &str) -> gotmpl::Result<jiff::Timestamp> {
        self.with(function, |state| {
            state.read_clock = true;
            state.now.ok_or_else(|| unavailable(function, Unavailable::WithoutClock))
        })
    }

    /// `f` with the render's random stream, which fails when the render has none.
    pub fn random<T>(&self, function: &str, f: impl FnOnce(&mut ChaCha20Rng) -> gotmpl::Result<T>) -> gotmpl::Result<T> {
        self.with(function, |state| {
            if state.stream.is_none() {
                state.stream = state.entropy.as_ref().map(RenderEntropy::stream);
            }
            match state.stream.as_mut() {
                Some(stream) => f(stream),
                None => Err(unavailable(function, Unavailable::WithoutEntropy)),
            }
        })
    }

    /// Takes one costly call from the render's budget: key generation, bcrypt and scrypt
    /// take up to seconds each.
    pub fn costly(&self, function: &str) -> gotmpl::Result<()> {
        self.with(function, |state| {
            state.costly_left = state.costly_left.checked_sub(1).ok_or_else(|| {
                TemplateError::Exec(format!(
                    "error calling {function}: this render has used up its budget of key generations and password hashes"
                ))
            })?;
            Ok(())
        })
    }

    /// The `templateResourceRefs` object named `identifier`; `None` for an optional entry
    /// whose object is missing.
    pub fn resource(&self, function: &str, identifier: &str) -> gotmpl::Result<Option<Value>> {
        self.with(function, |state| {
            let found = match &state.resources {
                Value::Map(resources) => resources.get(identifier).cloned(),
                _ => None,
            };
            match found {
                Some(object) => Ok(Some(object)),
                None if state.absent.contains(identifier) => Ok(None),
                None => Err(TemplateError::Exec(format!(
                    "error calling {function}: no templateResourceRefs entry has the identifier {identifier:?}"
                ))),
            }
        })
    }
}

/// The error of a function that cannot run here, with the reason.
pub(super) fn unavailable(function: &str, reason: Unavailable) -> TemplateError {
    TemplateError::Exec(format!("{UNAVAILABLE_PREFIX}{} {function}", reason.code()))
}
