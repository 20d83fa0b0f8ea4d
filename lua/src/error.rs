//! What can go wrong with a script, each error naming the profile, the resource and the
//! key the script came from, and the script line where Lua knows it.

use std::fmt;
use std::time::Duration;

use super::budget::{LuaBudget, Meter, Spent};
use super::sandbox::SCRIPT_CHUNK;

/// Where a script came from, for error messages: the profile, the ConfigMap/Secret, the key.
#[derive(Debug, Clone, Copy)]
pub struct LuaSource<'a> {
    pub profile: &'a str,
    /// The resource holding the script, e.g. `ConfigMap default/lua`.
    pub resource: &'a str,
    pub key: &'a str,
}

impl fmt::Display for LuaSource<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "profile {:?}, {}, key {:?}", self.profile, self.resource, self.key)
    }
}

/// A place in a script.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub profile: String,
    pub resource: String,
    pub key: String,
    /// 1-based; `None` where Lua gives no position.
    pub line: Option<u32>,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "profile {:?}, {}, key {:?}", self.profile, self.resource, self.key)?;
        match self.line {
            Some(line) => write!(f, ", line {line}"),
            None => Ok(()),
        }
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum LuaError {
    #[error("lua script {at}: syntax error: {message}")]
    Syntax { at: Location, message: String },
    /// After the top-level code ran, the global `evaluate` is not a function.
    #[error("lua script {at}: defines no function evaluate (the global is {found})")]
    NoEvaluate { at: Location, found: &'static str },
    /// An error raised while running: by Lua, by a helper, or by the script's `error()`.
    #[error("lua script {at}: {message}")]
    Runtime { at: Location, message: String },
    #[error("lua script {at}: evaluate returned {found}, not a table")]
    NotATable { at: Location, found: &'static str },
    #[error("lua script {at}: evaluate returned an array, not a table with a resources field")]
    ResultIsArray { at: Location },
    #[error("lua script {at}: field {field:?} of the returned table is a {found}, not a string of manifests")]
    ResourcesNotString { at: Location, field: String, found: &'static str },
    /// A judging script (a health check's, an evaluation's) returned an array; `verdict`
    /// names the field it should have had (`healthy`, `matching`).
    #[error("lua script {at}: evaluate returned an array, not a table with a {verdict} field")]
    VerdictIsArray { at: Location, verdict: &'static str },
    #[error("lua script {at}: field {field:?} of the returned table is a {found}, not a boolean")]
    VerdictNotBool { at: Location, field: String, found: &'static str },
    #[error("lua script {at}: field {field:?} of the returned table is a {found}, not a string")]
    MessageNotString { at: Location, field: String, found: &'static str },
    /// A health check's `evaluate` returned statuses that are not Sveltos's shape: `what`
    /// names the field (`resources[2].status`) and what is wrong with it.
    #[error("lua script {at}: {what}")]
    BadStatuses { at: Location, what: String },
    /// An event source's aggregated selection returned `resources` that is not a list of
    /// objects.
    #[error("lua script {at}: field {field:?} of the returned table is a {found}, not a list of objects")]
    SelectionNotList { at: Location, field: String, found: &'static str },
    #[error("lua script {at}: instruction budget exceeded: more than {limit} instructions")]
    InstructionBudget { at: Location, limit: u64 },
    #[error("lua script {at}: memory budget exceeded: more than {limit_bytes} bytes")]
    MemoryBudget { at: Location, limit_bytes: usize },
    #[error("lua script {at}: time budget exceeded: more than {limit:?}")]
    TimeBudget { at: Location, limit: Duration },
    #[error("lua script {at}: output of {actual_bytes} bytes exceeds {limit_bytes}")]
    OutputTooLarge { at: Location, actual_bytes: usize, limit_bytes: usize },
}

impl LuaSource<'_> {
    pub(super) fn at(&self, line: Option<u32>) -> Location {
        Location { profile: self.profile.to_string(), resource: self.resource.to_string(), key: self.key.to_string(), line }
    }

    /// `err`, raised while loading or running the script, as a [`LuaError`]. A budget the
    /// meter saw run out wins over whatever error the script made of it.
    pub(super) fn error(&self, err: &mlua::Error, meter: Option<&Meter>, budget: &LuaBudget) -> LuaError {
        match meter.and_then(Meter::spent) {
            Some(Spent::Instructions) => {
                return LuaError::InstructionBudget { at: self.at(meter.and_then(Meter::line)), limit: budget.instructions };
            }
            Some(Spent::Time) => return LuaError::TimeBudget { at: self.at(meter.and_then(Meter::line)), limit: budget.time },
            None => {}
        }
        let (line, message) = describe(err);
        if is_memory(err) {
            return LuaError::MemoryBudget { at: self.at(line), limit_bytes: budget.memory_bytes };
        }
        match err {
            mlua::Error::SyntaxError { .. } => LuaError::Syntax { at: self.at(line), message },
            _ => LuaError::Runtime { at: self.at(line), message },
        }
    }
}

fn is_memory(err: &mlua::Error) -> bool {
    match err {
        mlua::Error::MemoryError(_) => true,
        mlua::Error::CallbackError { cause, .. } | mlua::Error::WithContext { cause, .. } => is_memory(cause),
        _ => false,
    }
}

/// The script line of `err`, if Lua gave one, and its message without position or
/// traceback. A helper's error has no position of its own: its line is the first of
/// the script in the traceback, the call.
fn describe(err: &mlua::Error) -> (Option<u32>, String) {
    match err {
        mlua::Error::CallbackError { traceback, cause } => {
            let (line, message) = describe(cause);
            (line.or_else(|| traceback_line(traceback)), message)
        }
        mlua::Error::WithContext { cause, .. } => describe(cause),
        mlua::Error::RuntimeError(text) | mlua::Error::SyntaxError { message: text, .. } | mlua::Error::MemoryError(text) => {
            let (text, traceback) = text.split_once("\nstack traceback:").unwrap_or((text, ""));
            match position(text) {
                Some((line, message)) => (Some(line), message.to_string()),
                None => (traceback_line(traceback), text.to_string()),
            }
        }
        other => (None, other.to_string()),
    }
}

/// `script:LINE: message` split into its parts.
fn position(text: &str) -> Option<(u32, &str)> {
    let rest = text.strip_prefix(SCRIPT_CHUNK)?.strip_prefix(':')?;
    let (line, message) = rest.split_once(':')?;
    Some((line.parse().ok()?, message.strip_prefix(' ').unwrap_or(message)))
}

/// The first script line in a traceback (`\tscript:5: in function 'evaluate'`).
fn traceback_line(traceback: &str) -> Option<u32> {
    traceback.lines().find_map(|frame| position(frame.trim_start()).map(|(line, _)| line))
}
