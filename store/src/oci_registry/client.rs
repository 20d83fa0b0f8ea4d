//! One registry as every request of the store reaches it: the two HTTP clients (oci-client
//! for writes and the token exchange, a plain `reqwest` client for capped reads), the
//! credentials, and what every request does (the token dance, a cap on the body, a digest
//! check on blobs). What to request is the store's business.

use std::sync::atomic::{AtomicU8, Ordering};
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use reqwest::header::{ACCEPT, HeaderMap, IF_NONE_MATCH, WWW_AUTHENTICATE};

use super::failure::{Class, classify, request_error, status_class, status_message};
use crate::credentials::RegistryCredentials;
use crate::error::StoreError;
use crate::oci::{MANIFEST_MEDIA_TYPE, OciDescriptor, RawManifest};
use crate::reference::StoreRef;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::{Digest, Hasher};
use airlock_bundle::limits::Limits;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Between two reads of one response, so a stalled registry counts as unavailable.
const READ_TIMEOUT: Duration = Duration::from_secs(60);
/// [`Registry::tokens`] once the registry has asked for a token.
const TOKENS: u8 = 1;

/// Whether a 401 asks for a bearer token (`WWW-Authenticate: Bearer realm=...`).
fn bearer_challenge(headers: &HeaderMap) -> bool {
    headers.get(WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).is_some_and(|v| v.trim_start().to_ascii_lowercase().starts_with("bearer"))
}

/// A registry holding one repository per cluster under a prefix.
pub(super) struct Registry {
    /// The store reference, for messages.
    pub(super) describe: String,
    pub(super) host: String,
    pub(super) prefix: String,
    pub(super) base_url: String,
    pub(super) auth: RegistryAuth,
    pub(super) client: Client,
    http: reqwest::Client,
    /// [`TOKENS`] once the registry asked for a bearer token: every request then gets one.
    tokens: AtomicU8,
}

impl Registry {
    /// Opens `host` (with port) under `prefix` (may be empty). Needs a process-wide rustls
    /// crypto provider; reqwest panics without one.
    pub(super) fn new(host: &str, prefix: &str, plain_http: bool, credentials: &RegistryCredentials) -> Result<Registry, StoreError> {
        let describe = StoreRef::OciRegistry { host: host.into(), prefix: prefix.into(), plain_http }.to_string();
        let config_error = |message: String| StoreError::Config { store: describe.clone(), message };
        let auth = credentials.resolve(host).map_err(config_error)?;
        let config = ClientConfig {
            // Only the registry itself is plain: blob redirects to object storage stay HTTPS.
            protocol: if plain_http { ClientProtocol::HttpsExcept(vec![host.to_string()]) } else { ClientProtocol::Https },
            // Two requests per blob instead of three; every blob is in memory anyway.
            use_monolithic_push: true,
            connect_timeout: Some(CONNECT_TIMEOUT),
            read_timeout: Some(READ_TIMEOUT),
            ..ClientConfig::default()
        };
        let client = Client::try_from(config).map_err(|e| config_error(format!("cannot set up the registry client: {e}")))?;
        let http = reqwest::Client::builder()
            .connect_timeout(CONNECT_TIMEOUT)
            .read_timeout(READ_TIMEOUT)
            .build()
            .map_err(|e| config_error(format!("cannot set up the HTTP client: {e}")))?;
        let base_url = format!("{}://{host}", if plain_http { "http" } else { "https" });
        let tokens = AtomicU8::new(0);
        Ok(Registry { describe, host: host.into(), prefix: prefix.into(), base_url, auth, client, http, tokens })
    }

    pub(super) fn repository(&self, cluster: &ClusterId) -> String {
        if self.prefix.is_empty() { cluster.to_string() } else { format!("{}/{cluster}", self.prefix) }
    }

    /// `cluster`'s repository at `tag`, with the credentials registered: the oci-client
    /// calls that take no credentials look them up by registry.
    pub(super) async fn reference(&self, cluster: &ClusterId, tag: &str) -> Reference {
        self.reference_in(self.repository(cluster), tag).await
    }

