//! Pushing OCI artifacts to the test registries over the distribution API, as `oras push`
//! or `flux push artifact` would: an empty config, one layer, a manifest.

use airlock_bundle::Digest;

/// Pushes an artifact of one layer of `media_type` to `registry`, as `repository:tag`, with
/// basic auth when `login` is given; the manifest's digest.
pub async fn push_artifact(
    registry: &str,
    repository: &str,
    tag: &str,
    media_type: &str,
    layer: &[u8],
    login: Option<(&str, &str)>,
) -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let mut headers = reqwest::header::HeaderMap::new();
    if let Some((user, password)) = login {
        let basic = base64::Engine::encode(&base64::engine::general_purpose::STANDARD, format!("{user}:{password}"));
        headers.insert("authorization", format!("Basic {basic}").parse().expect("a header value"));
    }
    let http = reqwest::Client::builder().default_headers(headers).build().expect("a client");
    let base = format!("http://{registry}/v2/{repository}");
    let push = |bytes: Vec<u8>| {
        let (http, base) = (http.clone(), base.clone());
        async move {
            let digest = Digest::of(&bytes).to_string();
            let started = http.post(format!("{base}/blobs/uploads/")).send().await.expect("upload starts");
            assert_eq!(started.status().as_u16(), 202, "upload starts");
            let location = started.headers()["location"].to_str().expect("a location").to_string();
            let location = if location.starts_with('/') { format!("http://{registry}{location}") } else { location };
            let sep = if location.contains('?') { '&' } else { '?' };
            let put = http.put(format!("{location}{sep}digest={digest}")).body(bytes.clone()).send().await.expect("blob pushed");
            assert_eq!(put.status().as_u16(), 201, "blob pushed");
            (digest, bytes.len())
        }
    };
    let (config, config_size) = push(b"{}".to_vec()).await;
    let (layer, layer_size) = push(layer.to_vec()).await;
    let manifest = serde_json::json!({
        "schemaVersion": 2,
        "mediaType": "application/vnd.oci.image.manifest.v1+json",
        "artifactType": "application/vnd.airlock.test.manifests",
        "config": {"mediaType": "application/vnd.oci.empty.v1+json", "digest": config, "size": config_size},
        "layers": [{"mediaType": media_type, "digest": layer, "size": layer_size}],
    });
    let manifest = serde_json::to_vec(&manifest).expect("JSON");
    let put = http
        .put(format!("{base}/manifests/{tag}"))
        .header("content-type", "application/vnd.oci.image.manifest.v1+json")
        .body(manifest.clone())
        .send()
        .await
        .expect("manifest pushed");
    assert_eq!(put.status().as_u16(), 201, "manifest pushed");
    Digest::of(&manifest).to_string()
}
