//! A check's `metricSource`: Prometheus instant queries, each reduced to one number, as
//! libsveltos reads them. A `scalar` result is its value; a `vector` must hold exactly
//! one sample (an aggregation such as `sum()` makes one); anything else is an error.
//! Credentials come from a Secret of the cluster: `token` (bearer), else `username` and
//! `password` (basic).

use std::collections::BTreeMap;
use std::time::Duration;

use airlock_bundle::statement::{Metrics, SecretName};
use base64::Engine;
use k8s_openapi::api::core::v1::Secret;
use serde::Deserialize;

/// How long one query may take.
const QUERY_TIMEOUT: Duration = Duration::from_secs(30);

/// Query name → value, for every query of `metrics`.
pub async fn fetch(client: &kube::Client, metrics: &Metrics) -> Result<BTreeMap<String, f64>, String> {
    let authorization = match &metrics.secret {
        Some(secret) => Some(authorization(client, secret).await?),
        None => None,
    };
    let http = reqwest::Client::builder().timeout(QUERY_TIMEOUT).build().map_err(|e| format!("cannot set up the HTTP client: {e}"))?;
    let endpoint = format!("{}/{}", metrics.url.trim_end_matches('/'), metrics.path.trim_start_matches('/'));
    let mut values = BTreeMap::new();
    for query in &metrics.queries {
        let url = reqwest::Url::parse_with_params(&endpoint, [("query", &query.query)])
            .map_err(|e| format!("metric source URL {endpoint:?}: {e}"))?;
        let mut request = http.get(url);
        if let Some(header) = &authorization {
            request = request.header(http::header::AUTHORIZATION, header);
        }
        let value = async {
            let response = request.send().await.map_err(|e| format!("querying {endpoint}: {e}"))?;
            let status = response.status();
            let body = response.text().await.map_err(|e| format!("reading the answer of {endpoint}: {e}"))?;
            if !status.is_success() {
                return Err(format!("{endpoint} answered HTTP {status}: {}", body.chars().take(200).collect::<String>()));
            }
            scalar(&body)
        };
        values.insert(query.name.clone(), value.await.map_err(|e| format!("metric query {:?}: {e}", query.name))?);
    }
    Ok(values)
}

#[derive(Deserialize)]
struct Answer {
    status: String,
    #[serde(default)]
    error: String,
    #[serde(default)]
    data: Option<Data>,
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct Data {
    result_type: String,
    result: serde_json::Value,
}

/// The one number of a Prometheus instant-query answer.
fn scalar(body: &str) -> Result<f64, String> {
    let answer: Answer = serde_json::from_str(body).map_err(|e| format!("not a Prometheus answer: {e}"))?;
    if answer.status != "success" {
        return Err(format!("the query failed: {}", answer.error));
    }
    let data = answer.data.ok_or("the answer has no data")?;
    let sample = match data.result_type.as_str() {
        "scalar" => data.result,
        "vector" => match data.result.as_array().map(Vec::as_slice) {
            Some([one]) => one.get("value").cloned().unwrap_or_default(),
            Some([]) => return Err("the query returned no data".into()),
            Some(many) => return Err(format!("the query returned {} series; aggregate them (sum()) into one value", many.len())),
            None => return Err("the vector result is not a list".into()),
        },
        other => return Err(format!("result type {other:?} is neither scalar nor vector")),
    };
    let text = sample.get(1).and_then(serde_json::Value::as_str).ok_or("the sample is not [time, \"value\"]")?;
    text.parse().map_err(|_| format!("the value {text:?} is not a number"))
}

/// The `Authorization` header the Secret's keys make.
async fn authorization(client: &kube::Client, name: &SecretName) -> Result<String, String> {
    let described = format!("Secret {}/{}", name.namespace, name.name);
    let secret = kube::Api::<Secret>::namespaced(client.clone(), &name.namespace)
        .get(&name.name)
        .await
        .map_err(|e| format!("reading the metric credentials, {described}: {e}"))?;
    let data = secret.data.unwrap_or_default();
    let text = |key: &str| data.get(key).map(|v| String::from_utf8_lossy(&v.0).into_owned());
    match (text("token"), text("username"), text("password")) {
        (Some(token), _, _) => Ok(format!("Bearer {token}")),
        (None, Some(user), Some(password)) => {
            Ok(format!("Basic {}", base64::engine::general_purpose::STANDARD.encode(format!("{user}:{password}"))))
        }
        _ => Err(format!("{described} holds neither a token nor a username and a password")),
    }
}

#[cfg(test)]
mod tests {
    use super::scalar;

    #[test]
    fn reads_scalars_and_single_sample_vectors() {
        assert_eq!(scalar(r#"{"status":"success","data":{"resultType":"scalar","result":[1.5,"0.25"]}}"#), Ok(0.25));
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"3"]}]}}"#;
        assert_eq!(scalar(vector), Ok(3.0));
    }

    #[test]
    fn refuses_what_is_not_one_number() {
        for (body, needle) in [
            (r#"{"status":"error","error":"bad query"}"#, "bad query"),
            (r#"{"status":"success","data":{"resultType":"vector","result":[]}}"#, "no data"),
            (r#"{"status":"success","data":{"resultType":"vector","result":[{"value":[1,"1"]},{"value":[1,"2"]}]}}"#, "2 series"),
            (r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#, "neither scalar nor vector"),
            (r#"{"status":"success","data":{"resultType":"scalar","result":[1,"x"]}}"#, "not a number"),
            ("<html>", "not a Prometheus answer"),
        ] {
            let why = scalar(body).unwrap_err();
            assert!(why.contains(needle), "{needle}: {why}");
        }
    }
}
