//! Where a chart comes from, as a Sveltos `helmCharts` entry names it: a classic HTTP
//! repository (`repositoryURL` serving `index.yaml`, `chartName: <repositoryName>/<chart>`)
//! or an OCI registry (`repositoryURL: oci://host/path`, bare `chartName`), a version or a
//! range, and how to reach the repository (`registryCredentialsConfig`).
//!
//! Entry point: [`ChartRef::new`]. It checks names and classifies the version; it reads no
//! Secret (the caller passes the credentials' data) and contacts nothing.

use std::collections::BTreeMap;

use airlock_bundle::Digest;
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::{Value, json};

use super::error::{ChartLabel, HelmError};
use crate::source_mirrors::Mirrors;

/// The kind of repository a `repositoryURL` names.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Repository {
    /// `http://` or `https://`: `index.yaml` and archives.
    Http { url: String },
    /// `oci://host[:port]/path`: the chart is `<url>/<chart>`, tagged with its version.
    Oci { url: String },
}

impl Repository {
    pub fn url(&self) -> &str {
        match self {
            Repository::Http { url } | Repository::Oci { url } => url,
        }
    }
}

/// The version a profile asks for.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum VersionSpec {
    /// A full version (`4.0.13`, `v1.7.3`, `1.0.0-rc.1`): fetched once and kept.
    Exact(String),
    /// A semver range (`^4.0`, `>=1.2 <2`, `4.0.x`), or "" for the newest stable version:
    /// helm resolves it against the repository, once per publish.
    Range(String),
}

impl VersionSpec {
    /// Classifies `chartVersion`: a version with all three numbers is exact, anything else
    /// (a partial version such as `1.2` included, which helm reads as `~1.2`) a range.
    pub fn parse(text: &str) -> VersionSpec {
        let text = text.trim();
        let core = text.strip_prefix('v').unwrap_or(text);
        let core = core.split_once('+').map_or(core, |(c, _)| c);
        let (core, pre) = core.split_once('-').map_or((core, None), |(c, p)| (c, Some(p)));
        let numbers: Vec<&str> = core.split('.').collect();
        let numeric = |s: &&str| !s.is_empty() && s.bytes().all(|b| b.is_ascii_digit());
        let pre_ok = pre.is_none_or(|p| !p.is_empty() && p.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'.' || b == b'-'));
        if numbers.len() == 3 && numbers.iter().all(numeric) && pre_ok {
            VersionSpec::Exact(text.to_string())
        } else {
            VersionSpec::Range(text.to_string())
        }
    }

    pub fn text(&self) -> &str {
        match self {
            VersionSpec::Exact(t) | VersionSpec::Range(t) => t,
        }
    }
}

/// How to reach a repository: Sveltos's `registryCredentialsConfig`, with the referenced
/// Secrets' data already read by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Access {
    /// `plainHTTP`: OCI over HTTP.
    pub plain_http: bool,
    pub insecure_skip_tls_verify: bool,
    /// `ca`: the PEM bundle of the Secret's `ca.crt`.
    pub ca_pem: Option<Vec<u8>>,
    pub credentials: Option<Credentials>,
    /// `options.passCredentialsAll`: send an HTTP repository's login to every host its
    /// index points archives at, not only its own.
    pub pass_credentials_all: bool,
}

impl Access {
    /// Who may reuse an archive fetched with this access: everyone for an anonymous fetch,
    /// else only requests with the same login, so a profile without credentials never
    /// renders a private chart another profile's login fetched.
    pub(super) fn cache_scope(&self) -> String {
        match &self.credentials {
            None => String::new(),
            Some(Credentials::DockerConfig(bytes)) => Digest::of(bytes).hex(),
            Some(Credentials::Basic { username, password }) => Digest::of(format!("{username}\0{password}").as_bytes()).hex(),
        }
    }
}

/// A registry or repository login.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum Credentials {
    /// A Docker `config.json` (`{"auths": {host: {username, password | auth}}}`): handed to
    /// helm as its registry configuration for OCI, searched for the host's login for HTTP.
    DockerConfig(Vec<u8>),
    Basic {
        username: String,
        password: String,
    },
}

