//! The OCI registry store (spec 9.2): one repository `<prefix>/<namespace>/<name>` per
//! cluster, holding the artifact of spec 9.1 under the tags `v<version>` and `latest`.
//!
//! Writes and blob reads go through `oci-client`, which follows the distribution token
//! exchange. Manifests and catalog pages do not: oci-client buffers those bodies whole
//! before anyone can look at their size, so they are read with a plain `reqwest` client,
//! the same credentials and a cap (spec 10).
//!
//! This store moves and finds bytes; it does not judge them (`bundle::verify` does). It
//! never deletes: older versions stay until the registry's own garbage collection. Of
//! Docker's `config.json` it reads only `auths.<host>.auth`, not credential helpers.

use std::collections::{HashMap, HashSet};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use futures::{StreamExt, TryStreamExt, future, stream};
use oci_client::client::{ClientConfig, ClientProtocol};
use oci_client::errors::{OciDistributionError, OciErrorCode};
use oci_client::secrets::RegistryAuth;
use oci_client::{Client, Reference, RegistryOperation};
use reqwest::header::{ACCEPT, HeaderMap, HeaderValue, LINK};

use super::credentials::RegistryCredentials;
use super::oci::{self, Artifact, Blob, GzipCache, MANIFEST_MEDIA_TYPE, OciDescriptor, RawManifest};
use super::reference::StoreRef;
use super::{Batch, EnvelopeDigests, Fetched, Locator, OciStore, PartCopy, PublishMeta, Store, StoreError};
use airlock_bundle::SignedBundle;
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::digest::{Digest, Hasher};
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::ProfileEntry;

/// Bundles pushed at once: enough to hide round trips, few enough not to swamp a registry.
const IN_FLIGHT: usize = 8;
const CATALOG_PAGE: usize = 1000;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Between two reads of one response, so a stalled registry counts as unavailable.
const READ_TIMEOUT: Duration = Duration::from_secs(60);

/// A registry holding one repository per cluster under a prefix.
pub struct RegistryStore {
    describe: String,
    host: String,
    prefix: String,
    base_url: String,
    auth: RegistryAuth,
    client: Client,
    http: reqwest::Client,
    /// Set once the registry answered that it has no token service.
    tokenless: AtomicBool,
    cache: GzipCache,
}

impl RegistryStore {
    /// Opens `host` (with port) under `prefix` (may be empty). Needs a process-wide rustls
    /// crypto provider, which the binaries install at start; reqwest panics without one.
    pub fn new(host: &str, prefix: &str, plain_http: bool, credentials: &RegistryCredentials) -> Result<Self, StoreError> {
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
        Ok(RegistryStore {
            describe,
            host: host.into(),
            prefix: prefix.into(),
            base_url,
            auth,
            client,
            http,
            tokenless: AtomicBool::new(false),
            cache: GzipCache::default(),
        })
    }

    fn repository(&self, cluster: &ClusterId) -> String {
        if self.prefix.is_empty() { cluster.to_string() } else { format!("{}/{cluster}", self.prefix) }
    }

