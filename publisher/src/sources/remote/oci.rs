//! An `oci://host/repository:tag` (or `@sha256:…`) artifact: its manifest, then each
//! layer by digest, checked against it, every layer read in the shapes a URL body may
//! take (`shapes`). Layers keep the manifest's order. Entry points: [`fetch`], and
//! [`fetch_layer`] for one layer as stored (a Flux OCIRepository's tarball).
//!
//! Credentials as Sveltos takes them: a `token` is sent as the bearer token; otherwise a
//! registry that answers with a bearer challenge gets its token from its token service,
//! with `username` and `password` when the Secret has them. An image index is refused:
//! it names manifests per platform, and manifests carry no platform.

use serde::Deserialize;
use sha2::{Digest as _, Sha256};

use super::credentials::Credentials;
use super::error::RemoteError;
use super::http::Http;
use super::limits::{MAX_BODY, MAX_LAYERS, MAX_MANIFEST};
use super::shapes;

const MANIFEST_TYPES: &str = "application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json";

/// Where an `oci://` URL points.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Artifact {
    pub host: String,
    pub repository: String,
    /// A tag or a digest; `latest` when the URL names neither.
    pub reference: String,
}

impl Artifact {
    /// Parses `oci://host[:port]/repository[:tag|@digest]`.
    pub fn parse(url: &str, shown: &str) -> Result<Artifact, RemoteError> {
        let bad = |message: &str| RemoteError::Malformed { url: shown.into(), what: "the oci:// URL".into(), message: message.into() };
        let rest = url.strip_prefix("oci://").ok_or_else(|| bad("does not start with oci://"))?;
        let (host, path) = rest.split_once('/').ok_or_else(|| bad("names no repository"))?;
        let (repository, reference) = match path.split_once('@') {
            Some((repo, digest)) => (repo, digest),
            None => match path.rsplit_once(':') {
                Some((repo, tag)) if !tag.contains('/') => (repo, tag),
                _ => (path, "latest"),
            },
        };
        if host.is_empty() || repository.is_empty() || reference.is_empty() {
            return Err(bad("needs a host and a repository"));
        }
        Ok(Artifact { host: host.into(), repository: repository.into(), reference: reference.into() })
    }
}

#[derive(Deserialize)]
struct Manifest {
    #[serde(default)]
    layers: Vec<Layer>,
    #[serde(default)]
    manifests: Option<serde_json::Value>,
}

#[derive(Deserialize)]
struct Layer {
    digest: String,
    size: u64,
    #[serde(default, rename = "mediaType")]
    media_type: String,
}

/// The texts of every layer of the artifact at `url`, named `layer-NNN/…` in layer order.
pub async fn fetch(http: &Http, url: &str, plain_http: bool, credentials: &Credentials) -> Result<Vec<(String, String)>, RemoteError> {
    let mut opened = Opened::open(http, url, plain_http, credentials).await?;
    let mut out = Vec::new();
    for i in 0..opened.manifest.layers.len() {
        let blob = opened.layer(i).await?;
        let name = format!("layer-{:03}", i + 1);
        for (entry, text) in shapes::files(&blob, &name, &http.shown)? {
            let entry = if entry == name { entry } else { format!("{name}/{entry}") };
            out.push((entry, text));
        }
    }
    Ok(out)
}

/// One layer of the artifact at `url` as it is stored: the first of `media_type`, or the
/// first of all without one; with the manifest's digest, which names the artifact's
/// content whatever tag was asked for.
pub async fn fetch_layer(
    http: &Http,
    url: &str,
    plain_http: bool,
    credentials: &Credentials,
    media_type: Option<&str>,
) -> Result<(String, Vec<u8>), RemoteError> {
    let mut opened = Opened::open(http, url, plain_http, credentials).await?;
    let index =
        opened.manifest.layers.iter().position(|l| media_type.is_none_or(|m| l.media_type == m)).ok_or_else(|| RemoteError::Malformed {
            url: http.shown.clone(),
            what: "the manifest".into(),
            message: format!("has no layer of media type {}", media_type.unwrap_or("any")),
        })?;
    let blob = opened.layer(index).await?;
    Ok((opened.digest.clone(), blob))
}

/// An artifact's manifest, read and checked, and the session to fetch its layers in.
struct Opened<'s> {
    session: Session<'s>,
    base: String,
    manifest: Manifest,
    /// `sha256:…` of the manifest's bytes.
    digest: String,
}

impl<'s> Opened<'s> {
    async fn open(http: &'s Http, url: &str, plain_http: bool, credentials: &'s Credentials) -> Result<Opened<'s>, RemoteError> {
        let artifact = Artifact::parse(url, &http.shown)?;
        let base = format!("{}://{}/v2/{}", if plain_http { "http" } else { "https" }, artifact.host, artifact.repository);
        let mut session = Session { http, credentials, token: credentials.token.clone(), repository: artifact.repository.clone() };
        let bytes = session.get(&format!("{base}/manifests/{}", artifact.reference), MAX_MANIFEST, "the manifest").await?;
        let malformed = |message: String| RemoteError::Malformed { url: http.shown.clone(), what: "the manifest".into(), message };
        let manifest: Manifest = serde_json::from_slice(&bytes).map_err(|e| malformed(e.to_string()))?;
        if manifest.manifests.is_some() {
            return Err(malformed("is an image index; name one manifest of it by its digest".into()));
        }
        if manifest.layers.len() > MAX_LAYERS {
            return Err(RemoteError::TooMany { url: http.shown.clone(), what: "layers".into(), limit: MAX_LAYERS });
        }
        let digest = format!("sha256:{}", hex::encode(Sha256::digest(&bytes)));
        Ok(Opened { session, base, manifest, digest })
    }

    /// Layer `i`, checked against its digest.
    async fn layer(&mut self, i: usize) -> Result<Vec<u8>, RemoteError> {
        let layer = &self.manifest.layers[i];
        let shown = self.session.http.shown.clone();
        let what = format!("layer {} ({})", i + 1, layer.digest);
        if layer.size > MAX_BODY {
            return Err(RemoteError::TooLarge { url: shown, what, limit: MAX_BODY });
        }
        let blob = self.session.get(&format!("{}/blobs/{}", self.base, layer.digest), MAX_BODY, &what).await?;
        let actual = format!("sha256:{}", hex::encode(Sha256::digest(&blob)));
        if actual != layer.digest {
            return Err(RemoteError::DigestMismatch { url: shown, what, expected: layer.digest.clone(), actual });
        }
        Ok(blob)
    }
}

