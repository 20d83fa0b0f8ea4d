//! Instantiates a Sveltos template: the content of a ConfigMap or Secret key carrying the
//! `projectsveltos.io/template` annotation, run as a Go `text/template` against one
//! cluster's data. Entry points: [`render_with`], and [`render`] for a render that needs
//! neither randomness nor the clock.
//!
//! It does not decide which resources are templates, gather `.Cluster` and
//! `.MgmtResources`, parse the YAML it produces, hold the secret random values come from,
//! or pick the instant `now` is; the caller does.
//!
//! Functions: Sprig v3's set as Sveltos registers it ([`sprig`]) and Sveltos's resource
//! functions ([`resources`]). Those whose output would change on every call (`randAlpha`,
//! `uuidv4`, `genCA`, `bcrypt`'s salt, ...) draw from the render's [`RenderEntropy`], a
//! deterministic stream keyed by a publisher secret and the render's inputs, so an
//! unchanged cluster renders the same bytes and is not re-published; see [`entropy`] for
//! the guarantees. `now` reads [`RenderEnv::now`], the other input a caller must keep
//! still for output to stay still. Without them those functions fail the render
//! ([`TemplateError::Unavailable`]), as `getHostByName` always does: no DNS in pull mode.
//!
//! Like Sveltos (addon-controller's `instantiateTemplateValues`), templates run with
//! `missingkey=error`: `{{ .Cluster.metadata.labels.missing }}` fails the render instead
//! of printing `<no value>`, while `index` on a missing key still yields nil, as in Go.
//!
//! Engine: the `gotmpl` crate, a port of Go's `text/template` (pipelines, `if/else/range/
//! with`, variables, `{{-`/`-}}` trimming, Go's sorted map iteration, custom functions,
//! `missingkey=error`). It was chosen over `gtmpl` 0.7, which has no `missingkey` option
//! and no positions on runtime errors either, and over a parser of our own. Two gaps in
//! gotmpl 0.6 are closed here: runtime errors carry no line ([`tree`] adds position
//! markers) and stray or missing `{{end}}`s truncate the template silently ([`blocks`]).

mod blocks;
mod bounds;
mod entropy;
mod resources;
mod session;
mod sprig;
#[cfg(test)]
mod tests;
mod tree;
mod values;

pub use entropy::RenderEntropy;
pub use session::Unavailable;

use std::cell::RefCell;
use std::collections::{BTreeSet, HashMap};
use std::fmt;
use std::rc::Rc;

use airlock_bundle::Limits;
use gotmpl::{MissingKey, Template, Value};
use values::from_json;

/// The name gotmpl knows the template by; users' `{{define}}` names are unlikely to clash.
const MAIN: &str = "airlock:main";

/// What one render may consume.
struct RenderLimits {
    /// `{{range}}` iterations. Sveltos templates loop over labels, resources and short
    /// lists; a runaway loop that prints nothing stops here within a second.
    range_iterations: u64,
    /// Bytes of output: no larger output could fit in a bundle.
    output_bytes: u64,
    /// Key generations and password hashes (`genCA`, `genPrivateKey`, `bcrypt`,
    /// `derivePassword`, ...), each up to a second or more of CPU: a chart makes a CA
    /// and a few certificates, not a loop of them.
    costly_calls: u32,
}

const LIMITS: RenderLimits = RenderLimits { range_iterations: 1_000_000, output_bytes: Limits::SPEC.total_bytes, costly_calls: 16 };

/// What a render draws on besides its template and data.
#[derive(Debug, Clone, Default)]
pub struct RenderEnv {
    /// Where random functions draw from; without it they fail the render.
    pub entropy: Option<RenderEntropy>,
    /// What `now` returns, and where generated certificates' validity starts; without
    /// it they fail the render. A caller that wants unchanged inputs to render unchanged
    /// output pins it (for example to when the inputs last changed) rather than passing
    /// the wall clock.
    pub now: Option<jiff::Timestamp>,
    /// Identifiers of optional `templateResourceRefs` whose object is missing: the resource
    /// functions give nothing for them (`getResource` nil, `copy` ""), as Sveltos's do,
    /// where an identifier no entry declares fails the render.
    pub absent: BTreeSet<String>,
}

/// Where a template came from, for error messages: the profile, the ConfigMap/Secret and the key.
#[derive(Debug, Clone, Copy)]
pub struct TemplateSource<'a> {
    pub profile: &'a str,
    /// The resource holding the template, e.g. `ConfigMap default/web-config`.
    pub resource: &'a str,
    pub key: &'a str,
}

/// A position in a template, named so an operator can open the right file at the right line.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Location {
    pub profile: String,
    pub resource: String,
    pub key: String,
    /// 1-based.
    pub line: usize,
    /// 1-based, in characters. For a runtime error, the action that failed.
    pub column: usize,
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "profile {:?}, {}, key {:?}, line {}, column {}", self.profile, self.resource, self.key, self.line, self.column)
    }
}

