//! Mirrors of the places profiles fetch from: `--mirror FROM=TO` and `--mirror-file`,
//! so profiles written for the internet render unchanged inside an enclave that holds
//! copies of their chart repositories, registries and Git repositories.
//!
//! A [`Mirrors`] table is checked once, before any I/O ([`Mirrors::parse`]), then asked
//! for every URL just before it is fetched ([`Mirrors::rewrite`]): Helm repositories
//! (`render::helm`), `remoteURL`s and Flux OCIRepositories (`sources::remote`), Flux
//! GitRepositories (`render::kustomize`). Only the fetch goes to the mirror: what a
//! bundle records (the `airlock.dev/helm-repository` annotation, messages naming a
//! profile's source) keeps the URL the profile wrote. Not the air-gap transport of
//! bundles (`airlock_store::mirror`); this module reads no file and contacts nothing.
//!
//! Rules: FROM and TO are absolute URLs of one kind (`http`/`https`, `oci`, or `git`), without user information, query or fragment; a trailing `/` is
//! ignored. A URL is mirrored by a FROM it equals or continues past a `/` (or past the
//! `:tag` or `@digest` of an OCI reference, when FROM names a path); the longest such FROM
//! wins. The user information a profile's URL carries stays with the rewritten URL. A TO
//! of `oci+http://` is an `oci://` registry spoken to over plain HTTP, as a store is.

use std::borrow::Cow;

use serde::{Deserialize, Serialize};

/// The schemes a mirror may name, by kind: FROM and TO must be of one kind.
const KINDS: &[(&str, &[&str])] = &[("HTTP", &["http", "https"]), ("OCI", &["oci", PLAIN_OCI]), ("Git", &["git"])];
/// A registry mirror that speaks plain HTTP: a TO only, as no profile names it.
const PLAIN_OCI: &str = "oci+http";

/// Why a mirror was refused. Each names where it was given (`--mirror number 2`,
/// `--mirror-file PATH line 3`) and never a value that could hold a credential.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum MirrorError {
    #[error("{place}: expected FROM=TO, two absolute URLs (http://, https://, oci:// or git://)")]
    NotAPair { place: String },
    #[error("{place}: {side} {url} has no scheme:// and host")]
    NotAbsolute { place: String, side: &'static str, url: String },
    #[error("{place}: {side} has scheme {scheme:?}; a FROM is http, https, oci or git, a TO also oci+http")]
    UnknownScheme { place: String, side: &'static str, scheme: String },
    #[error(
        "{place}: {from} is mirrored by {to}, a URL of another kind ({from_kind} and {to_kind}): an oci:// FROM needs an oci:// or oci+http:// TO, http(s) an http(s), git a git"
    )]
    KindMismatch { place: String, from: String, to: String, from_kind: &'static str, to_kind: &'static str },
    /// A login on the command line or in a file would show in `ps` and in logs; the
    /// profile's credentials Secret is sent to the mirror instead.
    #[error("{place}: {side} carries a user or password; the profile's credentials are sent to the mirror")]
    Credentials { place: String, side: &'static str },
    #[error("{place}: {side} {url} has a query or fragment; a mirror is a URL prefix")]
    QueryOrFragment { place: String, side: &'static str, url: String },
    #[error("{place}: {from} is mirrored already, by {first}")]
    Duplicate { place: String, from: String, first: String },
}

/// One `FROM=TO`, kept without the trailing `/`, an `oci+http://` TO as `oci://`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
struct Rule {
    from: String,
    to: String,
    /// TO was `oci+http://`.
    plain_http: bool,
}

/// Where one fetch goes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target<'u> {
    pub url: Cow<'u, str>,
    /// A mirrored registry to speak plain HTTP to, whatever the profile says.
    pub plain_http: bool,
}

/// The mirrors of one publisher, longest FROM first.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct Mirrors {
    rules: Vec<Rule>,
}

impl Mirrors {
    /// Checks `(place, FROM=TO)` pairs: the `--mirror` flags, then the lines of a
    /// `--mirror-file` ([`file_lines`]). A FROM given twice is refused, wherever.
    pub fn parse<'a>(pairs: impl IntoIterator<Item = (String, &'a str)>) -> Result<Mirrors, MirrorError> {
        let mut rules: Vec<Rule> = Vec::new();
        let mut places: Vec<String> = Vec::new();
        for (place, text) in pairs {
            let rule = rule(&place, text)?;
            if let Some(first) = rules.iter().position(|r| r.from == rule.from) {
                return Err(MirrorError::Duplicate { place, from: rule.from, first: places.swap_remove(first) });
            }
            rules.push(rule);
            places.push(place);
        }
        rules.sort_by(|a, b| b.from.len().cmp(&a.from.len()).then_with(|| a.from.cmp(&b.from)));
        Ok(Mirrors { rules })
    }

    /// `url` with its longest mirrored prefix replaced by the mirror's, the user
    /// information it carries kept; `url` itself when no mirror covers it.
    pub fn rewrite<'u>(&self, url: &'u str) -> Target<'u> {
        let unmirrored = Target { url: Cow::Borrowed(url), plain_http: false };
        let Some((scheme, rest)) = url.split_once("://") else { return unmirrored };
        let authority_end = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (user, host_on) = match rest[..authority_end].rsplit_once('@') {
            Some((user, _)) => (Some(user), &rest[user.len() + 1..]),
            None => (None, rest),
        };
        for rule in &self.rules {
            let (from_scheme, from_rest) = rule.from.split_once("://").expect("checked when parsed");
            if !scheme.eq_ignore_ascii_case(from_scheme) {
                continue;
            }
            let Some(remainder) = host_on.strip_prefix(from_rest) else { continue };
            let names_path = from_rest.contains('/');
            let boundary = match remainder.chars().next() {
                None | Some('/' | '?' | '#') => true,
                Some(':' | '@') => names_path,
                Some(_) => false,
            };
            if !boundary {
                continue;
            }
            let (to_scheme, to_rest) = rule.to.split_once("://").expect("checked when parsed");
            let login = user.map(|u| format!("{u}@")).unwrap_or_default();
            let rewritten = format!("{to_scheme}://{login}{to_rest}{remainder}");
            tracing::debug!(
                url = %crate::redact::redact(url),
                mirror = %crate::redact::redact(&rewritten),
                from = %rule.from,
                "fetching from a mirror"
            );
            return Target { url: Cow::Owned(rewritten), plain_http: rule.plain_http };
        }
        unmirrored
    }
}

