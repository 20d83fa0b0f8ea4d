//! `register cluster --token`: short-lived, renewable store credentials (spec 2.6).
//!
//! Checks the token flags into a [`Token`], and builds the management-side Secret that
//! whatever renews the credentials (a Vault or ECR rotator, an operator) keeps current, and
//! the SveltosCluster annotations that point the publisher at it. The publisher relays the
//! Secret into the cluster's bundles (`render::credentials`); registration only seeds it with
//! the credentials given. Without `--token` nothing here applies and the credentials given
//! stay, long-lived, in the registration YAML alone.

use airlock_bundle::ClusterId;
use airlock_bundle::cluster::is_dns_subdomain;
use airlock_bundle::vocabulary::{CLUSTER_ANNOTATION, EXPIRES_AT_ANNOTATION, PULLER_NAMESPACE_ANNOTATION, STORE_CREDENTIALS_ANNOTATION};
use anyhow::{Context, bail, ensure};
use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use clap::Args;
use jiff::{SignedDuration, Timestamp};
use serde_json::{Value, json};

use crate::cmd::parse_duration;
use crate::render::credentials::Login;

/// Suffix of the management Secret's default name, after the cluster's name.
pub(crate) const SECRET_SUFFIX: &str = "-store-credentials";

/// The token flags as typed.
#[derive(Debug, Clone, Default, Args)]
pub struct TokenFlags {
    /// The store credentials given (registry or Git) are short-lived and renewed: keep them
    /// in a management Secret that the publisher relays to the puller inside its signed bundles.
    #[arg(long)]
    pub token: bool,
    /// When the credentials given expire (RFC 3339, e.g. 2026-12-31T00:00:00Z).
    #[arg(long, value_name = "TIME", requires = "token", conflicts_with = "token_ttl")]
    pub token_expires_at: Option<String>,
    /// How long the credentials given stay valid from now (30d, 12h, 90m).
    #[arg(long, value_name = "DURATION", requires = "token", value_parser = parse_duration)]
    pub token_ttl: Option<SignedDuration>,
    #[allow(rustdoc::invalid_html_tags, reason = "clap shows this comment as the flag's help, where <placeholders> read as such")]
    /// Name of the management Secret (in the cluster's namespace) that holds the current
    /// credentials (default: <cluster>-store-credentials).
    #[arg(long, value_name = "NAME", requires = "token")]
    pub credentials_secret: Option<String>,
}

/// Renewable credentials, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Token {
    /// The management Secret's name, in the cluster's namespace.
    pub secret: String,
    pub expires_at: Timestamp,
}

impl TokenFlags {
    /// `None` without `--token`. `has_credentials`: store credentials were given.
    pub fn check(&self, cluster: &ClusterId, has_credentials: bool, now: Timestamp) -> anyhow::Result<Option<Token>> {
        if !self.token {
            return Ok(None);
        }
        ensure!(
            has_credentials,
            "--token needs the store credentials to renew: --registry-username with --registry-password-file, \
             --docker-config, or --git-username with --git-password-file"
        );
        let expires_at = match (&self.token_expires_at, self.token_ttl) {
            (Some(text), _) => {
                text.trim().parse::<Timestamp>().with_context(|| format!("--token-expires-at {text:?}: not an RFC 3339 time"))?
            }
            (None, Some(ttl)) => now.checked_add(ttl).context("--token-ttl: too far in the future")?,
            (None, None) => bail!("--token needs --token-expires-at or --token-ttl: when the credentials given expire"),
        };
        ensure!(expires_at > now, "--token-expires-at {expires_at}: the credentials have already expired");
        let secret = self.credentials_secret.clone().unwrap_or_else(|| format!("{}{SECRET_SUFFIX}", cluster.name()));
        ensure!(is_dns_subdomain(&secret), "--credentials-secret {secret:?} is not a Secret name (at most 253 characters)");
        // Whole seconds: the annotation is what the rotator writes and the publisher reads.
        let expires_at = Timestamp::from_second(expires_at.as_second()).expect("seconds of a valid time");
        Ok(Some(Token { secret, expires_at }))
    }
}

