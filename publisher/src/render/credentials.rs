//! Store credential renewal, the publisher's half (spec 2.6). A SveltosCluster registered
//! with `register cluster --token` names, in the annotation `airlock.dev/store-credentials`,
//! a Secret of its own namespace that something outside Airlock (a Vault or ECR rotator, an
//! operator) keeps renewed. The publisher relays that Secret into the cluster's bundle, in
//! the part `Airlock.system`, as the Secret `airlock-store-credentials` of the puller's
//! namespace, and says when the credentials it relays are about to expire. The logins are
//! a registry's (a Docker config.json) or a Git server's (git-credential-store lines): a
//! [`Login`] carries either, and registration builds its Secrets from the same type.
//!
//! Entry points: [`relay_of`] reads the annotations, [`read`] checks the fetched Secret,
//! [`Credentials::object`] builds what the bundle carries and [`Credentials::expiry`] judges
//! the expiry against a clock it is given. This module fetches and renews nothing.

use std::sync::Arc;

use airlock_bundle::cluster::{is_dns_label, is_dns_subdomain};
use airlock_bundle::vocabulary::{EXPIRES_AT_ANNOTATION, PULLER_NAMESPACE_ANNOTATION, STORE_CREDENTIALS_ANNOTATION};
use airlock_bundle::{PartSettings, StopMatchingBehavior, SyncMode};
use airlock_store::GitCredentials;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use jiff::{SignedDuration, Timestamp};
use k8s_openapi::api::core::v1::Secret;
use serde_json::{Value, json};

use super::error::RenderError;
use super::object::Object;
use crate::sources::model::SveltosCluster;
use crate::sources::{Lookup, ObjectKey, Reference, Resources, typed};
use crate::yaml;

/// The puller's credentials Secret on the managed cluster (registration and relay).
pub const CREDENTIALS_SECRET: &str = "airlock-store-credentials";
/// Data key of a `kubernetes.io/dockerconfigjson` Secret.
pub const DOCKER_CONFIG_KEY: &str = ".dockerconfigjson";
pub const DOCKER_CONFIG_TYPE: &str = "kubernetes.io/dockerconfigjson";
/// Data key of the Secrets with Git logins, in git-credential-store format.
pub const GIT_CREDENTIALS_KEY: &str = "git-credentials";
/// Kubernetes has no Secret type for Git logins over HTTP.
pub const GIT_CREDENTIALS_TYPE: &str = "Opaque";
/// Data key of the managed-side Secret with the expiry, mounted beside `config.json` so the
/// puller can read it (a pod sees a Secret's data, never its annotations).
pub const EXPIRES_AT_KEY: &str = "expires-at";
/// Where registration puts the puller unless told otherwise.
pub const DEFAULT_PULLER_NAMESPACE: &str = "airlock-system";
/// The part Airlock's own objects travel in (spec 2.3).
pub use airlock_bundle::path::SYSTEM_PART;
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

/// Store logins in one of the two forms a credentials Secret carries (spec 2.6).
#[derive(Clone, PartialEq, Eq)]
pub enum Login {
    /// A Docker config.json with an `auths` object: registry logins.
    Docker(Vec<u8>),
    /// git-credential-store lines (`http://user:password@host`): Git server logins.
    Git(Vec<u8>),
}

impl Login {
    /// The Secret data key holding the login.
    pub fn key(&self) -> &'static str {
        match self {
            Login::Docker(_) => DOCKER_CONFIG_KEY,
            Login::Git(_) => GIT_CREDENTIALS_KEY,
        }
    }

    pub fn secret_type(&self) -> &'static str {
        match self {
            Login::Docker(_) => DOCKER_CONFIG_TYPE,
            Login::Git(_) => GIT_CREDENTIALS_TYPE,
        }
    }

    pub fn bytes(&self) -> &[u8] {
        match self {
            Login::Docker(bytes) | Login::Git(bytes) => bytes,
        }
    }

    /// Checks the bytes against their form; the message never quotes them.
    pub fn check(&self) -> Result<(), String> {
        match self {
            Login::Docker(bytes) => {
                let parsed: Value = serde_json::from_slice(bytes).map_err(|e| format!("not JSON: {e}"))?;
                match parsed.get("auths") {
                    Some(auths) if auths.is_object() => Ok(()),
                    _ => Err("not a Docker config.json: no \"auths\" object".into()),
                }
            }
            Login::Git(bytes) => GitCredentials::check_store_text(bytes).map_err(|e| format!("not git-credential-store text: {e}")),
        }
    }
}

