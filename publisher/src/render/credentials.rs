//! Store credential renewal, the publisher's half (spec 2.6). A SveltosCluster registered
//! with `register cluster --token` names, in the annotation `airlock.dev/store-credentials`,
//! a Secret of its own namespace that something outside Airlock (a Vault or ECR rotator, an
//! operator) keeps renewed. The publisher relays that Secret into the cluster's bundle, in
//! the part `Airlock.system`, as the Secret `airlock-store-credentials` of the puller's
//! namespace, and says when the credentials it relays are about to expire.
//!
//! Entry points: [`relay_of`] reads the annotations, [`read`] checks the fetched Secret,
//! [`Credentials::object`] builds what the bundle carries and [`Credentials::expiry`] judges
//! the expiry against a clock it is given. This module fetches and renews nothing.

use std::sync::Arc;

use airlock::bundle::{PartSettings, StopMatchingBehavior, SyncMode};
use airlock::cluster::{is_dns_label, is_dns_subdomain};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use super::RenderError;
use super::resolve::typed;
use super::shared::Object;
use crate::sveltos::model::SveltosCluster;
use crate::sveltos::{ObjectKey, Reference, Resources};
use crate::yaml;

/// On a SveltosCluster: the name of the management Secret with its store credentials.
pub const STORE_CREDENTIALS_ANNOTATION: &str = "airlock.dev/store-credentials";
/// On a SveltosCluster: the namespace its puller runs in (default [`DEFAULT_PULLER_NAMESPACE`]).
pub const PULLER_NAMESPACE_ANNOTATION: &str = "airlock.dev/puller-namespace";
/// On the credentials Secrets: when the credentials stop working, RFC 3339.
pub const EXPIRES_AT_ANNOTATION: &str = "airlock.dev/expires-at";
/// The puller's credentials Secret on the managed cluster (registration and relay).
pub const CREDENTIALS_SECRET: &str = "airlock-store-credentials";
/// Data key of a `kubernetes.io/dockerconfigjson` Secret.
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";
pub const DOCKER_CONFIG_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// Data key of the managed-side Secret with the expiry, mounted beside `config.json` so the
/// puller can read it (a pod sees a Secret's data, never its annotations).
pub const EXPIRES_AT_KEY: &str = "expires-at";
/// Where registration puts the puller unless told otherwise.
pub const DEFAULT_PULLER_NAMESPACE: &str = "airlock-system";
/// The part Airlock's own objects travel in (spec 2.3).
pub use airlock::bundle::path::SYSTEM_PART;
/// The relayed Secret wins over any profile that deploys the same object (lowest tier wins).
pub const SYSTEM_TIER: u32 = 0;

/// Where a cluster's credentials come from (a management Secret) and go to.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Relay {
    pub source: Reference,
    /// The puller's namespace on the managed cluster.
    pub puller_namespace: String,
}

/// The relay a cluster's annotations ask for; `None` without `airlock.dev/store-credentials`.
pub fn relay_of(cluster: &SveltosCluster) -> Result<Option<Relay>, RenderError> {
    let annotations = &cluster.object["metadata"]["annotations"];
    let Some(name) = annotations[STORE_CREDENTIALS_ANNOTATION].as_str() else {
        return Ok(None);
    };
    let bad = |annotation: &str, value: &str, what: &str| RenderError::Credentials {
        object: format!("SveltosCluster {}", cluster.id),
        message: format!("annotation {annotation} {value:?} is not {what}"),
    };
    let name = name.trim();
    if !is_dns_subdomain(name) {
        return Err(bad(STORE_CREDENTIALS_ANNOTATION, name, "a Secret name"));
    }
    let puller_namespace = annotations[PULLER_NAMESPACE_ANNOTATION].as_str().map_or(DEFAULT_PULLER_NAMESPACE, str::trim);
    if !is_dns_label(puller_namespace) {
        return Err(bad(PULLER_NAMESPACE_ANNOTATION, puller_namespace, "a namespace name"));
    }
    let key = ObjectKey::new("v1", "Secret", cluster.id.namespace(), name);
    Ok(Some(Relay { source: Reference { key, api_version: "v1".into() }, puller_namespace: puller_namespace.into() }))
}

/// Checks that `bytes` is a Docker config.json with registry logins.
pub fn check_docker_config(bytes: &[u8]) -> Result<(), String> {
    let parsed: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
    match parsed.get("auths") {
        Some(auths) if auths.is_object() => Ok(()),
        _ => Err("not a Docker config.json: no \"auths\" object".into()),
    }
}

/// A management Secret's credentials, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// `Secret <namespace>/<name>`, for messages.
    secret: String,
    docker_config: Vec<u8>,
    expires_at: Timestamp,
}