    /// `cluster`'s repository at `tag`, with the credentials registered: the oci-client
    /// calls that take no credentials look them up by registry.
    async fn reference(&self, cluster: &ClusterId, tag: &str) -> Reference {
        let reference = Reference::with_tag(self.host.clone(), self.repository(cluster), tag.into());
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth).await;
        reference
    }

    fn error(&self, what: String, class: Class, message: String) -> StoreError {
        let store = self.describe.clone();
        match class {
            Class::NotFound => StoreError::NotFound { store, what },
            Class::Unavailable => StoreError::Unavailable { store, message: format!("{what}: {message}") },
            Class::Config => StoreError::Config { store, message: format!("{what}: {message}") },
            Class::Malformed => StoreError::Malformed { store, what, message },
        }
    }

    fn oci_error(&self, what: String, e: OciDistributionError) -> StoreError {
        let (class, message) = classify(&e);
        self.error(what, class, message)
    }

    /// Pushes bundles, several at a time; `placed` knows the blobs pushed before.
    async fn push(&self, bundles: &[SignedBundle], meta: &PublishMeta, placed: &Placed) -> Result<(), StoreError> {
        // Collected first: a closure mapping inside the stream trips the compiler's check
        // that the boxed future is Send for every lifetime.
        let pushes: Vec<_> = bundles.iter().map(|signed| self.publish_one(signed, meta, placed)).collect();
        stream::iter(pushes).buffer_unordered(IN_FLIGHT).try_for_each(|_| future::ok(())).await
    }

    async fn publish_one(&self, signed: &SignedBundle, meta: &PublishMeta, placed: &Placed) -> Result<u64, StoreError> {
        let cluster: ClusterId = signed.cluster().parse().map_err(|e: airlock_bundle::cluster::BadClusterId| {
            self.error(format!("bundle for {}", signed.cluster()), Class::Config, e.to_string())
        })?;
        let artifact = oci::artifact(signed, meta, &self.cache);
        self.put_artifact_placed(&cluster, signed.version(), &artifact, placed).await
    }

    /// Pushes an artifact's missing blobs, then its manifest's exact bytes under
    /// `v<version>` and `latest`. Returns the blob bytes uploaded.
    async fn put_artifact_placed(
        &self,
        cluster: &ClusterId,
        version: u64,
        artifact: &Artifact,
        placed: &Placed,
    ) -> Result<u64, StoreError> {
        let version_tag = format!("v{version}");
        let target = self.reference(cluster, &version_tag).await;
        let mut uploaded = 0;
        for blob in &artifact.blobs {
            if self.put_blob(cluster, &target, blob, placed).await? {
                uploaded += blob.bytes.len() as u64;
            }
        }
        for tag in [version_tag.as_str(), "latest"] {
            let reference = self.reference(cluster, tag).await;
            let what = || format!("manifest {tag} for {cluster}");
            let content_type = HeaderValue::from_static(MANIFEST_MEDIA_TYPE);
            let location = (self.client.push_manifest_raw(&reference, artifact.manifest_bytes.clone(), content_type).await)
                .map_err(|e| self.oci_error(what(), e))?;
            // Distribution names the stored digest in the Location; other registries may
            // give the tag URL, and then a HEAD tells.
            let stored = match location.split('?').next().and_then(|l| l.rsplit('/').next()).and_then(|d| d.parse::<Digest>().ok()) {
                Some(d) => d,
                None => {
                    let d = (self.client.fetch_manifest_digest(&reference, &self.auth).await).map_err(|e| self.oci_error(what(), e))?;
                    d.parse().map_err(|_| self.error(what(), Class::Malformed, format!("registry reports digest {d:?}")))?
                }
            };
            if stored != artifact.manifest_digest {
                let message = format!("registry stored {stored}, not {} (spec 9.1: exact bytes)", artifact.manifest_digest);
                return Err(self.error(what(), Class::Malformed, message));
            }
        }
        let manifest = artifact.manifest_digest;
        tracing::info!(store = %self.describe, %cluster, version, %manifest, uploaded, "published");
        Ok(uploaded)
    }

    /// Makes `blob` present in `target`'s repository; true when its bytes were uploaded.
    async fn put_blob(&self, cluster: &ClusterId, target: &Reference, blob: &Blob, placed: &Placed) -> Result<bool, StoreError> {
        let digest = blob.digest.to_string();
        let slot = placed.slot(blob.digest);
        // Held while uploading, so another repository of this publish waits and mounts.
        let mut source = slot.lock().await;
        // A failed mount (Distribution answers 202 and opens an upload) falls back to the
        // checks below; the abandoned upload session expires on the registry.
        let how = if let Some(from) = source.as_ref()
            && self.client.mount_blob(target, from, &digest).await.is_ok()
        {
            "mounted"
        } else if (self.client.blob_exists(target, &digest).await).map_err(|e| self.oci_error(format!("blob {digest} for {cluster}"), e))? {
            "present"
        } else {
            (self.client.push_blob(target, blob.bytes.to_vec(), &digest).await)
                .map_err(|e| self.oci_error(format!("blob {digest} for {cluster}"), e))?;
            "uploaded"
        };
        *source = Some(target.clone());
        tracing::debug!(store = %self.describe, %cluster, blob = %digest, how = %how, "blob");
        Ok(how == "uploaded")
    }

    /// GETs `url` with the store's credentials; anything but 200 is an error.
    async fn get(&self, reference: &Reference, url: &str, accept: &'static str, what: &str) -> Result<reqwest::Response, StoreError> {
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

    fn request_failed(&self, what: &str, e: &reqwest::Error) -> StoreError {
        let (class, message) = request_error(e);
        self.error(what.into(), class, message)
    }

    /// GETs `url` with the store's credentials, refusing a body over `cap` before and
    /// while reading it.
    async fn get_capped(
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
    async fn read_blob(&self, cluster: &ClusterId, reference: &Reference, d: OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
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
}

#[async_trait]
impl Store for RegistryStore {
    fn describe(&self) -> String {
        self.describe.clone()
    }

    async fn fetch_envelope(&self, cluster: &ClusterId, limits: &Limits) -> Result<Fetched, StoreError> {
        let reference = self.reference(cluster, "latest").await;
        let manifest = OciStore::manifest(self, cluster, "latest", limits).await?.manifest;
        oci::fetched_from_manifest(&self.describe, cluster, manifest, limits, |d, cap| self.read_blob(cluster, &reference, d, cap)).await
    }

    async fn envelope_digests(&self, cluster: &ClusterId, limits: &Limits) -> Result<Option<EnvelopeDigests>, StoreError> {
        let manifest = OciStore::manifest(self, cluster, "latest", limits).await?.manifest;
        oci::envelope_digests(&self.describe, &manifest).map(Some)
    }

    async fn fetch_part(&self, cluster: &ClusterId, fetched: &Fetched, part: &ProfileEntry, _: &Limits) -> Result<PartCopy, StoreError> {
        let Locator::Oci(manifest) = &fetched.locator else {
            let message = "envelope was fetched from another kind of store".into();
            return Err(self.error(format!("part {} for {cluster}", part.name), Class::Config, message));
        };
        let Some(layer) = manifest.part_layer(&part.digest) else {
            let message = format!("the manifest has no layer for this part ({})", part.digest);
            return Err(self.error(format!("part {} for {cluster}", part.name), Class::Malformed, message));
        };
        let reference = self.reference(cluster, "latest").await;
        let gzip = self.read_blob(cluster, &reference, layer.clone(), Limits::transport_cap(part.size)).await?;
        Ok(PartCopy::Gzip(gzip))
    }

    async fn publish(&self, bundles: &[SignedBundle], meta: &PublishMeta) -> Result<(), StoreError> {
        self.push(bundles, meta, &Placed::default()).await
    }

    /// A registry has no index to write last: each bundle is pushed as it comes.
    fn batch<'s>(&'s self, meta: &PublishMeta) -> Box<dyn Batch + 's> {
        Box::new(RegistryBatch { store: self, meta: meta.clone(), placed: Placed::default() })
    }

    async fn clusters(&self, limits: &Limits) -> Result<Vec<ClusterId>, StoreError> {
        #[derive(serde::Deserialize)]
        struct Page {
            #[serde(default)]
            repositories: Vec<String>,
        }
        // Only for credentials: a registry with a token service wants scope
        // `registry:catalog:*`, which oci-client cannot ask for.
        let reference = Reference::with_tag(self.host.clone(), self.prefix.clone(), "latest".into());
        self.client.store_auth_if_needed(reference.resolve_registry(), &self.auth).await;
        let mut scan = CatalogScan::new(&self.prefix);
        let (mut clusters, mut last, mut pages) = (Vec::new(), scan.start(), 0);
        loop {
            // Repository names need no escaping in a query.
            let mut url = format!("{}/v2/_catalog?n={CATALOG_PAGE}", self.base_url);
            if let Some(last) = &last {
                url = format!("{url}&last={last}");
            }
            // A page of 1,000 names stays far below the manifest limit.
            let (headers, body) = self.get_capped(&reference, &url, "application/json", limits.oci_manifest_bytes, "catalog").await?;
            let page: Page = serde_json::from_slice(&body)
                .map_err(|e| self.error("catalog".into(), Class::Malformed, format!("not a catalog page: {e}")))?;
            pages += 1;
            last = scan.page(&page.repositories, headers.contains_key(LINK), |name| clusters.extend(name.parse::<ClusterId>().ok()));
            if last.is_none() {
                break;
            }
        }
        tracing::debug!(store = %self.describe, pages, clusters = clusters.len(), "catalog read");
        clusters.sort();
        clusters.dedup();
        Ok(clusters)
    }
}

