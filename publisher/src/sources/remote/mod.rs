//! Fetching `spec.policyRefs[].remoteURL` content, so it renders exactly as a ConfigMap's
//! data would: each file the URL serves becomes one data key of a ConfigMap kept among
//! the run's fetched resources (under [`RemoteUrl::key`]), and `render` reads that like
//! any other referenced ConfigMap, templated when `template` is set.
//!
//! `http(s)://` is one GET (`http`), `oci://` a manifest and its layers (`oci`); the body's
//! shape is `shapes`' business, the Secret's credentials `credentials`', the caps
//! `limits`'. A URL that cannot be fetched is kept as unreadable (a 404 as missing), so
//! only the profiles referencing it fail, each keeping its last good part. Nothing here
//! writes to disk or follows a path a body names.
//!
//! Entry point: [`Fetcher::fetch_into`]. A fetcher remembers what it fetched: a
//! long-running publisher (`watch`) fetches a URL again only once its `interval` passed
//! or its Secret changed, and asks [`Fetcher::next_due`] when to run next for it.

mod credentials;
mod error;
mod flux;
mod http;
mod limits;
mod oci;
mod shapes;

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::time::Instant;

use futures::StreamExt;
use serde_json::{Value, json};

use crate::redact::redact;
use crate::source_mirrors::Mirrors;
use crate::sources::model::RemoteUrl;
use crate::sources::{Lookup, ObjectKey, Resources};
use credentials::Credentials;
pub use error::RemoteError;
pub use flux::fetch_oci_repositories;
use http::Http;
pub use shapes::skipped_tar_entry;

/// What was fetched for one key, and when.
struct Entry {
    at: Instant,
    interval: std::time::Duration,
    /// The Secret it was fetched with, as read, so new credentials fetch again.
    secret: Option<Value>,
    /// `None` when the fetch failed: fetched again on every run, and due for one after
    /// the interval even when nothing else asks for a run.
    content: Option<Value>,
}

/// Fetches remote URLs, remembering each until its interval passed.
#[derive(Default)]
pub struct Fetcher {
    entries: Mutex<HashMap<ObjectKey, Entry>>,
}

impl Fetcher {
    /// Fetches every URL of `wanted` (by the key a plan refers to it by) into
    /// `resources`, where `resources` already holds their Secrets: the content as a
    /// ConfigMap, a failure as unreadable, a 404 as nothing (missing). Each URL is fetched
    /// from its mirror in `mirrors`, if it has one; what is kept is keyed by the URL the
    /// profile names, as the mirrors are the same for a process's life.
    pub async fn fetch_into(&self, wanted: &BTreeMap<ObjectKey, RemoteUrl>, mirrors: &Mirrors, resources: &mut Resources) {
        let now = Instant::now();
        let mut due = Vec::new();
        for (key, remote) in wanted {
            let secret = match &remote.secret {
                None => None,
                Some(s) => match resources.lookup(&ObjectKey::new("v1", "Secret", &s.namespace, &s.name)) {
                    Lookup::Found(value) => Some(value.clone()),
                    Lookup::Missing => {
                        resources.record(key.clone(), Err(secret_error(remote, "not found".into()).to_string()));
                        continue;
                    }
                    Lookup::Failed(why) => {
                        resources.record(key.clone(), Err(secret_error(remote, why.to_string()).to_string()));
                        continue;
                    }
                },
            };
            let kept = self
                .entries
                .lock()
                .expect("not poisoned")
                .get(key)
                .and_then(|e| (now.duration_since(e.at) < remote.interval && e.secret == secret).then(|| e.content.clone()).flatten());
            match kept {
                Some(content) => resources.record(key.clone(), Ok(Some(content))),
                None => due.push((key, remote, secret)),
            }
        }
        let fetched: Vec<_> = futures::stream::iter(due)
            .map(|(key, remote, secret)| async move { (key, remote, fetch(remote, secret.as_ref(), mirrors).await, secret) })
            .buffer_unordered(limits::CONCURRENT)
            .collect()
            .await;
        let mut entries = self.entries.lock().expect("not poisoned");
        for (key, remote, outcome, secret) in fetched {
            let content = outcome.as_ref().ok().cloned();
            entries.insert(key.clone(), Entry { at: now, interval: remote.interval, secret, content });
            match outcome {
                Ok(content) => resources.record(key.clone(), Ok(Some(content))),
                Err(RemoteError::NotFound { .. }) => resources.record(key.clone(), Ok(None)),
                Err(e) => resources.record(key.clone(), Err(e.to_string())),
            }
        }
        // A URL no profile references any more is not kept.
        entries.retain(|key, _| wanted.contains_key(key));
    }