impl Credentials {
    /// Sveltos's credentials Secret: `key` names the data key, default the only one. The
    /// value is a Docker config JSON.
    pub fn from_secret_data(data: &BTreeMap<String, Vec<u8>>, key: Option<&str>) -> Result<Credentials, String> {
        let bytes = match key {
            Some(key) => data.get(key).ok_or_else(|| format!("the credentials Secret has no key {key:?}"))?,
            None if data.len() == 1 => data.values().next().expect("one value"),
            None => return Err(format!("the credentials Secret has {} keys; registryCredentialsConfig.key must name one", data.len())),
        };
        let parsed: Value = serde_json::from_slice(bytes).map_err(|e| format!("the credentials are not a Docker config JSON: {e}"))?;
        if !parsed.get("auths").is_some_and(Value::is_object) {
            return Err("the credentials are a JSON without an \"auths\" object".into());
        }
        Ok(Credentials::DockerConfig(bytes.clone()))
    }

    /// A Docker config JSON with this login for `host`, for helm's registry client.
    pub(super) fn docker_config(&self, host: &str) -> Vec<u8> {
        match self {
            Credentials::DockerConfig(bytes) => bytes.clone(),
            Credentials::Basic { username, password } => {
                let auth = STANDARD.encode(format!("{username}:{password}"));
                serde_json::to_vec(&json!({"auths": {host: {"auth": auth}}})).expect("JSON serialises")
            }
        }
    }

    /// These credentials for a repository at `host` fetched from `mirror`: a Docker config
    /// without a login of its own for the mirror offers it the repository's, so a profile
    /// renders unchanged with a mirror in front of its repository.
    fn for_mirror(&self, host: &str, mirror: &str) -> Credentials {
        let Credentials::DockerConfig(bytes) = self else { return self.clone() };
        let Ok(mut parsed) = serde_json::from_slice::<Value>(bytes) else { return self.clone() };
        let Some(auths) = parsed.get_mut("auths").and_then(Value::as_object_mut) else { return self.clone() };
        if auths.keys().any(|k| host_of(k) == mirror) {
            return self.clone();
        }
        let Some(login) = auths.iter().find(|(k, _)| host_of(k) == host).map(|(_, v)| v.clone()) else { return self.clone() };
        auths.insert(mirror.to_string(), login);
        Credentials::DockerConfig(serde_json::to_vec(&parsed).expect("JSON serialises"))
    }

    /// The username and password for `host`, as Sveltos reads them for HTTP repositories.
    pub(super) fn login_for(&self, host: &str) -> Option<(String, String)> {
        match self {
            Credentials::Basic { username, password } => Some((username.clone(), password.clone())),
            Credentials::DockerConfig(bytes) => {
                let parsed: Value = serde_json::from_slice(bytes).ok()?;
                let auths = parsed.get("auths")?.as_object()?;
                let entry = auths.get(host).or_else(|| auths.iter().find(|(k, _)| host_of(k) == host).map(|(_, v)| v))?;
                if let (Some(u), Some(p)) = (entry["username"].as_str(), entry["password"].as_str()) {
                    return Some((u.to_string(), p.to_string()));
                }
                let decoded = STANDARD.decode(entry["auth"].as_str()?).ok()?;
                let (u, p) = std::str::from_utf8(&decoded).ok()?.split_once(':')?;
                Some((u.to_string(), p.to_string()))
            }
        }
    }
}

/// `https://user@host:port/path` → `host:port`.
pub(super) fn host_of(url: &str) -> &str {
    let rest = url.split_once("://").map_or(url, |(_, r)| r);
    let authority = rest.split(['/', '?', '#']).next().unwrap_or(rest);
    authority.rsplit_once('@').map_or(authority, |(_, host)| host)
}

/// One chart of one repository at one version or range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChartRef {
    pub repository: Repository,
    /// The chart's own name, without the `repositoryName/` prefix.
    pub chart: String,
    pub version: VersionSpec,
    pub access: Access,
    /// Names it in errors.
    pub label: ChartLabel,
}