/// Reads the catalog for the repositories under a prefix, without the rest of the
/// registry: a registry shared by many fleets or teams holds far more repositories than
/// one prefix, and some (Distribution among them) walk their storage for every page.
///
/// The listing starts after the prefix itself (`last=PREFIX`) and stops at the first
/// name past the prefix's repositories. Registries sort the catalog either by bytes or,
/// like Distribution, path by path (`/` before any other character); in both orders the
/// names under `PREFIX/` are one run that comes after `PREFIX`, but only in byte order
/// do the names past `PREFIX/` all sort after it (`PREFIX-x` comes before `PREFIX/a` in
/// bytes, after `PREFIX/z` by path). So a name outside the prefix ends the listing when
/// it follows a name inside, or when it sorts after `PREFIX/` by bytes.
struct CatalogScan {
    /// `PREFIX/`, or empty for a registry read whole.
    scope: String,
    inside: bool,
    /// The last names of the pages read. Only a name seen before tells that the registry
    /// is going round: comparing names cannot, as the registry's order may not be bytes'
    /// (`PREFIX/ns/a` comes before `PREFIX/ns-2/a` by path, after it by bytes).
    lasts: HashSet<String>,
}

impl CatalogScan {
    fn new(prefix: &str) -> CatalogScan {
        let scope = if prefix.is_empty() { String::new() } else { format!("{prefix}/") };
        CatalogScan { scope, inside: false, lasts: HashSet::new() }
    }