    /// [`Registry::reference`] for any repository of the registry.
    pub(super) async fn reference_in(&self, repository: String, tag: &str) -> Reference {
        let reference = Reference::with_tag(self.host.clone(), repository, tag.into());
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth).await;
        reference
    }

    pub(super) fn error(&self, what: String, class: Class, message: String) -> StoreError {
        class.error(&self.describe, what, message)
    }

    pub(super) fn oci_error(&self, what: String, e: OciDistributionError) -> StoreError {
        let (class, message) = classify(&e);
        self.error(what, class, message)
    }

    /// GETs `url` with the store's credentials; anything but 200 is an error.
    pub(super) async fn get(
        &self,
        reference: &Reference,
        url: &str,
        accept: &'static str,
        what: &str,
    ) -> Result<reqwest::Response, StoreError> {
        let unchanged = || self.error(what.into(), Class::Malformed, "registry answered 304 to a plain GET".into());
        self.get_unless(reference, url, accept, None, what).await?.ok_or_else(unchanged)
    }

    /// GETs `url` with the store's credentials, unless `unless` is the digest of what it
    /// would send: `Ok(None)` when the registry answers `304 Not Modified` to that
    /// `If-None-Match`. Anything else but 200 is an error.
    ///
    /// Without a token from an earlier request, the request goes out with the credentials
    /// as they are (basic, or none), and a token is asked for only when the registry
    /// answers with a bearer challenge: oci-client would first ask the registry whether it
    /// has a token service, a request of its own, and an unchanged run of a puller would
    /// cost two requests where one tells.
    pub(super) async fn get_unless(
        &self,
        reference: &Reference,
        url: &str,
        accept: &'static str,
        unless: Option<&Digest>,
        what: &str,
    ) -> Result<Option<reqwest::Response>, StoreError> {
        let token = match (self.tokens.load(Ordering::Relaxed), &self.auth) {
            (TOKENS, _) | (_, RegistryAuth::Bearer(_)) => self.token(reference, what).await?,
            _ => None,
        };
        let tokenless = token.is_none();
        let mut response = self.send_get(url, accept, unless, token, what).await?;
        if response.status().as_u16() == 401 && tokenless && bearer_challenge(response.headers()) {
            let token = self.token(reference, what).await?;
            self.tokens.store(TOKENS, Ordering::Relaxed);
            response = self.send_get(url, accept, unless, token, what).await?;
        }
        match response.status().as_u16() {
            200 => Ok(Some(response)),
            304 if unless.is_some() => Ok(None),
            status => Err(self.error(what.into(), status_class(status), status_message(status))),
        }
    }

    /// A pull token for `reference`'s repository, when the registry has a token service.
    async fn token(&self, reference: &Reference, what: &str) -> Result<Option<String>, StoreError> {
        (self.client.auth(reference, &self.auth, RegistryOperation::Pull).await).map_err(|e| self.oci_error(what.into(), e))
    }

    async fn send_get(
        &self,
        url: &str,
        accept: &'static str,
        unless: Option<&Digest>,
        token: Option<String>,
        what: &str,
    ) -> Result<reqwest::Response, StoreError> {
        let mut request = self.http.get(url).header(ACCEPT, accept);
        if let Some(digest) = unless {
            // Distribution's ETag of a manifest is its digest, quoted.
            request = request.header(IF_NONE_MATCH, format!("\"{digest}\""));
        }
        match (token, &self.auth) {
            (Some(token), _) => request = request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request = request.basic_auth(user, Some(password)),
            (None, _) => {}
        }
        request.send().await.map_err(|e| self.request_failed(what, &e))
    }

    pub(super) fn request_failed(&self, what: &str, e: &reqwest::Error) -> StoreError {
        let (class, message) = request_error(e);
        self.error(what.into(), class, message)
    }

    /// GETs `url` with the store's credentials, refusing a body over `cap` before and
    /// while reading it.
    pub(super) async fn get_capped(
        &self,
        reference: &Reference,
        url: &str,
        accept: &'static str,
        cap: u64,
        what: &str,
    ) -> Result<(HeaderMap, Vec<u8>), StoreError> {
        let response = self.get(reference, url, accept, what).await?;
        self.read_capped(response, cap, what).await
    }

    /// The body of `response`, refused over `cap` before and while reading it.
    pub(super) async fn read_capped(
        &self,
        mut response: reqwest::Response,
        cap: u64,
        what: &str,
    ) -> Result<(HeaderMap, Vec<u8>), StoreError> {
        let too_large = |size: u64| self.error(what.into(), Class::Malformed, format!("{size} bytes or more, over the limit of {cap}"));
        if let Some(size) = response.content_length().filter(|&s| s > cap) {
            return Err(too_large(size));
        }
        let headers = response.headers().clone();
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.request_failed(what, &e))? {
            let size = (body.len() + chunk.len()) as u64;
            if size > cap {
                return Err(too_large(size));
            }
            body.extend_from_slice(&chunk);
        }
        Ok((headers, body))
    }

    /// Downloads a blob of `reference`'s repository, refusing it when its descriptor is
    /// over `cap` and reading no more than the descriptor's size.
    pub(super) async fn read_blob(
        &self,
        cluster: &ClusterId,
        reference: &Reference,
        d: OciDescriptor,
        cap: u64,
    ) -> Result<Vec<u8>, StoreError> {
        let what = || format!("layer {} of {cluster}", d.digest);
        let malformed = |message: String| self.error(what(), Class::Malformed, message);
        if d.size > cap {
            return Err(malformed(format!("descriptor says {} bytes, over the limit of {cap}", d.size)));
        }
        // A plain GET rather than oci-client's blob stream, which asks the registry for a
        // token before every blob.
        let url = format!("{}/v2/{}/blobs/{}", self.base_url, reference.repository(), d.digest);
        let mut response = self.get(reference, &url, "*/*", &what()).await?;
        if let Some(size) = response.content_length().filter(|&s| s != d.size) {
            return Err(malformed(format!("registry sends {size} bytes, descriptor says {}", d.size)));
        }
        let mut body = Vec::with_capacity(d.size as usize);
        let mut hasher = Hasher::default();
        while let Some(chunk) = response.chunk().await.map_err(|e| self.request_failed(&what(), &e))? {
            if (body.len() + chunk.len()) as u64 > d.size {
                return Err(malformed(format!("longer than the descriptor's {} bytes", d.size)));
            }
            hasher.update(&chunk);
            body.extend_from_slice(&chunk);
        }
        if body.len() as u64 != d.size || hasher.finish() != d.digest {
            return Err(malformed(format!("content ({} bytes) does not match its digest", body.len())));
        }
        Ok(body)
    }

    /// The manifest tagged `tag` in `cluster`'s repository, read with the manifest cap.
    pub(super) async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        let what = format!("bundle for {cluster}");
        let unchanged = || self.error(what.clone(), Class::Malformed, "registry answered 304 to a plain GET".into());
        self.manifest_unless(cluster, tag, None, limits).await?.ok_or_else(unchanged)
    }

    /// [`Registry::manifest`], unless the tag still names the manifest `known`: `None` then.
    pub(super) async fn manifest_unless(
        &self,
        cluster: &ClusterId,
        tag: &str,
        known: Option<&Digest>,
        limits: &Limits,
    ) -> Result<Option<RawManifest>, StoreError> {
        let reference = self.reference(cluster, tag).await;
        let url = format!("{}/v2/{}/manifests/{tag}", self.base_url, reference.repository());
        let what = format!("bundle for {cluster}");
        let Some(response) = self.get_unless(&reference, &url, MANIFEST_MEDIA_TYPE, known, &what).await? else {
            return Ok(None);
        };
        let (_, bytes) = self.read_capped(response, limits.oci_manifest_bytes, &what).await?;
        let raw = RawManifest::parse(&self.describe, &what, bytes)?;
        // A registry that ignores If-None-Match sends the same manifest whole.
        Ok((known != Some(&raw.digest)).then_some(raw))
    }
}