impl ChartRef {
    /// Checks a `helmCharts` entry's source fields. `profile` names the profile in errors.
    pub fn new(
        profile: &str,
        repository_url: &str,
        repository_name: &str,
        chart_name: &str,
        chart_version: &str,
        access: Access,
    ) -> Result<ChartRef, HelmError> {
        let label = ChartLabel::new(profile, &crate::redact::redact(repository_url.trim()), chart_name, chart_version.trim());
        let entry = |field: &str, message: String| HelmError::Entry { chart: label.clone(), field: field.into(), message };
        let url = repository_url.trim().trim_end_matches('/');
        let (scheme, rest) = url.split_once("://").ok_or_else(|| entry("repositoryURL", "has no scheme".into()))?;
        if rest.is_empty() || url.contains(char::is_whitespace) {
            return Err(entry("repositoryURL", "names no host".into()));
        }
        let repository = match scheme {
            "http" | "https" => Repository::Http { url: url.into() },
            "oci" => Repository::Oci { url: url.into() },
            "gitrepository" | "ocirepository" | "bucket" => {
                return Err(HelmError::Unsupported {
                    chart: label,
                    field: "repositoryURL".into(),
                    reason: format!("charts from Flux {scheme} sources are not rendered yet; use an HTTP or OCI repository"),
                });
            }
            other => return Err(entry("repositoryURL", format!("scheme {other:?} is not http, https or oci"))),
        };
        let chart = match &repository {
            Repository::Http { .. } => match chart_name.split_once('/') {
                Some((prefix, chart)) if prefix == repository_name => chart,
                Some(_) => return Err(entry("chartName", format!("must be {repository_name:?}/<chart> for an HTTP repository"))),
                None => chart_name,
            },
            Repository::Oci { .. } => chart_name.strip_prefix(&format!("{url}/")).unwrap_or(chart_name),
        };
        if chart.is_empty() || chart.contains(['/', ' ', '\\']) || chart.starts_with('.') || chart.starts_with('-') {
            return Err(entry("chartName", "is not a chart name".into()));
        }
        Ok(ChartRef { repository, chart: chart.into(), version: VersionSpec::parse(chart_version), access, label })
    }

    /// This chart as fetched through `mirrors`: the repository's URL rewritten, plain HTTP
    /// for an `oci+http://` mirror, and the credentials offered to the mirror's host. Its
    /// label still names the profile's URL.
    pub(super) fn through(&self, mirrors: &Mirrors) -> ChartRef {
        let target = mirrors.rewrite(self.repository.url());
        if target.url == self.repository.url() {
            return self.clone();
        }
        let repository = match &self.repository {
            Repository::Http { .. } => Repository::Http { url: target.url.into_owned() },
            Repository::Oci { .. } => Repository::Oci { url: target.url.into_owned() },
        };
        let mut access = self.access.clone();
        access.plain_http |= target.plain_http;
        access.credentials = access.credentials.map(|c| c.for_mirror(host_of(self.repository.url()), host_of(repository.url())));
        ChartRef { repository, access, ..self.clone() }
    }