    /// The `last` to ask the first page after.
    fn start(&self) -> Option<String> {
        self.scope.strip_suffix('/').map(String::from)
    }

    /// Hands `found` each name of a page under the prefix, the prefix taken off. Returns
    /// the `last` to ask the next page after, or `None` when the listing is done: the page
    /// went past the prefix's repositories, the registry said there is no more (`more`),
    /// or it is going round.
    fn page<'n>(&mut self, names: &'n [String], more: bool, mut found: impl FnMut(&'n str)) -> Option<String> {
        for name in names {
            match name.strip_prefix(&self.scope) {
                Some(rest) => {
                    self.inside = true;
                    found(rest);
                }
                None if self.inside || name.as_str() > self.scope.as_str() => return None,
                None => {}
            }
        }
        let last = names.last().filter(|_| more)?;
        self.lasts.insert(last.clone()).then(|| last.clone())
    }
}

#[async_trait]
impl OciStore for RegistryStore {
    async fn manifest(&self, cluster: &ClusterId, tag: &str, limits: &Limits) -> Result<RawManifest, StoreError> {
        let reference = self.reference(cluster, tag).await;
        let url = format!("{}/v2/{}/manifests/{tag}", self.base_url, reference.repository());
        let what = format!("bundle for {cluster}");
        let (_, bytes) = self.get_capped(&reference, &url, MANIFEST_MEDIA_TYPE, limits.oci_manifest_bytes, &what).await?;
        RawManifest::parse(&self.describe, &what, bytes)
    }

    async fn blob(&self, cluster: &ClusterId, d: &OciDescriptor, cap: u64) -> Result<Vec<u8>, StoreError> {
        let reference = self.reference(cluster, "latest").await;
        self.read_blob(cluster, &reference, d.clone(), cap).await
    }