    /// When the first remembered URL is due to be fetched again (a failed one too).
    pub fn next_due(&self) -> Option<Instant> {
        self.entries.lock().expect("not poisoned").values().map(|e| e.at + e.interval).min()
    }
}

fn secret_error(remote: &RemoteUrl, message: String) -> RemoteError {
    let s = remote.secret.as_ref().expect("only asked with a secretRef");
    RemoteError::Credentials { url: remote.shown(), secret: format!("{}/{}", s.namespace, s.name), message }
}

/// Fetches `remote` (from its mirror, if it has one) with the credentials of `secret`, as
/// a ConfigMap of its files, or for a tree as `{"tarball": base64}`. The Secret's
/// credentials go wherever the fetch goes.
async fn fetch(remote: &RemoteUrl, secret: Option<&Value>, mirrors: &Mirrors) -> Result<Value, RemoteError> {
    let target = mirrors.rewrite(&remote.url);
    let (url, plain_http) = (target.url, remote.plain_http || target.plain_http);
    let shown = via(&remote.url, &url);
    let credentials = match secret {
        Some(value) => Credentials::read(value, &|message| secret_error(remote, message))?,
        None => Credentials::default(),
    };
    let http = Http::new(&shown, &credentials, remote.insecure_skip_tls_verify)?;
    if remote.tree {
        let tarball = if url.starts_with("oci://") {
            oci::fetch_layer(&http, &url, plain_http, &credentials, None).await?.1
        } else {
            http.get_body(credentials.authorize(http.client.get(url.as_ref())), limits::MAX_BODY, "the body").await?
        };
        return Ok(json!({"tarball": base64::Engine::encode(&base64::engine::general_purpose::STANDARD, tarball)}));
    }
    let files = if url.starts_with("oci://") {
        oci::fetch(&http, &url, plain_http, &credentials).await?
    } else {
        let body = http.get_body(credentials.authorize(http.client.get(url.as_ref())), limits::MAX_BODY, "the body").await?;
        shapes::files(&body, &file_name(&remote.shown()), &shown)?
    };
    let data: BTreeMap<String, String> = files.into_iter().collect();
    Ok(json!({"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "remote-url"}, "data": data}))
}

/// How messages name a URL fetched as `fetched`: as the profile names it, and the mirror
/// it came from, if any (neither with user, query or fragment).
pub(super) fn via(url: &str, fetched: &str) -> String {
    match url == fetched {
        true => redact(url),
        false => format!("{} (from mirror {})", redact(url), redact(fetched)),
    }
}

/// The last segment of a URL's path, which names a single document in messages.
fn file_name(shown: &str) -> String {
    let path = shown.split_once("://").map_or(shown, |(_, rest)| rest);
    match path.split_once('/') {
        Some((_, path)) if !path.is_empty() => path.rsplit('/').find(|s| !s.is_empty()).unwrap_or("content").to_string(),
        _ => "content".to_string(),
    }
}

/// reqwest's clients need a process-wide rustls provider.
#[cfg(test)]
pub fn provider() {
    let _ = rustls::crypto::ring::default_provider().install_default();
}

#[cfg(test)]
mod tests;