/// The SveltosCluster annotations that make the publisher relay the credentials.
pub fn annotations(token: &Token, puller_namespace: &str) -> [(&'static str, String); 2] {
    [(STORE_CREDENTIALS_ANNOTATION, token.secret.clone()), (PULLER_NAMESPACE_ANNOTATION, puller_namespace.to_string())]
}

/// The management Secret, seeded with the credentials given, in the form the relay reads.
pub fn management_secret(token: &Token, cluster: &ClusterId, login: &Login) -> Value {
    json!({
        "apiVersion": "v1",
        "kind": "Secret",
        "metadata": {
            "name": token.secret,
            "namespace": cluster.namespace(),
            "labels": {"app.kubernetes.io/part-of": "airlock"},
            "annotations": {EXPIRES_AT_ANNOTATION: token.expires_at.to_string(), CLUSTER_ANNOTATION: cluster.to_string()},
        },
        "type": login.secret_type(),
        "data": {login.key(): STANDARD.encode(login.bytes())},
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(clap::Parser)]
    struct Cli {
        #[command(flatten)]
        token: TokenFlags,
    }

    fn parse(args: &[&str]) -> Result<TokenFlags, clap::Error> {
        use clap::Parser;
        Cli::try_parse_from(std::iter::once("register").chain(args.iter().copied())).map(|cli| cli.token)
    }

    fn flags(args: &[&str]) -> TokenFlags {
        parse(args).expect("flags parse")
    }

    fn now() -> Timestamp {
        "2026-11-29T12:00:00Z".parse().unwrap()
    }

    #[test]
    fn checks_expiry_from_a_time_or_a_ttl_and_names_the_secret() {
        let cluster: ClusterId = "fleet/edge-1".parse().unwrap();
        let at = flags(&["--token", "--token-expires-at", "2026-12-01T00:00:00Z"]).check(&cluster, true, now()).unwrap();
        assert_eq!(at, Some(Token { secret: "edge-1-store-credentials".into(), expires_at: "2026-12-01T00:00:00Z".parse().unwrap() }));
        let ttl = flags(&["--token", "--token-ttl", "12h", "--credentials-secret", "vault-edge-1"])
            .check(&cluster, true, now())
            .unwrap()
            .unwrap();
        assert_eq!((ttl.secret.as_str(), ttl.expires_at.to_string().as_str()), ("vault-edge-1", "2026-11-30T00:00:00Z"));
        assert_eq!(flags(&[]).check(&cluster, false, now()).unwrap(), None, "no --token, no Secret");
    }

    #[test]
    fn rejects_bad_token_flags_naming_the_flag() {
        let cluster: ClusterId = "fleet/edge-1".parse().unwrap();
        let cases: [(&[&str], bool, &str); 5] = [
            (&["--token", "--token-ttl", "1h"], false, "--token needs the store credentials"),
            (&["--token"], true, "--token needs --token-expires-at or --token-ttl"),
            (&["--token", "--token-expires-at", "tomorrow"], true, "--token-expires-at \"tomorrow\": not an RFC 3339 time"),
            (&["--token", "--token-expires-at", "2026-11-01T00:00:00Z"], true, "already expired"),
            (&["--token", "--token-ttl", "1h", "--credentials-secret", "Bad_Name"], true, "--credentials-secret \"Bad_Name\""),
        ];
        for (args, has_credentials, want) in cases {
            let err = format!("{:#}", flags(args).check(&cluster, has_credentials, now()).unwrap_err());
            assert!(err.contains(want), "{args:?}: {err}");
        }
        let both = ["--token", "--token-ttl", "1h", "--token-expires-at", "2026-12-01T00:00:00Z"];
        assert!(parse(&both).is_err(), "a time and a ttl conflict");
        assert!(parse(&["--token-ttl", "1h"]).is_err(), "--token-ttl requires --token");
    }

    #[test]
    fn management_secret_holds_the_docker_config_and_its_expiry() {
        let cluster: ClusterId = "fleet/edge-1".parse().unwrap();
        let token = Token { secret: "edge-1-store-credentials".into(), expires_at: "2026-12-01T00:00:00Z".parse().unwrap() };
        let secret = management_secret(&token, &cluster, &Login::Docker(br#"{"auths":{}}"#.to_vec()));
        assert_eq!(secret["metadata"]["namespace"], "fleet");
        assert_eq!(secret["metadata"]["annotations"][EXPIRES_AT_ANNOTATION], "2026-12-01T00:00:00Z");
        assert_eq!(secret["type"], "kubernetes.io/dockerconfigjson");
        assert_eq!(STANDARD.decode(secret["data"][".dockerconfigjson"].as_str().unwrap()).unwrap(), br#"{"auths":{}}"#);
        let annotations = annotations(&token, "ops");
        assert_eq!(annotations[0], ("airlock.dev/store-credentials", "edge-1-store-credentials".to_string()));
        assert_eq!(annotations[1], ("airlock.dev/puller-namespace", "ops".to_string()));
        let git = management_secret(&token, &cluster, &Login::Git(b"http://u:p@h\n".to_vec()));
        assert_eq!((git["type"].as_str(), git["data"].as_object().map(|d| d.len())), (Some("Opaque"), Some(1)));
        assert_eq!(STANDARD.decode(git["data"]["git-credentials"].as_str().unwrap()).unwrap(), b"http://u:p@h\n");
    }
}
