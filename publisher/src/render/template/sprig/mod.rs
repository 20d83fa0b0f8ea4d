//! Sprig v3's template functions as Sveltos gives them to templates, with Sprig's names
//! and argument order (`replace old new s`, `trimPrefix prefix s`, ...), so a value piped
//! in lands last. Entry point: [`funcs`].
//!
//! Sveltos registers Sprig's whole function map, replaces its JSON and YAML helpers and
//! adds TOML ones (libsveltos `funcmap`); `env` and `expandenv` are left out, as they
//! would read the publisher's environment. Go's builtins (`printf`, `len`, `index`, `eq`,
//! `and`, `urlquery`, ...) come from gotmpl; Sprig's `slice` replaces the builtin, as it
//! does in Go. Sveltos's resource functions are in `template::resources`.
//!
//! One file per group, as Sprig's documentation groups them. What every function shares:
//!
//! - Arguments convert as Go converts them for Sprig's parameters (`args`, `cast`).
//! - Results are bounded in size, items and depth (`bounds`).
//! - Random values, the clock and costly calls go through the render's `Session`.
//! - Where Sprig or Sveltos turn bad input into an error text or an empty value that
//!   would be published inside a manifest, the render fails with the reason instead. The
//!   `must*` twins therefore behave like the plain functions.
//!
//! Departures beyond that are named in each group's overview: dictionaries do not change
//! in place, times are carried as Go's time text, integers have one type.

pub(super) mod args;
mod cast;
mod certs;
mod dates;
mod defaults;
mod dicts;
mod duration;
mod encoding;
pub(super) mod formats;
mod hashes;
mod keys;
mod layout;
mod lists;
mod math;
mod mathf;
mod network;
mod passwords;
mod paths;
mod random;
mod reflect;
mod regex;
mod semver;
mod strings;
mod strlists;
mod timeparse;
mod urls;
mod words;

use std::sync::Arc;

use gotmpl::{FuncMap, ValueFunc};

pub(super) use defaults::{FAIL_PREFIX, REQUIRED_PREFIX};

use super::bounds;
use super::session::Session;

/// The Sprig functions, by their template names, each bounded; those that need the
/// render's state hold `session`.
pub(super) fn funcs(session: &Session) -> FuncMap {
    let stateless = [
        strings::funcs(),
        words::funcs(),
        strlists::funcs(),
        regex::funcs(),
        lists::funcs(),
        dicts::funcs(),
        defaults::funcs(),
        math::funcs(),
        mathf::funcs(),
        encoding::funcs(),
        formats::funcs(),
        paths::funcs(),
        urls::funcs(),
        reflect::funcs(),
        semver::funcs(),
        hashes::funcs(),
        network::funcs(),
    ];
    let mut funcs: FuncMap = stateless.into_iter().flatten().map(|(name, f)| (name.to_string(), Arc::new(f) as ValueFunc)).collect();
    for (name, f) in [random::funcs(session), dates::funcs(session), passwords::funcs(session), keys::funcs(session), certs::funcs(session)]
        .into_iter()
        .flatten()
    {
        funcs.insert(name.to_string(), f);
    }
    bounds::bounded(funcs)
}