    /// The reference `helm pull` takes for an OCI chart.
    pub(super) fn oci_reference(&self) -> Option<String> {
        match &self.repository {
            Repository::Oci { url } => Some(format!("{url}/{}", self.chart)),
            Repository::Http { .. } => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classifies_versions_as_helm_does() {
        for exact in ["4.0.13", "v1.7.3", "1.0.0-rc.1", "1.2.3+build.5"] {
            assert_eq!(VersionSpec::parse(exact), VersionSpec::Exact(exact.into()), "{exact}");
        }
        for range in ["", "1.2", "^4.0", ">=1.2 <2", "4.0.x", "~1.2.3", "1.2.3 || 2.0.0", "1.2.3-"] {
            assert_eq!(VersionSpec::parse(range), VersionSpec::Range(range.into()), "{range}");
        }
    }

    #[test]
    fn strips_the_repository_name_of_http_charts() {
        let c = ChartRef::new("p", "http://127.0.0.1:8879/", "airlock-test", "airlock-test/ingress-nginx", "4.0.13", Access::default())
            .expect("valid");
        assert_eq!((c.repository, c.chart.as_str()), (Repository::Http { url: "http://127.0.0.1:8879".into() }, "ingress-nginx"));
        let c = ChartRef::new("p", "oci://127.0.0.1:5000/charts", "x", "kube-state-metrics", "4.0.2", Access::default()).expect("valid");
        assert_eq!(c.oci_reference().as_deref(), Some("oci://127.0.0.1:5000/charts/kube-state-metrics"));
    }

    #[test]
    fn rejects_entries_helm_cannot_fetch() {
        let new = |url: &str, name: &str| ChartRef::new("p", url, "repo", name, "1.0.0", Access::default());
        assert!(matches!(new("http://r", "other/web"), Err(HelmError::Entry { field, .. }) if field == "chartName"));
        assert!(matches!(new("ftp://r", "repo/web"), Err(HelmError::Entry { field, .. }) if field == "repositoryURL"));
        assert!(matches!(new("r", "repo/web"), Err(HelmError::Entry { .. })));
        assert!(matches!(new("http://r", "repo/../x"), Err(HelmError::Entry { .. })));
        assert!(matches!(new("gitrepository://flux-system/charts/web", "web"), Err(HelmError::Unsupported { .. })));
    }

    #[test]
    fn a_mirror_fetches_with_the_profiles_credentials() {
        let mirrors = Mirrors::parse([
            ("--mirror number 1".to_string(), "oci://ghcr.io/org=oci://127.0.0.1:5000/ghcr/org"),
            ("--mirror number 2".to_string(), "https://charts.example=http://127.0.0.1:8879"),
        ])
        .expect("valid");
        let config = br#"{"auths":{"ghcr.io":{"auth":"YWlybG9jazpwdw=="}}}"#.to_vec();
        let access = Access { credentials: Some(Credentials::DockerConfig(config)), ..Access::default() };
        let oci = ChartRef::new("p", "oci://ghcr.io/org/charts", "x", "web", "1.0.0", access.clone()).expect("valid");
        let mirrored = oci.through(&mirrors);
        assert_eq!(mirrored.oci_reference().as_deref(), Some("oci://127.0.0.1:5000/ghcr/org/charts/web"));
        let login = mirrored.access.credentials.as_ref().expect("kept").login_for("127.0.0.1:5000");
        assert_eq!(login, Some(("airlock".into(), "pw".into())), "the repository's login is offered to the mirror");
        assert_eq!(mirrored.label, oci.label, "messages name the profile's URL");

        let own = br#"{"auths":{"ghcr.io":{"auth":"YWlybG9jazpwdw=="},"127.0.0.1:5000":{"username":"m","password":"mp"}}}"#.to_vec();
        let access = Access { credentials: Some(Credentials::DockerConfig(own)), ..Access::default() };
        let oci = ChartRef::new("p", "oci://ghcr.io/org/charts", "x", "web", "1.0.0", access).expect("valid");
        let login = oci.through(&mirrors).access.credentials.expect("kept").login_for("127.0.0.1:5000");
        assert_eq!(login, Some(("m".into(), "mp".into())), "a login of the mirror's own wins");

        let http = ChartRef::new("p", "https://charts.example/stable/", "s", "s/web", "1.0.0", Access::default()).expect("valid");
        assert_eq!(http.through(&mirrors).repository, Repository::Http { url: "http://127.0.0.1:8879/stable".into() });
        let elsewhere = ChartRef::new("p", "https://other.example", "s", "s/web", "1.0.0", Access::default()).expect("valid");
        assert_eq!(elsewhere.through(&mirrors), elsewhere);

        let plain = Mirrors::parse([("--mirror number 1".to_string(), "oci://quay.io=oci+http://127.0.0.1:5001")]).expect("valid");
        let oci = ChartRef::new("p", "oci://quay.io/charts", "x", "web", "1.0.0", Access::default()).expect("valid");
        let mirrored = oci.through(&plain);
        assert!(mirrored.access.plain_http && !oci.access.plain_http, "an oci+http mirror is spoken to over plain HTTP");
        assert_eq!(mirrored.oci_reference().as_deref(), Some("oci://127.0.0.1:5001/charts/web"));
    }

    #[test]
    fn reads_logins_from_docker_config() {
        let config =
            br#"{"auths":{"127.0.0.1:5001":{"auth":"YWlybG9jazpwdw=="},"https://charts.example":{"username":"u","password":"p"}}}"#;
        let data = BTreeMap::from([(".dockerconfigjson".to_string(), config.to_vec())]);
        let creds = Credentials::from_secret_data(&data, None).expect("a docker config");
        assert_eq!(creds.login_for("127.0.0.1:5001"), Some(("airlock".into(), "pw".into())));
        assert_eq!(creds.login_for("charts.example"), Some(("u".into(), "p".into())));
        assert_eq!(creds.login_for("other"), None);
        let two = BTreeMap::from([("a".to_string(), config.to_vec()), ("b".to_string(), config.to_vec())]);
        assert!(Credentials::from_secret_data(&two, None).is_err());
        assert!(Credentials::from_secret_data(&two, Some("a")).is_ok());
        let not_json = BTreeMap::from([("k".to_string(), b"user:pw".to_vec())]);
        assert!(Credentials::from_secret_data(&not_json, None).is_err());
    }
}
