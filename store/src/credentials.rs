//! Registry credentials: explicit username and password or token, else Docker's
//! `config.json` (`auths.<host>.auth` only; credential helpers are not run).

use std::collections::HashMap;
use std::fmt;
use std::path::PathBuf;

use base64::Engine;
use oci_client::secrets::RegistryAuth;

/// How to log in to a registry, in this order: `username` with `password` (basic auth,
/// or exchanged for a token when the registry asks), `token` (sent as a bearer token), the
/// Docker `config.json` entry for the host, else anonymous.
#[derive(Clone, Default)]
pub struct RegistryCredentials {
    pub username: Option<String>,
    pub password: Option<String>,
    pub token: Option<String>,
    /// The `config.json` to read instead of `$DOCKER_CONFIG/config.json`, else
    /// `~/.docker/config.json`. Unlike those, it must exist.
    pub docker_config: Option<PathBuf>,
}

impl fmt::Debug for RegistryCredentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let secret = |s: &Option<String>| s.as_ref().map(|_| "<redacted>");
        f.debug_struct("RegistryCredentials")
            .field("username", &self.username)
            .field("password", &secret(&self.password))
            .field("token", &secret(&self.token))
            .field("docker_config", &self.docker_config)
            .finish()
    }
}

impl RegistryCredentials {
    pub(crate) fn resolve(&self, host: &str) -> Result<RegistryAuth, String> {
        match (&self.username, &self.password, &self.token) {
            (Some(user), Some(password), _) => return Ok(RegistryAuth::Basic(user.clone(), password.clone())),
            (Some(_), None, _) | (None, Some(_), _) => {
                return Err("a registry username needs a password and vice versa".into());
            }
            (None, None, Some(token)) => return Ok(RegistryAuth::Bearer(token.clone())),
            (None, None, None) => {}
        }
        let default = std::env::var_os("DOCKER_CONFIG")
            .map(PathBuf::from)
            .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".docker")))
            .map(|dir| dir.join("config.json"));
        let Some(path) = self.docker_config.clone().or(default) else {
            return Ok(RegistryAuth::Anonymous);
        };
        match std::fs::read(&path) {
            Ok(json) => docker_auth(&json, host).map_err(|m| format!("{}: {m}", path.display())),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound && self.docker_config.is_none() => Ok(RegistryAuth::Anonymous),
            Err(e) => Err(format!("cannot read {}: {e}", path.display())),
        }
    }
}

/// The basic credentials `config.json` holds for `host`.
fn docker_auth(json: &[u8], host: &str) -> Result<RegistryAuth, String> {
    #[derive(serde::Deserialize)]
    struct Config {
        #[serde(default)]
        auths: HashMap<String, Entry>,
    }
    #[derive(serde::Deserialize)]
    struct Entry {
        auth: Option<String>,
    }
    let config: Config = serde_json::from_slice(json).map_err(|e| format!("not a Docker config.json: {e}"))?;
    // `docker login` writes some keys as URLs (`https://host/v1/`).
    let key_host = |k: &str| k.split_once("://").map_or(k, |(_, rest)| rest).split('/').next().unwrap_or_default().to_string();
    let entry = config.auths.get(host).or_else(|| config.auths.iter().find(|(k, _)| key_host(k) == host).map(|(_, e)| e));
    let Some(auth) = entry.and_then(|e| e.auth.as_deref()) else {
        return Ok(RegistryAuth::Anonymous);
    };
    let decoded = base64::engine::general_purpose::STANDARD.decode(auth).ok().and_then(|b| String::from_utf8(b).ok());
    match decoded.as_deref().and_then(|s| s.split_once(':')) {
        Some((user, password)) => Ok(RegistryAuth::Basic(user.to_string(), password.to_string())),
        None => Err(format!("auths.{host}.auth is not base64 of user:password")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn docker_config_entries() {
        let auth = |key: &str, value: &str| format!(r#"{{"auths":{{"{key}":{{"auth":"{value}"}}}}}}"#).into_bytes();
        let basic = RegistryAuth::Basic("u".into(), "p:w".into());
        // base64("u:p:w"): the password may hold a colon.
        assert_eq!(docker_auth(&auth("reg.example:5000", "dTpwOnc="), "reg.example:5000"), Ok(basic.clone()));
        assert_eq!(docker_auth(&auth("https://reg.example:5000/v1/", "dTpwOnc="), "reg.example:5000"), Ok(basic));
        assert_eq!(docker_auth(&auth("other.example", "dTpwOnc="), "reg.example"), Ok(RegistryAuth::Anonymous));
        assert_eq!(docker_auth(b"{}", "reg.example"), Ok(RegistryAuth::Anonymous));
        let bad = docker_auth(&auth("reg.example", "bm9jb2xvbg=="), "reg.example").unwrap_err();
        assert!(bad.contains("not base64 of user:password") && !bad.contains("nocolon"), "{bad}");
    }
}
