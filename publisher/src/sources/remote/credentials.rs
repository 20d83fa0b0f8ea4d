//! The credentials a `remoteURL`'s `secretRef` Secret holds, read from what the source
//! fetched: `token` (a bearer token), `username` and `password` (basic auth, for HTTP and
//! for a registry's token service), `caFile` (a PEM CA to verify the server with). Entry
//! point: [`Credentials::read`]; [`Credentials::authorize`] puts them on a request.

use k8s_openapi::api::core::v1::Secret;
use serde_json::Value;

use super::error::RemoteError;
use crate::sources::typed;

/// What a request is authenticated and verified with.
#[derive(Default, Clone, PartialEq, Eq)]
pub struct Credentials {
    pub token: Option<String>,
    pub basic: Option<(String, String)>,
    pub ca: Option<Vec<u8>>,
}

// Never print what a Secret holds.
impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials").field("token", &self.token.is_some()).field("basic", &self.basic.is_some()).finish()
    }
}

impl Credentials {
    /// The credentials of the Secret `value`; `error` names the URL and the Secret.
    pub fn read(value: &Value, error: &dyn Fn(String) -> RemoteError) -> Result<Credentials, RemoteError> {
        let secret = typed::<Secret>(value).map_err(error)?;
        let mut keys: std::collections::BTreeMap<String, Vec<u8>> =
            secret.data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.0)).collect();
        keys.extend(secret.string_data.unwrap_or_default().into_iter().map(|(k, v)| (k, v.into_bytes())));
        let text = |key: &str| -> Result<Option<String>, RemoteError> {
            keys.get(key).map(|b| String::from_utf8(b.clone()).map_err(|_| error(format!("key {key} is not UTF-8 text")))).transpose()
        };
        let basic = match (text("username")?, text("password")?) {
            (Some(user), Some(password)) => Some((user, password)),
            (None, None) => None,
            _ => return Err(error("has one of username and password without the other".into())),
        };
        Ok(Credentials { token: text("token")?.map(|t| t.trim().to_string()), basic, ca: keys.get("caFile").cloned() })
    }

    /// `request` with a bearer token when the Secret has one, else basic auth when it has
    /// a username and password.
    pub fn authorize(&self, request: reqwest::RequestBuilder) -> reqwest::RequestBuilder {
        match (&self.token, &self.basic) {
            (Some(token), _) => request.bearer_auth(token),
            (None, Some((user, password))) => request.basic_auth(user, Some(password)),
            (None, None) => request,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn read(data: Value) -> Result<Credentials, RemoteError> {
        let value = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s", "namespace": "n"}, "stringData": data});
        Credentials::read(&value, &|message| RemoteError::Credentials { url: "u".into(), secret: "n/s".into(), message })
    }

    fn header(c: &Credentials) -> Option<String> {
        crate::sources::remote::provider();
        let request = c.authorize(reqwest::Client::new().get("http://127.0.0.1/")).build().unwrap();
        request.headers().get("authorization").map(|v| v.to_str().unwrap().to_string())
    }

    #[test]
    fn a_token_is_a_bearer_and_wins_over_basic_auth() {
        let c = read(json!({"token": "abc\n", "username": "u", "password": "p"})).unwrap();
        assert_eq!(header(&c).as_deref(), Some("Bearer abc"));
        let c = read(json!({"username": "u", "password": "p", "caFile": "PEM"})).unwrap();
        assert_eq!(header(&c).as_deref(), Some("Basic dTpw"));
        assert_eq!(c.ca.as_deref(), Some(&b"PEM"[..]));
        assert_eq!(header(&read(json!({})).unwrap()), None);
    }

    #[test]
    fn data_is_read_like_string_data() {
        let value = json!({"apiVersion": "v1", "kind": "Secret", "metadata": {"name": "s"}, "data": {"token": "YWJj"}});
        let c = Credentials::read(&value, &|m| RemoteError::Credentials { url: "u".into(), secret: "s".into(), message: m }).unwrap();
        assert_eq!(c.token.as_deref(), Some("abc"));
    }

    #[test]
    fn rejects_a_username_without_a_password() {
        assert_eq!(
            read(json!({"username": "u"})),
            Err(RemoteError::Credentials {
                url: "u".into(),
                secret: "n/s".into(),
                message: "has one of username and password without the other".into()
            })
        );
    }

    #[test]
    fn never_prints_what_it_holds() {
        let c = read(json!({"token": "secret-token", "username": "u", "password": "secret-password"})).unwrap();
        assert!(!format!("{c:?}").contains("secret"), "{c:?}");
    }
}