/// The `(place, FROM=TO)` pairs of a `--mirror-file` named `path`: one per line, blank
/// lines and lines starting with `#` skipped, spaces around each line ignored.
pub fn file_lines<'t>(path: &str, text: &'t str) -> Vec<(String, &'t str)> {
    text.lines()
        .enumerate()
        .map(|(i, line)| (i, line.trim()))
        .filter(|(_, line)| !line.is_empty() && !line.starts_with('#'))
        .map(|(i, line)| (format!("--mirror-file {path} line {}", i + 1), line))
        .collect()
}

/// One `FROM=TO`, checked. The pair splits at the first `=` followed by a scheme, so a
/// FROM whose path holds a `=` still reads.
fn rule(place: &str, text: &str) -> Result<Rule, MirrorError> {
    let not_a_pair = || MirrorError::NotAPair { place: place.into() };
    let split =
        text.match_indices('=').map(|(i, _)| i).find(|&i| scheme_of(text[i + 1..].trim_start()).is_some()).ok_or_else(not_a_pair)?;
    let (from, to) = (text[..split].trim(), text[split + 1..].trim());
    if from.is_empty() {
        return Err(not_a_pair());
    }
    if scheme_of(from).is_some_and(|s| s.eq_ignore_ascii_case(PLAIN_OCI)) {
        return Err(MirrorError::UnknownScheme { place: place.into(), side: "FROM", scheme: PLAIN_OCI.into() });
    }
    let from_kind = check(place, "FROM", from)?;
    let to_kind = check(place, "TO", to)?;
    let (from, to) = (from.trim_end_matches('/'), to.trim_end_matches('/'));
    if from_kind != to_kind {
        return Err(MirrorError::KindMismatch { place: place.into(), from: from.into(), to: to.into(), from_kind, to_kind });
    }
    let lower = |url: &str| {
        let (scheme, rest) = url.split_once("://").expect("checked");
        (scheme.to_ascii_lowercase(), rest.to_string())
    };
    let ((from_scheme, from_rest), (to_scheme, to_rest)) = (lower(from), lower(to));
    let plain_http = to_scheme == PLAIN_OCI;
    let to_scheme = if plain_http { "oci" } else { &to_scheme };
    Ok(Rule { from: format!("{from_scheme}://{from_rest}"), to: format!("{to_scheme}://{to_rest}"), plain_http })
}

/// `url`'s scheme when it starts with `scheme://`.
fn scheme_of(url: &str) -> Option<&str> {
    let (scheme, _) = url.split_once("://")?;
    let mut chars = scheme.chars();
    let valid =
        chars.next().is_some_and(|c| c.is_ascii_alphabetic()) && chars.all(|c| c.is_ascii_alphanumeric() || matches!(c, '+' | '-' | '.'));
    valid.then_some(scheme)
}

/// Checks one side of a pair; its kind.
fn check(place: &str, side: &'static str, url: &str) -> Result<&'static str, MirrorError> {
    let shown = || crate::redact::redact(url);
    let not_absolute = || MirrorError::NotAbsolute { place: place.into(), side, url: shown() };
    let scheme = scheme_of(url).ok_or_else(not_absolute)?.to_ascii_lowercase();
    let kind = KINDS
        .iter()
        .find(|(_, schemes)| schemes.contains(&scheme.as_str()))
        .map(|(kind, _)| *kind)
        .ok_or_else(|| MirrorError::UnknownScheme { place: place.into(), side, scheme: scheme.clone() })?;
    let rest = &url[scheme.len() + 3..];
    let authority = &rest[..rest.find(['/', '?', '#']).unwrap_or(rest.len())];
    if authority.contains('@') {
        return Err(MirrorError::Credentials { place: place.into(), side });
    }
    if url.contains(['?', '#']) {
        return Err(MirrorError::QueryOrFragment { place: place.into(), side, url: shown() });
    }
    let blank = url.chars().any(|c| c.is_whitespace() || c.is_control());
    if blank || authority.is_empty() {
        return Err(not_absolute());
    }
    Ok(kind)
}

#[cfg(test)]
mod tests;
