//! Flux OCIRepository sources of `kustomizationRefs`: the artifact `spec.url` and
//! `spec.ref` name, fetched by the publisher itself once per run, its layer kept as it is
//! stored (the gzip'ed tar `flux push artifact` writes) under the repository's revision
//! key, with the manifest's digest, so a tag that moved changes what a cluster's rendering
//! reads.
//!
//! Supported: `url` (`oci://`), `ref.tag` (default `latest`) or `ref.digest`,
//! `layerSelector.mediaType` (else the first layer), `insecure` (plain HTTP), `interval`
//! (how soon `watch` looks again). Refused, naming the field: anything that needs
//! credentials or a verification the publisher does not make (`secretRef`,
//! `certSecretRef`, `proxySecretRef`, `serviceAccountName`, a `provider` other than
//! `generic`, `verify`), `ref.semver`, `ignore`, and `layerSelector.operation: copy`.

use std::collections::BTreeSet;
use std::time::Duration;

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::credentials::Credentials;
use super::http::Http;
use super::oci;
use crate::source_mirrors::Mirrors;
use crate::sources::model::kustomization::{flux_sources, revision_key};
use crate::sources::{ObjectKey, Resources};

/// Fetches the artifact of every OCIRepository in `repositories` that `resources` holds
/// (from its mirror in `mirrors`, if it has one) and records it (or why it could not be
/// fetched) under its revision key. Returns the shortest `spec.interval` among them.
pub async fn fetch_oci_repositories(repositories: &BTreeSet<ObjectKey>, mirrors: &Mirrors, resources: &mut Resources) -> Option<Duration> {
    let (found, soonest) = flux_sources(repositories, resources);
    for (repository, source) in found {
        let outcome = match source {
            Ok(value) => artifact(&value, &repository.to_string(), mirrors).await,
            Err(why) => Err(why),
        };
        resources.record(revision_key(&repository), outcome.map(Some));
    }
    soonest
}

/// Where an OCIRepository points, read from its spec.
#[derive(Debug, PartialEq, Eq)]
struct Wanted {
    /// `oci://host/repository:tag` or `…@sha256:…`.
    reference: String,
    media_type: Option<String>,
    plain_http: bool,
}

fn wanted(spec: &Value, origin: &str) -> Result<Wanted, String> {
    let refused = |field: &str, why: &str| Err(format!("{origin}: OCIRepository spec.{field} is not supported: {why}"));
    for field in ["secretRef", "certSecretRef", "proxySecretRef", "serviceAccountName", "verify"] {
        if !spec[field].is_null() {
            return refused(field, "management-side fetches are anonymous and unverified beyond the digests");
        }
    }
    if spec["provider"].as_str().is_some_and(|p| p != "generic") {
        return refused("provider", "only generic registries are fetched");
    }
    if !spec["ignore"].is_null() {
        return refused("ignore", "the artifact is built as it is");
    }
    let url = spec["url"].as_str().filter(|u| u.starts_with("oci://")).ok_or_else(|| format!("{origin}: spec.url is not an oci:// URL"))?;
    let r = &spec["ref"];
    let text = |k: &str| r[k].as_str().filter(|s| !s.is_empty());
    if text("semver").is_some() || text("semverFilter").is_some() {
        return refused("ref.semver", "name the tag or the digest");
    }
    let reference = match (text("digest"), text("tag")) {
        (Some(digest), _) => format!("{url}@{digest}"),
        (None, Some(tag)) => format!("{url}:{tag}"),
        (None, None) => format!("{url}:latest"),
    };
    let selector = &spec["layerSelector"];
    if selector["operation"].as_str().is_some_and(|o| o != "extract") {
        return refused("layerSelector.operation", "a kustomization is built from an extracted tree");
    }
    Ok(Wanted {
        reference,
        media_type: selector["mediaType"].as_str().filter(|m| !m.is_empty()).map(str::to_string),
        plain_http: spec["insecure"].as_bool().unwrap_or(false),
    })
}

/// The artifact, recorded under the URL the OCIRepository names: the manifest's digest
/// says what was fetched, wherever from.
async fn artifact(repository: &Value, origin: &str, mirrors: &Mirrors) -> Result<Value, String> {
    let wanted = wanted(&repository["spec"], origin)?;
    let credentials = Credentials::default();
    let target = mirrors.rewrite(&wanted.reference);
    let http = Http::new(&super::via(&wanted.reference, &target.url), &credentials, false).map_err(|e| format!("{origin}: {e}"))?;
    let plain_http = wanted.plain_http || target.plain_http;
    let (digest, layer) = oci::fetch_layer(&http, &target.url, plain_http, &credentials, wanted.media_type.as_deref())
        .await
        .map_err(|e| format!("{origin}: {e}"))?;
    Ok(json!({"url": wanted.reference, "digest": digest, "tarball": STANDARD.encode(layer)}))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn fetches_the_artifact_from_its_mirror() {
        super::super::provider();
        let key = ObjectKey::new("source.toolkit.fluxcd.io/v1beta2", "OCIRepository", "flux", "app");
        let value = json!({"spec": {"url": "oci://ghcr.io/org/app", "ref": {"tag": "v1"}, "insecure": true}});
        let mut resources = Resources::found(std::collections::BTreeMap::from([(key.clone(), value)]));
        let mirrors = Mirrors::parse([("--mirror number 1".to_string(), "oci://ghcr.io=oci://127.0.0.1:1/ghcr")]).expect("valid");
        fetch_oci_repositories(&BTreeSet::from([key.clone()]), &mirrors, &mut resources).await;
        match resources.lookup(&revision_key(&key)) {
            crate::sources::Lookup::Failed(why) => {
                assert!(why.contains("oci://ghcr.io/org/app:v1 (from mirror oci://127.0.0.1:1/ghcr/org/app:v1)"), "{why}")
            }
            _ => panic!("expected a failure"),
        }
    }

    #[test]
    fn reads_what_flux_names() {
        let read = |spec: Value| wanted(&spec, "o");
        assert_eq!(
            read(json!({"url": "oci://127.0.0.1:5000/app", "ref": {"tag": "v1"}, "insecure": true})),
            Ok(Wanted { reference: "oci://127.0.0.1:5000/app:v1".into(), media_type: None, plain_http: true })
        );
        let by_digest = read(json!({"url": "oci://r/app", "ref": {"tag": "v1", "digest": "sha256:ab"},
                                    "layerSelector": {"mediaType": "application/vnd.cncf.flux.content.v1.tar+gzip", "operation": "extract"}}));
        assert_eq!(
            by_digest,
            Ok(Wanted {
                reference: "oci://r/app@sha256:ab".into(),
                media_type: Some("application/vnd.cncf.flux.content.v1.tar+gzip".into()),
                plain_http: false
            })
        );
        assert_eq!(read(json!({"url": "oci://r/app"})).map(|w| w.reference), Ok("oci://r/app:latest".into()));
        for (spec, field) in [
            (json!({"url": "oci://r/app", "secretRef": {"name": "s"}}), "spec.secretRef"),
            (json!({"url": "oci://r/app", "provider": "aws"}), "spec.provider"),
            (json!({"url": "oci://r/app", "ref": {"semver": ">=1"}}), "spec.ref.semver"),
            (json!({"url": "oci://r/app", "layerSelector": {"operation": "copy"}}), "spec.layerSelector.operation"),
            (json!({"url": "https://r/app"}), "spec.url"),
        ] {
            let err = read(spec).unwrap_err();
            assert!(err.contains(field), "{err}");
        }
    }
}