impl std::fmt::Debug for Credentials {
    // By hand, so the credentials never reach a log or a test failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("secret", &self.secret).field("expires_at", &self.expires_at).finish_non_exhaustive()
    }
}

/// Reads the relay's management Secret out of the fetched resources.
pub fn read(relay: &Relay, resources: &Resources) -> Result<Credentials, RenderError> {
    let secret = relay.source.key.to_string();
    let error = |message: String| RenderError::Credentials { object: secret.clone(), message };
    let value = resources.0.get(&relay.source.key).ok_or_else(|| {
        error(format!("not found; create it, or remove the annotation {STORE_CREDENTIALS_ANNOTATION} from the SveltosCluster"))
    })?;
    let object: Secret = typed(value).map_err(error)?;
    let expires = object.metadata.annotations.as_ref().and_then(|a| a.get(EXPIRES_AT_ANNOTATION));
    let expires = expires.ok_or_else(|| error(format!("no annotation {EXPIRES_AT_ANNOTATION} (when the credentials expire, RFC 3339)")))?;
    let expires_at: Timestamp = expires
        .trim()
        .parse()
        .map_err(|e| error(format!("annotation {EXPIRES_AT_ANNOTATION} {expires:?} is not an RFC 3339 time: {e}")))?;
    // Relayed in UTC with whole seconds (spec 2.6), whatever offset or fraction was written.
    let expires_at = Timestamp::from_second(expires_at.as_second()).expect("seconds of a valid time");
    // As the API server does when it stores a Secret: stringData wins over data.
    let from_string = object.string_data.as_ref().and_then(|d| d.get(DOCKER_CONFIG_KEY)).map(|s| s.clone().into_bytes());
    let docker_config = from_string
        .or_else(|| object.data.as_ref().and_then(|d| d.get(DOCKER_CONFIG_KEY)).map(|b| b.0.clone()))
        .ok_or_else(|| error(format!("no data key {DOCKER_CONFIG_KEY} (a {DOCKER_CONFIG_TYPE} Secret)")))?;
    check_docker_config(&docker_config).map_err(|m| error(format!("{DOCKER_CONFIG_KEY}: {m}")))?;
    Ok(Credentials { secret, docker_config, expires_at })
}

impl Credentials {
    /// The Secret the bundle carries, as an object of the system part.
    pub fn object(&self, relay: &Relay) -> Arc<Object> {
        let expires = self.expires_at.to_string();
        let value = json!({
            "apiVersion": "v1",
            "kind": "Secret",
            "metadata": {
                "name": CREDENTIALS_SECRET,
                "namespace": relay.puller_namespace,
                "annotations": {EXPIRES_AT_ANNOTATION: expires},
            },
            "type": DOCKER_CONFIG_TYPE,
            "data": {
                DOCKER_CONFIG_KEY: STANDARD.encode(&self.docker_config),
                EXPIRES_AT_KEY: STANDARD.encode(&expires),
            },
        });
        Arc::new(Object {
            key: ObjectKey::new("v1", "Secret", &relay.puller_namespace, CREDENTIALS_SECRET),
            origin: format!("store credentials from {}", self.secret),
            yaml: yaml::emit(&[value]).into(),
        })
    }

    /// A warning when the credentials expire within `renew_before` of `now`, an error when
    /// they have expired: the puller can no longer read the store with them, so relaying
    /// them again would only hide that.
    pub fn expiry(&self, now: Timestamp, renew_before: SignedDuration) -> Result<Option<String>, RenderError> {
        let left = self.expires_at.duration_since(now);
        if left <= SignedDuration::ZERO {
            return Err(RenderError::Credentials {
                object: self.secret.clone(),
                message: format!("the store credentials expired at {}; renew them", self.expires_at),
            });
        }
        Ok((left < renew_before).then(|| {
            format!(
                "{}: the store credentials expire at {} (in {}), within --renew-before {}; renew them",
                self.secret,
                self.expires_at,
                hours(left),
                hours(renew_before)
            )
        }))
    }
}

/// A duration in whole hours, the unit credential lifetimes are talked about in.
fn hours(d: SignedDuration) -> String {
    format!("{}h", d.as_secs() / 3_600)
}

