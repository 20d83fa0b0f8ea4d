//! Fetching against a server run on 127.0.0.1 by the test: what goes over the wire
//! (credentials, the token dance), what comes back refused (statuses, sizes, digests), and
//! what a fetcher keeps between runs.

use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use serde_json::json;
use sha2::{Digest as _, Sha256};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::*;
use crate::sources::model::SecretName;

/// What the server answers: status, extra headers, body.
type Answer = (u16, Vec<(&'static str, String)>, Vec<u8>);

/// Serves `answer(path, authorization)` on 127.0.0.1; returns the port and a count of requests.
async fn serve(answer: impl Fn(&str, &str, u16) -> Answer + Send + Sync + 'static) -> (u16, Arc<AtomicUsize>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (answer, count) = (Arc::new(answer), Arc::new(AtomicUsize::new(0)));
    let counted = count.clone();
    tokio::spawn(async move {
        while let Ok((mut conn, _)) = listener.accept().await {
            counted.fetch_add(1, Ordering::SeqCst);
            let answer = answer.clone();
            tokio::spawn(async move {
                let (mut request, mut buf) = (Vec::new(), [0; 4096]);
                while !request.windows(4).any(|w| w == b"\r\n\r\n") {
                    match conn.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => request.extend_from_slice(&buf[..n]),
                    }
                }
                let text = String::from_utf8_lossy(&request);
                let path = text.split_whitespace().nth(1).unwrap_or_default();
                let auth = text.lines().find_map(|l| l.strip_prefix("authorization: ")).unwrap_or_default();
                let (status, headers, body) = answer(path, auth, port);
                let mut head = format!("HTTP/1.1 {status} X\r\nConnection: close\r\n");
                if !headers.iter().any(|(k, _)| *k == "content-length") {
                    head.push_str(&format!("content-length: {}\r\n", body.len()));
                }
                for (k, v) in headers {
                    head.push_str(&format!("{k}: {v}\r\n"));
                }
                head.push_str("\r\n");
                let _ = conn.write_all(head.as_bytes()).await;
                let _ = conn.write_all(&body).await;
            });
        }
    });
    (port, count)
}

fn remote(url: String) -> RemoteUrl {
    RemoteUrl {
        url,
        plain_http: true,
        insecure_skip_tls_verify: false,
        secret: None,
        template: false,
        interval: std::time::Duration::from_secs(3_600),
        tree: false,
    }
}

fn secret(data: serde_json::Value) -> Value {
    json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "creds", "namespace": "ops"}, "stringData": data})
}

/// Fetches `remote` once with `fetcher`, with `secret` as `ops/creds` when given.
async fn fetch_with(fetcher: &Fetcher, remote: &RemoteUrl, secret: Option<Value>) -> Result<Option<Value>, String> {
    fetch_through(fetcher, remote, secret, &Mirrors::default()).await
}

/// [`fetch_with`] through `mirrors`.
async fn fetch_through(fetcher: &Fetcher, remote: &RemoteUrl, secret: Option<Value>, mirrors: &Mirrors) -> Result<Option<Value>, String> {
    let mut resources = Resources::default();
    if let Some(s) = secret {
        resources.record(ObjectKey::new("v1", "Secret", "ops", "creds"), Ok(Some(s)));
    }
    let wanted = BTreeMap::from([(remote.key(), remote.clone())]);
    fetcher.fetch_into(&wanted, mirrors, &mut resources).await;
    match resources.lookup(&remote.key()) {
        Lookup::Found(value) => Ok(Some(value.clone())),
        Lookup::Missing => Ok(None),
        Lookup::Failed(why) => Err(why.to_string()),
    }
}

const DOC: &str = "apiVersion: v1\nkind: Namespace\nmetadata: {name: a}\n";

#[tokio::test]
async fn sends_basic_auth_and_keeps_the_content_until_the_interval_passed() {
    provider();
    let (port, count) = serve(|_, auth, _| match auth {
        "Basic dTpw" => (200, vec![], DOC.as_bytes().to_vec()),
        _ => (401, vec![], vec![]),
    })
    .await;
    let mut r = remote(format!("http://127.0.0.1:{port}/a/x.yaml"));
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let fetcher = Fetcher::default();
    let creds = secret(json!({"username": "u", "password": "p"}));
    let Ok(Some(value)) = fetch_with(&fetcher, &r, Some(creds.clone())).await else { panic!("fetched") };
    assert_eq!(value["data"], json!({"x.yaml": DOC}));
    assert!(fetcher.next_due().is_some());
    assert!(fetch_with(&fetcher, &r, Some(creds)).await.is_ok_and(|v| v.is_some()));
    assert_eq!(count.load(Ordering::SeqCst), 1, "kept within the interval");
    let other = secret(json!({"username": "u", "password": "other"}));
    assert_eq!(fetch_with(&fetcher, &r, Some(other)).await, Err(format!("http://127.0.0.1:{port}/a/x.yaml: HTTP status 401")));
    assert_eq!(count.load(Ordering::SeqCst), 2, "a new Secret fetches again");
}