/// Requests to one repository, with the token once one was needed.
struct Session<'s> {
    http: &'s Http,
    credentials: &'s Credentials,
    token: Option<String>,
    repository: String,
}

impl Session<'_> {
    async fn get(&mut self, url: &str, cap: u64, what: &str) -> Result<Vec<u8>, RemoteError> {
        let request = || self.http.client.get(url).header(reqwest::header::ACCEPT, MANIFEST_TYPES);
        let first = match &self.token {
            Some(token) => request().bearer_auth(token),
            None => self.credentials.authorize(request()),
        };
        let challenge = match self.http.get(first, cap, what).await? {
            Ok(body) => return Ok(body),
            Err(response) => response.headers().get(reqwest::header::WWW_AUTHENTICATE).and_then(|v| v.to_str().ok()).map(String::from),
        };
        let unauthorized = RemoteError::Status { url: self.http.shown.clone(), status: 401 };
        let Some(challenge) = challenge.filter(|_| self.credentials.token.is_none()) else { return Err(unauthorized) };
        let token = self.token_for(&challenge).await?;
        self.token = Some(token.clone());
        self.http.get_body(request().bearer_auth(token), cap, what).await
    }

    /// A pull token from the token service a `Bearer realm=…,service=…,scope=…` challenge names.
    async fn token_for(&self, challenge: &str) -> Result<String, RemoteError> {
        let params = challenge_params(challenge).ok_or_else(|| RemoteError::Malformed {
            url: self.http.shown.clone(),
            what: "the registry's WWW-Authenticate".into(),
            message: "is not a bearer challenge with a realm".into(),
        })?;
        let mut query: Vec<(&str, String)> = Vec::new();
        if let Some(service) = params.iter().find(|(k, _)| k == "service") {
            query.push(("service", service.1.clone()));
        }
        let scope = format!("repository:{}:pull", self.repository);
        query.push(("scope", params.iter().find(|(k, _)| k == "scope").map_or(scope, |s| s.1.clone())));
        let realm = &params.iter().find(|(k, _)| k == "realm").expect("checked by challenge_params").1;
        let body =
            self.http.get_body(self.credentials.authorize(self.http.client.get(realm).query(&query)), MAX_MANIFEST, "the token").await?;
        #[derive(Deserialize)]
        struct Token {
            token: Option<String>,
            access_token: Option<String>,
        }
        let token: Token = serde_json::from_slice(&body).map_err(|e| RemoteError::Malformed {
            url: self.http.shown.clone(),
            what: "the registry's token".into(),
            message: e.to_string(),
        })?;
        token.token.or(token.access_token).ok_or_else(|| RemoteError::Malformed {
            url: self.http.shown.clone(),
            what: "the registry's token".into(),
            message: "has neither token nor access_token".into(),
        })
    }
}

/// The `key="value"` pairs of a bearer challenge, when it has a realm.
fn challenge_params(challenge: &str) -> Option<Vec<(String, String)>> {
    let rest = challenge.trim_start();
    let rest = rest.get(..6).filter(|s| s.eq_ignore_ascii_case("bearer")).map(|_| &rest[6..])?;
    let params: Vec<(String, String)> = rest
        .split(',')
        .filter_map(|p| p.trim().split_once('='))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().trim_matches('"').to_string()))
        .collect();
    params.iter().any(|(k, _)| k == "realm").then_some(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_tags_digests_and_ports() {
        let a = |url| Artifact::parse(url, "u").map(|a| (a.host, a.repository, a.reference));
        let t = |h: &str, r: &str, x: &str| Ok((h.to_string(), r.to_string(), x.to_string()));
        assert_eq!(a("oci://127.0.0.1:5000/team/app:v1"), t("127.0.0.1:5000", "team/app", "v1"));
        assert_eq!(a("oci://127.0.0.1:5000/team/app"), t("127.0.0.1:5000", "team/app", "latest"));
        assert_eq!(a("oci://r.example/app@sha256:ab"), t("r.example", "app", "sha256:ab"));
        assert!(matches!(a("oci://host"), Err(RemoteError::Malformed { .. })));
        assert!(matches!(a("oci:///app:v1"), Err(RemoteError::Malformed { .. })));
    }

    #[test]
    fn reads_a_bearer_challenge() {
        let p =
            challenge_params(r#"Bearer realm="https://auth.example/token",service="registry.example",scope="repository:a:pull""#).unwrap();
        assert_eq!(p[0], ("realm".into(), "https://auth.example/token".into()));
        assert_eq!(p[1], ("service".into(), "registry.example".into()));
        assert_eq!(challenge_params(r#"Basic realm="x""#), None);
        assert_eq!(challenge_params("Bearer service=x"), None);
    }
}