impl std::fmt::Debug for Login {
    // By hand, so the credentials never reach a log or a test failure message.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Login({})", self.key())
    }
}

/// A management Secret's credentials, checked.
#[derive(Clone, PartialEq, Eq)]
pub struct Credentials {
    /// `Secret <namespace>/<name>`, for messages.
    secret: String,
    login: Login,
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
    let value = match resources.lookup(&relay.source.key) {
        Lookup::Found(value) => value,
        Lookup::Failed(why) => return Err(error(why.to_string())),
        Lookup::Missing => {
            return Err(error(format!(
                "not found; create it, or remove the annotation {STORE_CREDENTIALS_ANNOTATION} from the SveltosCluster"
            )));
        }
    };
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
    let value = |key: &str| {
        let from_string = object.string_data.as_ref().and_then(|d| d.get(key)).map(|s| s.clone().into_bytes());
        from_string.or_else(|| object.data.as_ref().and_then(|d| d.get(key)).map(|b| b.0.clone()))
    };
    let login = match (value(DOCKER_CONFIG_KEY), value(GIT_CREDENTIALS_KEY)) {
        (Some(docker), None) => Login::Docker(docker),
        (None, Some(git)) => Login::Git(git),
        (Some(_), Some(_)) => {
            return Err(error(format!("both data keys {DOCKER_CONFIG_KEY} and {GIT_CREDENTIALS_KEY}; keep the one of the store")));
        }
        (None, None) => {
            return Err(error(format!(
                "no data key {DOCKER_CONFIG_KEY} (registry logins) or {GIT_CREDENTIALS_KEY} (Git logins, git-credential-store format)"
            )));
        }
    };
    login.check().map_err(|m| error(format!("{}: {m}", login.key())))?;
    Ok(Credentials { secret, login, expires_at })
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
            "type": self.login.secret_type(),
            "data": {
                self.login.key(): STANDARD.encode(self.login.bytes()),
                EXPIRES_AT_KEY: STANDARD.encode(&expires),
            },
        });
        Arc::new(Object {
            key: ObjectKey::new("v1", "Secret", &relay.puller_namespace, CREDENTIALS_SECRET),
            origin: format!("store credentials from {}", self.secret),
            yaml: yaml::emit(&[value]).into(),
            implicit: false,
            confidential: true,
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
        ..PartSettings::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::parse::parse_cluster;

    fn cluster(annotations: Value) -> SveltosCluster {
        parse_cluster(&json!({"apiVersion": "lib.projectsveltos.io/v1beta1", "kind": "SveltosCluster",
            "metadata": {"name": "edge-1", "namespace": "fleet", "annotations": annotations}, "spec": {"pullMode": true}}))
        .unwrap()
    }

    fn credentials(expires_at: &str) -> Credentials {
        Credentials {
            secret: "Secret fleet/c".into(),
            login: Login::Docker(b"{\"auths\":{}}".to_vec()),
            expires_at: expires_at.parse().unwrap(),
        }
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
            (
                json!({STORE_CREDENTIALS_ANNOTATION: "Not/A/Name"}),
                "annotation airlock.dev/store-credentials \"Not/A/Name\" is not a Secret name",
            ),
            (
                json!({STORE_CREDENTIALS_ANNOTATION: "c", PULLER_NAMESPACE_ANNOTATION: "a.b"}),
                "annotation airlock.dev/puller-namespace \"a.b\" is not a namespace name",
            ),
        ] {
            let err = relay_of(&cluster(annotations)).unwrap_err();
            assert!(
                matches!(&err, RenderError::Credentials { object, message } if object == "SveltosCluster fleet/edge-1" && message == want),
                "{err}"
            );
        }
    }

    #[test]
    fn reads_string_data_over_data_and_rejects_what_is_no_docker_config() {
        let relay = relay_of(&cluster(json!({STORE_CREDENTIALS_ANNOTATION: "c"}))).unwrap().unwrap();
        let with = |secret: Value| Resources::found([(relay.source.key.clone(), secret)].into());
        let secret = |extra: Value| {
            let mut s = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "c", "namespace": "fleet",
                "annotations": {EXPIRES_AT_ANNOTATION: "2031-01-01T00:00:00Z"}}});
            s.as_object_mut().unwrap().extend(extra.as_object().unwrap().clone());
            s
        };
        let read_ok = read(
            &relay,
            &with(secret(json!({"stringData": {DOCKER_CONFIG_KEY: "{\"auths\":{\"a\":{}}}"},
            "data": {DOCKER_CONFIG_KEY: STANDARD.encode("{\"auths\":{}}")}}))),
        )
        .unwrap();
        assert_eq!(read_ok.login, Login::Docker(b"{\"auths\":{\"a\":{}}}".to_vec()));
        assert!(!format!("{read_ok:?}").contains("auths"), "Debug never shows the credentials");
        for (extra, want) in [
            (json!({}), "no data key .dockerconfigjson (registry logins) or git-credentials"),
            (
                json!({"data": {DOCKER_CONFIG_KEY: STANDARD.encode("{\"auths\":{}}"), GIT_CREDENTIALS_KEY: STANDARD.encode("http://u:p@h")}}),
                "both data keys",
            ),
            (
                json!({"data": {GIT_CREDENTIALS_KEY: STANDARD.encode("u:p@h")}}),
                "git-credentials: not git-credential-store text: line 1: not a URL",
            ),
            (json!({"data": {DOCKER_CONFIG_KEY: STANDARD.encode("[]")}}), ".dockerconfigjson: not a Docker config.json"),
            (json!({"data": {DOCKER_CONFIG_KEY: STANDARD.encode("{")}}), ".dockerconfigjson: not JSON"),
        ] {
            let err = read(&relay, &with(secret(extra))).unwrap_err();
            assert!(
                matches!(&err, RenderError::Credentials { object, message } if object == "Secret fleet/c" && message.starts_with(want)),
                "{err}"
            );
        }
    }

    #[test]
    fn relays_git_logins_as_an_opaque_secret_with_their_key() {
        let relay = relay_of(&cluster(json!({STORE_CREDENTIALS_ANNOTATION: "c", PULLER_NAMESPACE_ANNOTATION: "ops"}))).unwrap().unwrap();
        let line = "http://edge-1:s3cret@git.example:8418\n";
        let secret = json!({"apiVersion": "v1", "kind": "Secret", "type": "Opaque", "metadata": {"name": "c", "namespace": "fleet",
            "annotations": {EXPIRES_AT_ANNOTATION: "2031-01-01T00:00:00+01:00"}}, "data": {GIT_CREDENTIALS_KEY: STANDARD.encode(line)}});
        let credentials = read(&relay, &Resources::found([(relay.source.key.clone(), secret)].into())).unwrap();
        assert!(!format!("{credentials:?}").contains("s3cret"), "Debug never shows the credentials");
        let object = credentials.object(&relay);
        let relayed: Value = serde_saphyr::from_str(&object.yaml).unwrap();
        assert_eq!((relayed["type"].as_str(), relayed["metadata"]["namespace"].as_str()), (Some("Opaque"), Some("ops")));
        assert_eq!(STANDARD.decode(relayed["data"][GIT_CREDENTIALS_KEY].as_str().unwrap()).unwrap(), line.as_bytes());
        assert_eq!(STANDARD.decode(relayed["data"][EXPIRES_AT_KEY].as_str().unwrap()).unwrap(), b"2030-12-31T23:00:00Z");
        assert_eq!(relayed["data"].as_object().unwrap().len(), 2, "{relayed}");
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