    async fn has_blob(&self, cluster: &ClusterId, digest: &Digest) -> Result<bool, StoreError> {
        let reference = self.reference(cluster, "latest").await;
        (self.client.blob_exists(&reference, &digest.to_string()).await)
            .map_err(|e| self.oci_error(format!("blob {digest} for {cluster}"), e))
    }

    async fn put_artifact(&self, cluster: &ClusterId, version: u64, artifact: &Artifact) -> Result<u64, StoreError> {
        self.put_artifact_placed(cluster, version, artifact, &Placed::default()).await
    }
}

/// Bundles pushed as they come, blobs placed once for the whole batch.
struct RegistryBatch<'s> {
    store: &'s RegistryStore,
    meta: PublishMeta,
    placed: Placed,
}

#[async_trait]
impl Batch for RegistryBatch<'_> {
    async fn add(&mut self, bundles: Vec<SignedBundle>) -> Result<Vec<Option<Digest>>, StoreError> {
        self.store.push(&bundles, &self.meta, &self.placed).await?;
        Ok(vec![None; bundles.len()])
    }

    async fn commit(self: Box<Self>) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Where blobs of one publish already are: a part shared by many clusters is uploaded
/// once and mounted into the other repositories.
#[derive(Default)]
struct Placed(Mutex<HashMap<Digest, Arc<tokio::sync::Mutex<Option<Reference>>>>>);

impl Placed {
    fn slot(&self, digest: Digest) -> Arc<tokio::sync::Mutex<Option<Reference>>> {
        self.0.lock().expect("not poisoned").entry(digest).or_default().clone()
    }
}

/// Which [`StoreError`] a failure becomes.
enum Class {
    NotFound,
    Unavailable,
    Config,
    Malformed,
}

fn status_class(status: u16) -> Class {
    match status {
        404 => Class::NotFound,
        401 | 403 => Class::Config,
        408 | 429 | 500..=599 => Class::Unavailable,
        _ => Class::Malformed,
    }
}

fn status_message(status: u16) -> String {
    match status {
        401 | 403 => format!("registry answered HTTP {status}: check the registry credentials"),
        _ => format!("registry answered HTTP {status}"),
    }
}

/// Never the error's own text: reqwest's and oci-client's name the URL, and upload URLs
/// carry state in their query.
fn classify(e: &OciDistributionError) -> (Class, String) {
    use OciDistributionError as E;
    match e {
        E::RequestError(e) => request_error(e),
        E::UnauthorizedError { .. } => (Class::Config, status_message(401)),
        E::AuthenticationFailure(_) => (Class::Config, "the registry's token service refused the credentials".into()),
        E::ServerError { code, .. } => (status_class(*code), status_message(*code)),
        E::RegistryError { envelope, .. } => {
            let class = match envelope.errors.first().map(|e| &e.code) {
                Some(OciErrorCode::NameUnknown | OciErrorCode::ManifestUnknown | OciErrorCode::BlobUnknown | OciErrorCode::NotFound) => {
                    Class::NotFound
                }
                Some(OciErrorCode::Unauthorized | OciErrorCode::Denied) => Class::Config,
                Some(OciErrorCode::Toomanyrequests) => Class::Unavailable,
                _ => Class::Malformed,
            };
            let errors: Vec<String> = envelope.errors.iter().map(|e| format!("{:?}: {}", e.code, e.message)).collect();
            (class, format!("registry refused: {}", errors.join("; ")))
        }
        E::IoError(io) if io.get_ref().is_some_and(|inner| inner.is::<oci_client::errors::DigestError>()) => {
            (Class::Malformed, "content does not match its digest".into())
        }
        E::IoError(io) => match io.get_ref().and_then(|inner| inner.downcast_ref::<reqwest::Error>()) {
            Some(e) => request_error(e),
            None => (Class::Unavailable, format!("reading from the registry failed: {}", io.kind())),
        },
        E::DigestError(_) => (Class::Malformed, "content does not match its digest".into()),
        E::SpecViolationError(m) => (Class::Malformed, format!("registry does not follow the distribution spec: {m}")),
        other => (Class::Malformed, other.to_string()),
    }
}

