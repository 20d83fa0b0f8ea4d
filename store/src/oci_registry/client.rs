//! One registry as every request of the store reaches it: the two HTTP clients (oci-client
//! for writes and the token exchange, a plain `reqwest` client for capped reads), the
//! credentials, and what every request does (the token dance, a cap on the body, a digest
//! check on blobs). What to request is the store's business.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::OciDistributionError;
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use reqwest::header::{ACCEPT, HeaderMap};

use super::failure::{Class, classify, request_error, status_class, status_message};
use crate::credentials::RegistryCredentials;
use crate::error::StoreError;
use crate::oci::{MANIFEST_MEDIA_TYPE, OciDescriptor, RawManifest};
use crate::reference::StoreRef;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::Hasher;
use airlock_bundle::limits::Limits;

const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Between two reads of one response, so a stalled registry counts as unavailable.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

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
    /// Set once the registry answered that it has no token service.
    tokenless: AtomicBool,
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
        let tokenless = AtomicBool::new(false);
        Ok(Registry { describe, host: host.into(), prefix: prefix.into(), base_url, auth, client, http, tokenless })
    }

    pub(super) fn repository(&self, cluster: &ClusterId) -> String {
        if self.prefix.is_empty() { cluster.to_string() } else { format!("{}/{cluster}", self.prefix) }
    }

    /// `cluster`'s repository at `tag`, with the credentials registered: the oci-client
    /// calls that take no credentials look them up by registry.
    pub(super) async fn reference(&self, cluster: &ClusterId, tag: &str) -> Reference {
        let reference = Reference::with_tag(self.host.clone(), self.repository(cluster), tag.into());
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
        let mut request = self.http.get(url).header(ACCEPT, accept);
        // oci-client asks the registry whether it has a token service (a request of its
        // own, every time); a registry that said no once never starts wanting tokens.
        let token = if self.tokenless.load(Ordering::Relaxed) {
            None
        } else {
            let token =
                (self.client.auth(reference, &self.auth, RegistryOperation::Pull).await).map_err(|e| self.oci_error(what.into(), e))?;
            self.tokenless.store(token.is_none(), Ordering::Relaxed);
            token
        };
        match (token, &self.auth) {
            (Some(token), _) => request = request.bearer_auth(token),
            (None, RegistryAuth::Basic(user, password)) => request = request.basic_auth(user, Some(password)),
            (None, _) => {}
        }
        let response = request.send().await.map_err(|e| self.request_failed(what, &e))?;
        match response.status().as_u16() {
            200 => Ok(response),
            status => Err(self.error(what.into(), status_class(status), status_message(status))),
        }
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
        let mut response = self.get(reference, url, accept, what).await?;
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
        let reference = self.reference(cluster, tag).await;
        let url = format!("{}/v2/{}/manifests/{tag}", self.base_url, reference.repository());
        let what = format!("bundle for {cluster}");
        let (_, bytes) = self.get_capped(&reference, &url, MANIFEST_MEDIA_TYPE, limits.oci_manifest_bytes, &what).await?;
        RawManifest::parse(&self.describe, &what, bytes)
    }
}