#[tokio::test]
async fn a_404_is_missing_and_other_failures_are_unreadable() {
    provider();
    let (port, _) = serve(|path, _, _| match path {
        "/big" => (200, vec![("content-length", (limits::MAX_BODY + 1).to_string())], vec![]),
        "/500" => (500, vec![], vec![]),
        _ => (404, vec![], vec![]),
    })
    .await;
    let fetcher = Fetcher::default();
    let url = |path: &str| format!("http://127.0.0.1:{port}{path}");
    assert_eq!(fetch_with(&fetcher, &remote(url("/gone?token=x")), None).await, Ok(None));
    let failed = |e: RemoteError| e.to_string();
    assert_eq!(fetch_with(&fetcher, &remote(url("/500")), None).await, Err(failed(RemoteError::Status { url: url("/500"), status: 500 })));
    assert_eq!(
        fetch_with(&fetcher, &remote(url("/big")), None).await,
        Err(failed(RemoteError::TooLarge { url: url("/big"), what: "the body".into(), limit: limits::MAX_BODY }))
    );
    assert!(fetcher.next_due().is_some(), "a failure is due again after its interval");
}

#[tokio::test]
async fn a_missing_secret_fails_naming_it() {
    let mut r = remote("https://127.0.0.1:1/x".into());
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let want = RemoteError::Credentials { url: r.url.clone(), secret: "ops/creds".into(), message: "not found".into() };
    assert_eq!(fetch_with(&Fetcher::default(), &r, None).await, Err(want.to_string()));
}

#[tokio::test]
async fn a_refused_connection_is_unavailable() {
    provider();
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let Err(why) = fetch_with(&Fetcher::default(), &remote(format!("http://127.0.0.1:{port}/x")), None).await else { panic!("fails") };
    assert!(why.starts_with(&format!("http://127.0.0.1:{port}/x: unavailable: ")), "{why}");
}