fn request_error(e: &reqwest::Error) -> (Class, String) {
    if let Some(status) = e.status() {
        return (status_class(status.as_u16()), status_message(status.as_u16()));
    }
    let mut message = String::from(if e.is_timeout() {
        "timed out"
    } else if e.is_connect() {
        "cannot connect"
    } else {
        "request failed"
    });
    // The causes (hyper, io) name no URL; the top error does.
    let mut source = std::error::Error::source(e);
    while let Some(cause) = source {
        let text = cause.to_string();
        if !message.ends_with(&text) {
            message = format!("{message}: {text}");
        }
        source = cause.source();
    }
    (Class::Unavailable, message)
}

#[cfg(test)]
mod tests {
    use std::cmp::Ordering;

    use super::*;

    /// Distribution's catalog order: path by path, the separator before any character.
    fn by_path(a: &str, b: &str) -> Ordering {
        a.replace('/', "\0").cmp(&b.replace('/', "\0"))
    }

    /// Reads `registry` as `clusters` does: pages of `page` names after `last`, in the
    /// registry's `order`. Gives the names found and the pages read.
    fn scan(registry: &[String], order: fn(&str, &str) -> Ordering, prefix: &str, page: usize) -> (Vec<String>, usize) {
        let mut sorted = registry.to_vec();
        sorted.sort_by(|a, b| order(a, b));
        let mut scan = CatalogScan::new(prefix);
        let (mut found, mut last, mut pages) = (Vec::new(), scan.start(), 0);
        loop {
            let names: Vec<String> =
                sorted.iter().filter(|n| last.as_ref().is_none_or(|l| order(n, l).is_gt())).take(page).cloned().collect();
            pages += 1;
            last = scan.page(&names, names.len() == page, |n| found.push(n.to_string()));
            if last.is_none() {
                found.sort();
                return (found, pages);
            }
        }
    }

    #[test]
    fn the_catalog_is_read_from_the_prefix_to_its_end_in_either_order() {
        // Two namespaces that sort one way by path and the other by bytes, across pages.
        let mut under: Vec<String> = (0..2500).map(|i| format!("fleet/c{i:05}")).collect();
        under.extend((0..1500).map(|i| format!("fleet-2/c{i:05}")));
        under.sort();
        let mut registry: Vec<String> = under.iter().map(|c| format!("team/a/{c}")).collect();
        // Beside the prefix, before and after it in either order; many more than it holds.
        for other in ["team/a-b", "team/a.b", "team/a0", "team/ab", "team/", "team", "teal", "tean", "a", "z"] {
            registry.extend((0..1500).map(|i| format!("{other}/fleet/c{i:05}")));
        }
        registry.push("team/a".into());
        // By path the prefix's 4,000 names come first: four pages and one to see past them.
        // By bytes the 3,000 names of `team/a-b` and `team/a.b` come before them: three
        // pages more, and the page that ends the run also goes past it.
        for (order, pages) in [(by_path as fn(&str, &str) -> Ordering, 5), (str::cmp, 8)] {
            assert_eq!(scan(&registry, order, "team/a", 1000), (under.clone(), pages), "exactly the names under the prefix");
            assert_eq!(scan(&registry, order, "team/b", 1000).0, Vec::<String>::new());
            let (whole, _) = scan(&registry, order, "", 1000);
            assert_eq!(whole.len(), registry.len(), "no prefix: the whole catalog");
        }
    }

    #[test]
    fn a_registry_going_round_ends_the_listing() {
        let page: Vec<String> = (0..3).map(|i| format!("fleet/c{i}")).collect();
        let mut scan = CatalogScan::new("");
        let mut found = 0;
        assert_eq!(scan.page(&page, true, |_| found += 1), Some("fleet/c2".to_string()));
        assert_eq!(scan.page(&page, true, |_| found += 1), None, "the same page again");
        assert_eq!(found, 6);
    }
}