#[derive(Debug, thiserror::Error, PartialEq)]
#[non_exhaustive]
pub enum TemplateError {
    #[error("template {at}: syntax error: {message}")]
    Syntax { at: Location, message: String },
    #[error("template {at}: function {name:?} not defined")]
    UndefinedFunction { at: Location, name: String },
    #[error("template {at}: map has no entry for key {key:?}")]
    MissingKey { at: Location, key: String },
    /// Sprig's `required` got nil or "".
    #[error("template {at}: required: {message}")]
    Required { at: Location, message: String },
    #[error("template {at}: output exceeds {limit_bytes} bytes")]
    OutputTooLarge { at: Location, limit_bytes: u64 },
    /// Sprig's `fail` was called.
    #[error("template {at}: fail: {message}")]
    Failed { at: Location, message: String },
    /// A function that cannot run in this render: `getHostByName` in pull mode, a
    /// random function in a render given no entropy, `now` in one given no clock.
    #[error("template {at}: {function}: {reason}")]
    Unavailable { at: Location, function: String, reason: Unavailable },
    /// Any other failure while executing: a function's argument, a bad index, a loop limit.
    #[error("template {at}: {message}")]
    Execution { at: Location, message: String },
}

/// Renders `text` with `data` (`{"Cluster": {...}, "MgmtResources": {id: {...}}}`) as dot,
/// with neither entropy nor clock: random functions and `now` fail, so the output is a
/// function of `text` and `data` alone.
pub fn render(source: &TemplateSource<'_>, text: &str, data: &serde_json::Value) -> Result<String, TemplateError> {
    render_with(source, text, data, &RenderEnv::default())
}

/// Renders `text` with `data` as dot, random functions drawing from `env.entropy`.
pub fn render_with(source: &TemplateSource<'_>, text: &str, data: &serde_json::Value, env: &RenderEnv) -> Result<String, TemplateError> {
    render_within(source, text, data, env, &LIMITS).map(|out| out.text)
}

/// What a render produced, and what of its environment it used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Output {
    pub text: String,
    /// A function read `env.now` (`now`, `date` without a time, a generated certificate):
    /// the text changes with the clock, so a caller that keeps output still must keep the
    /// clock still too.
    pub read_clock: bool,
}

/// [`render_with`], saying whether the render read the clock.
pub fn render_observed(
    source: &TemplateSource<'_>,
    text: &str,
    data: &serde_json::Value,
    env: &RenderEnv,
) -> Result<Output, TemplateError> {
    render_within(source, text, data, env, &LIMITS)
}

fn render_within(
    source: &TemplateSource<'_>,
    text: &str,
    data: &serde_json::Value,
    env: &RenderEnv,
    limits: &RenderLimits,
) -> Result<Output, TemplateError> {
    let compiled = compiled(source, text, limits)?;
    compiled.tracker.reset();
    let dot = from_json(data);
    compiled.session.begin(session::State {
        entropy: env.entropy.clone(),
        stream: None,
        now: env.now,
        resources: dot.field("MgmtResources").cloned().unwrap_or(Value::Nil),
        absent: env.absent.clone(),
        costly_left: limits.costly_calls,
        read_clock: false,
    });
    let mut out = CappedWriter { text: String::new(), limit_bytes: limits.output_bytes, overflowed: false };
    let result = if compiled.parsed.lookup(MAIN).is_some() {
        compiled.runnable.execute_template_fmt(&mut out, MAIN, &dot)
    } else {
        // gotmpl files a top level of only whitespace (and `{{define}}`s) under no name;
        // it has no action that could fail or need a marker.
        compiled.parsed.execute_fmt(&mut out, &dot)
    };
    let read_clock = compiled.session.end().is_some_and(|state| state.read_clock);
    match result {
        Ok(()) => Ok(Output { text: out.text, read_clock }),
        Err(err) => Err(execution_error(source, text, compiled.tracker.offset(), err, &out)),
    }
}

/// A template parsed, checked and instrumented, ready to run with any data.
struct Compiled {
    parsed: Template,
    runnable: Template,
    /// Shared by `runnable`'s marker function: runs on one thread at a time, reset before each.
    tracker: tree::Tracker,
    /// Shared by `runnable`'s functions that need the render's state; filled for each run.
    session: session::Session,
    range_iterations: u64,
}

/// Templates compiled on this thread, by text: compiling is most of a render, and a fleet
/// renders the same few templates for thousands of clusters. Emptied when it grows past
/// this, so a long `watch` does not keep every template it ever saw.
const COMPILED_PER_THREAD: usize = 256;

thread_local! {
    static COMPILED: RefCell<HashMap<String, Rc<Compiled>>> = RefCell::new(HashMap::new());
}