/// A registry with one artifact `app:v1` whose layers are `layers`, asking for a token
/// from its token service, which wants basic auth `u:p`.
async fn registry(layers: Vec<Vec<u8>>, lie: bool) -> u16 {
    let descriptors: Vec<Value> = layers
        .iter()
        .map(|l| json!({"mediaType": "application/vnd.oci.image.layer.v1.tar+gzip", "digest": format!("sha256:{}", hex::encode(Sha256::digest(l))), "size": l.len()}))
        .collect();
    let manifest = serde_json::to_vec(&json!({"schemaVersion": 2, "layers": descriptors})).unwrap();
    let (port, _) = serve(move |path, auth, port| {
        if path.starts_with("/token?") {
            let ok = auth == "Basic dTpw" && path.contains("scope=repository%3Ateam%2Fapp%3Apull");
            return if ok { (200, vec![], br#"{"token": "tok"}"#.to_vec()) } else { (401, vec![], vec![]) };
        }
        if auth != "Bearer tok" {
            let challenge = format!("Bearer realm=\"http://127.0.0.1:{port}/token\",service=\"test\"");
            return (401, vec![("www-authenticate", challenge)], vec![]);
        }
        match path {
            "/v2/team/app/manifests/v1" => (200, vec![], manifest.clone()),
            _ => match descriptors.iter().position(|d| path == format!("/v2/team/app/blobs/{}", d["digest"].as_str().unwrap())) {
                Some(i) if lie => (200, vec![], [&layers[i][..], b"x"].concat()),
                Some(i) => (200, vec![], layers[i].clone()),
                None => (404, vec![], vec![]),
            },
        }
    })
    .await;
    port
}

#[tokio::test]
async fn reads_every_layer_of_an_artifact_after_the_token_dance() {
    provider();
    let tar = shapes::tests::tar_of(&[(tar::EntryType::Regular, "b.yaml", DOC)]);
    let port = registry(vec![shapes::tests::gzip(&tar), DOC.as_bytes().to_vec()], false).await;
    let mut r = remote(format!("oci://127.0.0.1:{port}/team/app:v1"));
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let Ok(Some(value)) = fetch_with(&Fetcher::default(), &r, Some(secret(json!({"username": "u", "password": "p"})))).await else {
        panic!("fetched")
    };
    assert_eq!(value["data"], json!({"layer-001/b.yaml": DOC, "layer-002": DOC}));
}

#[tokio::test]
async fn rejects_a_layer_whose_digest_does_not_match() {
    provider();
    let port = registry(vec![DOC.as_bytes().to_vec()], true).await;
    let mut r = remote(format!("oci://127.0.0.1:{port}/team/app:v1"));
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let Err(why) = fetch_with(&Fetcher::default(), &r, Some(secret(json!({"username": "u", "password": "p"})))).await else {
        panic!("fails")
    };
    assert!(why.contains("layer 1 (sha256:") && why.contains("the manifest says sha256:"), "{why}");
}

#[test]
fn names_a_document_by_the_last_segment_of_its_path() {
    assert_eq!(file_name("https://h/a/b/x.yaml"), "x.yaml");
    assert_eq!(file_name("https://h/a/"), "a");
    assert_eq!(file_name("https://h"), "content");
}

#[tokio::test]
async fn a_tree_is_kept_as_the_tarball_served_or_the_first_layer() {
    provider();
    let tarball = shapes::tests::gzip(&shapes::tests::tar_of(&[(tar::EntryType::Regular, "k/kustomization.yaml", "resources: []\n")]));
    let served = tarball.clone();
    let (port, _) = serve(move |_, _, _| (200, vec![], served.clone())).await;
    let tree = |url: String| RemoteUrl { tree: true, ..remote(url) };
    let encoded = json!(base64::Engine::encode(&base64::engine::general_purpose::STANDARD, &tarball));
    let Ok(Some(value)) = fetch_with(&Fetcher::default(), &tree(format!("http://127.0.0.1:{port}/k.tar.gz")), None).await else {
        panic!("fetched")
    };
    assert_eq!(value, json!({"tarball": encoded}));

    let port = registry(vec![tarball.clone(), DOC.as_bytes().to_vec()], false).await;
    let mut r = tree(format!("oci://127.0.0.1:{port}/team/app:v1"));
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let Ok(Some(value)) = fetch_with(&Fetcher::default(), &r, Some(secret(json!({"username": "u", "password": "p"})))).await else {
        panic!("fetched")
    };
    assert_eq!(value, json!({"tarball": encoded}), "the first layer, as stored");
    assert_ne!(r.key(), RemoteUrl { tree: false, ..r.clone() }.key(), "a tree and manifests of one URL are kept apart");
}

fn mirror(pair: &str) -> Mirrors {
    Mirrors::parse([("--mirror number 1".to_string(), pair)]).expect("a valid mirror")
}

#[tokio::test]
async fn fetches_from_the_mirror_with_the_secrets_credentials() {
    provider();
    let (port, count) = serve(|path, auth, _| match (path, auth) {
        ("/copy/fleet/x.yaml", "Basic dTpw") => (200, vec![], DOC.as_bytes().to_vec()),
        _ => (401, vec![], vec![]),
    })
    .await;
    let mut r = remote("https://config.example/fleet/x.yaml".into());
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let mirrors = mirror(&format!("https://config.example=http://127.0.0.1:{port}/copy"));
    let creds = secret(json!({"username": "u", "password": "p"}));
    let Ok(Some(value)) = fetch_through(&Fetcher::default(), &r, Some(creds), &mirrors).await else { panic!("fetched") };
    assert_eq!(value["data"], json!({"x.yaml": DOC}), "the document is named as the profile's URL names it");
    assert_eq!(count.load(Ordering::SeqCst), 1);

    let down = mirror("https://config.example=http://127.0.0.1:1/copy");
    let why = fetch_through(&Fetcher::default(), &remote("https://config.example/fleet/x.yaml".into()), None, &down).await.unwrap_err();
    assert!(
        why.starts_with("https://config.example/fleet/x.yaml (from mirror http://127.0.0.1:1/copy/fleet/x.yaml): unavailable"),
        "{why}"
    );
}

#[tokio::test]
async fn fetches_an_artifact_from_a_mirrored_registry_over_plain_http() {
    provider();
    let port = registry(vec![DOC.as_bytes().to_vec()], false).await;
    let mut r = RemoteUrl { plain_http: false, ..remote("oci://registry.example/team/app:v1".into()) };
    r.secret = Some(SecretName { namespace: "ops".into(), name: "creds".into() });
    let mirrors = mirror(&format!("oci://registry.example=oci+http://127.0.0.1:{port}"));
    let creds = secret(json!({"username": "u", "password": "p"}));
    let Ok(Some(value)) = fetch_through(&Fetcher::default(), &r, Some(creds), &mirrors).await else { panic!("fetched") };
    assert_eq!(value["data"], json!({"layer-001": DOC}));
}
