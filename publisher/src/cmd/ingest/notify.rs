//! Sends what a ClusterHealthCheck decided (`cluster_health`) the two ways Airlock
//! supports: a Kubernetes Event on the ClusterHealthCheck ([`event`], type
//! `KubernetesEvent`), and a Microsoft Teams webhook ([`teams`], type `Teams`): a JSON POST
//! of an adaptive card to the URL the notification's Secret holds under
//! `TEAMS_WEBHOOK_URL`, a Secret of Sveltos's type `addons.projectsveltos.io/cluster-profile`,
//! as Sveltos reads it. Teams is the one webhook-style type of Sveltos's whose credential
//! is the URL itself, so it needs no vendor API and works against any receiver on the
//! management side's network; Slack's needs a token and Slack's own API.
//!
//! The URL is a credential: it must be `http` or `https`, and it is only ever shown as
//! [`shown`] gives it (scheme and host; its path holds the webhook's secret). A Secret
//! that does not hold a usable URL is a delivery failure naming the Secret and the key.

use std::time::Duration;

use jiff::Timestamp;
use k8s_openapi::api::core::v1::{Event, Secret};
use kube::api::{Api, PostParams};
use serde_json::{Value, json};

use crate::annotations::FIELD_MANAGER;

/// The Secret key of a Teams webhook URL, as libsveltos names it.
pub const TEAMS_WEBHOOK_KEY: &str = "TEAMS_WEBHOOK_URL";
/// The type a notification's Secret must have, as Sveltos requires.
pub const SECRET_TYPE: &str = "addons.projectsveltos.io/cluster-profile";
/// An Event's message, at most, as Sveltos cuts it.
pub const MAX_EVENT_MESSAGE_BYTES: usize = 1_024;
/// How long a webhook may take to answer.
const TIMEOUT: Duration = Duration::from_secs(10);

/// The webhook URL `secret` (JSON, named `what`) holds, checked.
pub fn webhook_url(secret: &Value, what: &str) -> Result<reqwest::Url, String> {
    if secret["type"] != SECRET_TYPE {
        return Err(format!("{what}: type must be {SECRET_TYPE}"));
    }
    let field = format!("{what}: data.{TEAMS_WEBHOOK_KEY}");
    let encoded = secret["data"][TEAMS_WEBHOOK_KEY].as_str().ok_or_else(|| format!("{field}: missing"))?;
    use base64::Engine;
    let bytes = base64::engine::general_purpose::STANDARD.decode(encoded).map_err(|_| format!("{field}: not base64"))?;
    let text = String::from_utf8(bytes).map_err(|_| format!("{field}: not UTF-8"))?;
    let url = reqwest::Url::parse(text.trim()).map_err(|e| format!("{field}: not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") {
        return Err(format!("{field}: scheme {:?} is not http or https", url.scheme()));
    }
    if url.host_str().is_none_or(str::is_empty) {
        return Err(format!("{field}: names no host"));
    }
    Ok(url)
}

/// `url` as logs and messages show it: scheme, host and port, never its path, query or
/// user information.
pub fn shown(url: &reqwest::Url) -> String {
    let port = url.port().map(|p| format!(":{p}")).unwrap_or_default();
    format!("{}://{}{port}/…", url.scheme(), url.host_str().unwrap_or_default())
}

/// The Teams message: an adaptive card whose title says passing or failing and whose
/// lines are the message's, as Sveltos composes it.
pub fn card(message: &str, passing: bool) -> Value {
    let title = if passing { ("Passing!", "Good") } else { ("Failing some checks.", "Attention") };
    let mut body = vec![json!({"type": "TextBlock", "text": title.0, "weight": "Bolder", "size": "Large", "color": title.1, "wrap": true})];
    body.extend(message.lines().map(|line| json!({"type": "TextBlock", "text": line, "wrap": true})));
    json!({
        "type": "message",
        "attachments": [{
            "contentType": "application/vnd.microsoft.card.adaptive",
            "content": {"$schema": "http://adaptivecards.io/schemas/adaptive-card.json", "type": "AdaptiveCard", "version": "1.5", "body": body},
        }],
    })
}

/// Reads the webhook URL from the Secret `(namespace, name)` and posts the card.
pub async fn teams(client: &kube::Client, secret: &(String, String), message: &str, passing: bool) -> Result<(), String> {
    let what = format!("Secret {}/{}", secret.0, secret.1);
    let found = Api::<Secret>::namespaced(client.clone(), &secret.0).get(&secret.1).await.map_err(|e| format!("{what}: {e}"))?;
    let value = serde_json::to_value(found).expect("a Secret serialises");
    let url = webhook_url(&value, &what)?;
    tracing::info!(webhook = %shown(&url), "sending a Teams notification");
    post(&url, &card(message, passing)).await
}

/// POSTs `body` to `url`; any answer but 2xx is a failure, named by the shown URL.
pub async fn post(url: &reqwest::Url, body: &Value) -> Result<(), String> {
    let failed = |why: String| format!("webhook {}: {why}", shown(url));
    let client = reqwest::Client::builder()
        .timeout(TIMEOUT)
        .redirect(reqwest::redirect::Policy::none())
        .build()
        .map_err(|e| failed(format!("cannot set up the HTTP client: {e}")))?;
    let bytes = serde_json::to_vec(body).expect("a JSON value serialises");
    let response = client
        .post(url.clone())
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .body(bytes)
        .send()
        .await
        // reqwest's message quotes the URL: only its kind is kept.
        .map_err(|e| {
            failed(if e.is_timeout() {
                "timed out".into()
            } else if e.is_connect() {
                "cannot connect".into()
            } else {
                "request failed".into()
            })
        })?;
    match response.status() {
        s if s.is_success() => Ok(()),
        s => Err(failed(format!("answered HTTP {}", s.as_u16()))),
    }
}

/// Records `message` as an Event on the ClusterHealthCheck `check` (its JSON): `Normal`
/// when passing, `Warning` when not, reason `ClusterHealthCheck`, action `LivenessChecks`.
pub async fn event(client: &kube::Client, check: &Value, message: &str, passing: bool) -> Result<(), String> {
    let name = check["metadata"]["name"].as_str().unwrap_or_default();
    let time = Timestamp::now().to_string();
    let event: Event = serde_json::from_value(json!({
        "metadata": {"generateName": format!("{name}."), "namespace": "default"},
        "involvedObject": {"apiVersion": check["apiVersion"], "kind": "ClusterHealthCheck", "name": name, "uid": check["metadata"]["uid"]},
        "reason": "ClusterHealthCheck", "action": "LivenessChecks", "message": cut(message),
        "type": if passing { "Normal" } else { "Warning" }, "count": 1,
        "firstTimestamp": time, "lastTimestamp": time, "source": {"component": FIELD_MANAGER},
    }))
    .expect("a well-formed Event");
    Api::<Event>::namespaced(client.clone(), "default")
        .create(&PostParams::default(), &event)
        .await
        .map(drop)
        .map_err(|e| format!("Event: {e}"))
}

/// `message` within [`MAX_EVENT_MESSAGE_BYTES`], marked when cut.
fn cut(message: &str) -> String {
    const MARK: &str = "...(truncated)";
    if message.len() <= MAX_EVENT_MESSAGE_BYTES {
        return message.to_string();
    }
    let mut end = MAX_EVENT_MESSAGE_BYTES - MARK.len();
    while !message.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}{MARK}", &message[..end])
}