/// `text` compiled, from this thread's cache when it compiled it before. Failures are not
/// kept: their messages name `source`, which another use of the same text does not share.
fn compiled(source: &TemplateSource<'_>, text: &str, limits: &RenderLimits) -> Result<Rc<Compiled>, TemplateError> {
    let cached = COMPILED.with_borrow(|c| c.get(text).filter(|c| c.range_iterations == limits.range_iterations).cloned());
    if let Some(compiled) = cached {
        return Ok(compiled);
    }
    let compiled = Rc::new(compile(source, text, limits)?);
    COMPILED.with_borrow_mut(|c| {
        if c.len() >= COMPILED_PER_THREAD {
            c.clear();
        }
        c.insert(text.to_string(), compiled.clone());
    });
    Ok(compiled)
}

fn compile(source: &TemplateSource<'_>, text: &str, limits: &RenderLimits) -> Result<Compiled, TemplateError> {
    let parsed = Template::new(MAIN).parse(text).map_err(|err| match err {
        gotmpl::TemplateError::Lex { message, .. } if message == "unclosed action" => {
            let at = blocks::unclosed_action(text).map_or_else(|| source.at(1, 1), |offset| source.locate(text, offset));
            TemplateError::Syntax { at, message: "unclosed action: no }} after this {{".into() }
        }
        gotmpl::TemplateError::Parse { line, col, message, .. } | gotmpl::TemplateError::Lex { line, col, message, .. } => {
            TemplateError::Syntax { at: source.at(line, col), message }
        }
        other => TemplateError::Syntax { at: source.at(1, 1), message: other.to_string() },
    })?;
    blocks::check(text).map_err(|err| TemplateError::Syntax { at: source.locate(text, err.offset), message: err.message })?;

    let tracker = tree::Tracker::default();
    let session = session::Session::default();
    let mut funcs = sprig::funcs(&session);
    funcs.extend(bounds::bounded(resources::funcs(&session).into_iter().collect()));
    tracker.register(&mut funcs);
    let mut runnable = Template::new(MAIN).missing_key(MissingKey::Error).max_range_iters(limits.range_iterations);
    for name in parsed.templates() {
        let Some(body) = parsed.lookup(name) else { continue };
        if let Some((function, offset)) = tree::undefined_function(body, &funcs) {
            return Err(TemplateError::UndefinedFunction { at: source.locate(text, offset), name: function.to_string() });
        }
        runnable = runnable.add_parse_tree(name, tree::instrument(body));
    }
    let runnable = runnable.funcs(funcs);
    Ok(Compiled { parsed, runnable, tracker, session, range_iterations: limits.range_iterations })
}

impl TemplateSource<'_> {
    fn at(&self, line: usize, column: usize) -> Location {
        Location { profile: self.profile.to_string(), resource: self.resource.to_string(), key: self.key.to_string(), line, column }
    }

    fn locate(&self, text: &str, offset: usize) -> Location {
        let before = &text[..offset.min(text.len())];
        let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
        self.at(before.matches('\n').count() + 1, before[line_start..].chars().count() + 1)
    }
}

fn execution_error(
    source: &TemplateSource<'_>,
    text: &str,
    offset: usize,
    err: gotmpl::TemplateError,
    out: &CappedWriter,
) -> TemplateError {
    let at = source.locate(text, offset);
    match err {
        gotmpl::TemplateError::MissingKey { key } => TemplateError::MissingKey { at, key },
        gotmpl::TemplateError::UndefinedFunction(name) => TemplateError::UndefinedFunction { at, name },
        gotmpl::TemplateError::Exec(message) => {
            if let Some(required) = message.strip_prefix(sprig::REQUIRED_PREFIX) {
                TemplateError::Required { at, message: required.to_string() }
            } else if let Some(failed) = message.strip_prefix(sprig::FAIL_PREFIX) {
                TemplateError::Failed { at, message: failed.to_string() }
            } else if let Some((reason, function)) = Unavailable::parse(&message) {
                TemplateError::Unavailable { at, function: function.to_string(), reason }
            } else {
                TemplateError::Execution { at, message }
            }
        }
        gotmpl::TemplateError::Write if out.overflowed => TemplateError::OutputTooLarge { at, limit_bytes: out.limit_bytes },
        other => TemplateError::Execution { at, message: other.to_string() },
    }
}

/// Collects output up to `limit_bytes`, then fails the write.
struct CappedWriter {
    text: String,
    limit_bytes: u64,
    overflowed: bool,
}

impl fmt::Write for CappedWriter {
    fn write_str(&mut self, s: &str) -> fmt::Result {
        if (self.text.len() + s.len()) as u64 > self.limit_bytes {
            self.overflowed = true;
            return Err(fmt::Error);
        }
        self.text.push_str(s);
        Ok(())
    }
}