/// The settings of the system part: applied with force, since the registration's
/// `kubectl apply` owns the fields the relay updates; left in place, never pruned, when
/// the relay stops, since the puller still reads its store with them.
pub fn part_settings() -> PartSettings {
    PartSettings {
        sync_mode: SyncMode::Continuous,
        tier: SYSTEM_TIER,
        depends_on: Vec::new(),
        stop_matching_behavior: StopMatchingBehavior::LeavePolicies,
        force_conflicts: true,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sveltos::model::parse_cluster;

    fn cluster(annotations: Value) -> SveltosCluster {
        parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "annotations": annotations}, "spec": {"pullMode": true}}))
        .unwrap()
    }

    fn credentials(expires_at: &str) -> Credentials {
        Credentials { secret: "Secret fleet/c".into(), docker_config: b"{\"auths\":{}}".to_vec(), expires_at: expires_at.parse().unwrap() }
    }

    #[test]
    fn relay_follows_the_annotations_and_defaults_the_puller_namespace() {
        assert_eq!(relay_of(&cluster(json!({}))).unwrap(), None);
        let relay = relay_of(&cluster(json!({STORE_CREDENTIALS_ANNOTATION: "edge-1-creds"}))).unwrap().unwrap();
        assert_eq!(relay.source.key, ObjectKey::new("v1", "Secret", "fleet", "edge-1-creds"));
        assert_eq!(relay.puller_namespace, "airlock-system");
        let relay = relay_of(&cluster(json!({STORE_CREDENTIALS_ANNOTATION: "c", PULLER_NAMESPACE_ANNOTATION: "ops"}))).unwrap().unwrap();
        assert_eq!(relay.puller_namespace, "ops");
    }

    #[test]
    fn rejects_bad_annotations_naming_the_cluster_and_annotation() {
        for (annotations, want) in [
            (json!({STORE_CREDENTIALS_ANNOTATION: "Not/A/Name"}), "annotation airlock.dev/store-credentials \"Not/A/Name\" is not a Secret name"),
            (json!({STORE_CREDENTIALS_ANNOTATION: "c", PULLER_NAMESPACE_ANNOTATION: "a.b"}), "annotation airlock.dev/puller-namespace \"a.b\" is not a namespace name"),
        ] {
            let err = relay_of(&cluster(annotations)).unwrap_err();
            assert!(matches!(&err, RenderError::Credentials { object, message } if object == "SveltosCluster fleet/edge-1" && message == want), "{err}");
        }
    }

    #[test]
    fn reads_string_data_over_data_and_rejects_what_is_no_docker_config() {
        let relay = relay_of(&cluster(json!({STORE_CREDENTIALS_ANNOTATION: "c"}))).unwrap().unwrap();
        let with = |secret: Value| Resources([(relay.source.key.clone(), secret)].into());
        let secret = |extra: Value| {
            let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c", "namespace": "fleet",
                "annotations": {EXPIRES_AT_ANNOTATION: "2031-01-01T00:00:00Z"}}});
            s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            s
        };
        let read_ok = read(&relay, &with(secret(json!({"stringData": {DOCKER_CONFIG_KEY: "{\"auths\":{\"a\":{}}}"},
            "data": {DOCKER_CONFIG_KEY: STANDARD.encode("{\"auths\":{}}")}})))).unwrap();
        assert_eq!(read_ok.docker_config, b"{\"auths\":{\"a\":{}}}");
        assert!(!format!("{read_ok:?}").contains("auths"), "Debug never shows the credentials");
        for (extra, want) in [
            (json!({}), "no data key .dockerconfigjson"),
            (json!({"data": {DOCKER_CONFIG_KEY: STANDARD.encode("[]")}}), ".dockerconfigjson: not a Docker config.json"),
            (json!({"data": {DOCKER_CONFIG_KEY: STANDARD.encode("{")}}), ".dockerconfigjson: not JSON"),
        ] {
            let err = read(&relay, &with(secret(extra))).unwrap_err();
            assert!(matches!(&err, RenderError::Credentials { object, message } if object == "Secret fleet/c" && message.starts_with(want)), "{err}");
        }
    }

    #[test]
    fn warns_within_the_renewal_window_and_fails_once_expired() {
        let now: Timestamp = "2031-01-01T00:00:00Z".parse().unwrap();
        let week = SignedDuration::from_hours(7 * 24);
        assert_eq!(credentials("2031-01-09T00:00:00Z").expiry(now, week), Ok(None));
        let warning = credentials("2031-01-04T00:00:00Z").expiry(now, week).unwrap().expect("a warning");
        assert_eq!(
            warning,
            "Secret fleet/c: the store credentials expire at 2031-01-04T00:00:00Z (in 72h), within --renew-before 168h; renew them"
        );
        for expired in ["2031-01-01T00:00:00Z", "2030-12-01T00:00:00Z"] {
            let err = credentials(expired).expiry(now, week).unwrap_err();
            assert!(matches!(&err, RenderError::Credentials { message, .. } if message.contains("expired at")), "{err}");
        }
    }
}