#[cfg(test)]
mod tests {
    use base64::Engine;
    use base64::engine::general_purpose::STANDARD;

    use super::*;

    fn secret(url: &str, kind: &str) -> Value {
        json!({"type": kind, "data": {TEAMS_WEBHOOK_KEY: STANDARD.encode(url)}})
    }

    #[test]
    fn takes_only_http_urls_from_a_secret_of_sveltos_type() {
        let url = webhook_url(&secret("https://hooks.example/webhook/SECRET-TOKEN?sig=abc", SECRET_TYPE), "Secret d/t").unwrap();
        assert_eq!(shown(&url), "https://hooks.example/…", "never the path or query, which hold the secret");
        let local = webhook_url(&secret("http://127.0.0.1:8080/hook", SECRET_TYPE), "Secret d/t").unwrap();
        assert_eq!(shown(&local), "http://127.0.0.1:8080/…");
        for (value, kind, expected) in [
            ("file:///etc/passwd", SECRET_TYPE, "Secret d/t: data.TEAMS_WEBHOOK_URL: scheme \"file\" is not http or https"),
            ("gopher://x/secret", SECRET_TYPE, "scheme \"gopher\""),
            ("not a url", SECRET_TYPE, "Secret d/t: data.TEAMS_WEBHOOK_URL: not a URL"),
            ("https://hooks.example/x", "Opaque", "Secret d/t: type must be addons.projectsveltos.io/cluster-profile"),
        ] {
            let err = webhook_url(&secret(value, kind), "Secret d/t").unwrap_err();
            assert!(err.contains(expected), "{value}: {err}");
            assert!(!err.contains("secret") || !value.contains("secret"), "the URL is not quoted: {err}");
        }
        let missing = webhook_url(&json!({"type": SECRET_TYPE, "data": {}}), "Secret d/t").unwrap_err();
        assert_eq!(missing, "Secret d/t: data.TEAMS_WEBHOOK_URL: missing");
    }

    #[test]
    fn the_card_says_passing_or_failing_with_each_line() {
        let failing = card("Cluster Sveltos:fleet/a\nLiveness check \"HealthCheck:x\" failing", false);
        let body = &failing["attachments"][0]["content"]["body"];
        assert_eq!((body[0]["text"].clone(), body[0]["color"].clone()), (json!("Failing some checks."), json!("Attention")));
        assert_eq!(body[2]["text"], "Liveness check \"HealthCheck:x\" failing");
        assert_eq!(card("ok", true)["attachments"][0]["content"]["body"][0]["text"], "Passing!");
    }

    #[test]
    fn an_event_message_is_cut_as_sveltos_cuts_it() {
        let long = "é".repeat(MAX_EVENT_MESSAGE_BYTES);
        let message = cut(&long);
        assert!(message.len() <= MAX_EVENT_MESSAGE_BYTES && message.ends_with("...(truncated)"));
        assert_eq!(cut("short"), "short");
    }
}
