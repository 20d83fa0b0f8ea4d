//! Where a `kustomizationRefs` entry's files come from, read off the object it references:
//! a ConfigMap (`binaryData["kustomize.tar.gz"]`), a Secret of Sveltos's type
//! (`data["kustomize.tar.gz"]`), or a Flux GitRepository resolved to the URL and ref the
//! management side fetches itself.
//!
//! Supported Flux GitRepository fields: `spec.url` (any URL libgit2 fetches anonymously:
//! `http(s)://`, `git://`, `file://`) and `spec.ref` `branch`, `tag`, `commit` or `name`
//! (a full ref), else the remote's HEAD. Refused: `secretRef` (no credentials for
//! management-side fetches yet), `ref.semver`, `include`, `verify`. A Flux OCIRepository's
//! artifact is fetched by `remote` and arrives here as a tarball.

use base64::Engine;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;

use super::error::KustomizeError;

/// The data key Sveltos reads a kustomization tarball from.
pub const TARBALL_KEY: &str = "kustomize.tar.gz";
/// The only Secret type Sveltos reads.
pub const SECRET_TYPE: &str = "addons.projectsveltos.io/cluster-profile";

/// Which commit of a repository.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum GitRef {
    /// The remote's HEAD.
    Default,
    Branch(String),
    Tag(String),
    Commit(String),
    /// A full reference name, `refs/heads/main`.
    Name(String),
}

/// A kustomization's files.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum KustomizeSource {
    /// A gzip'ed tar of the tree.
    Tarball(Vec<u8>),
    Git {
        url: String,
        reference: GitRef,
    },
}

impl KustomizeSource {
    /// A ConfigMap's `binaryData["kustomize.tar.gz"]` (base64, as the API serves it).
    pub fn from_config_map(object: &Value, origin: &str) -> Result<KustomizeSource, KustomizeError> {
        tarball(object, "binaryData", origin)
    }

    /// A Secret's `data["kustomize.tar.gz"]`; the Secret must be of [`SECRET_TYPE`].
    pub fn from_secret(object: &Value, origin: &str) -> Result<KustomizeSource, KustomizeError> {
        let kind = object["type"].as_str().unwrap_or("");
        if kind != SECRET_TYPE {
            return Err(source(origin, format!("Secret type {kind:?} is not {SECRET_TYPE}")));
        }
        tarball(object, "data", origin)
    }

    /// A Flux `source.toolkit.fluxcd.io` GitRepository.
    pub fn from_flux_git_repository(object: &Value, origin: &str) -> Result<KustomizeSource, KustomizeError> {
        let spec = &object["spec"];
        for refused in ["secretRef", "include", "verify", "proxySecretRef"] {
            if !spec[refused].is_null() {
                return Err(KustomizeError::Unsupported {
                    origin: origin.into(),
                    field: format!("GitRepository spec.{refused}"),
                    reason: "management-side fetches are anonymous and take the tree as it is".into(),
                });
            }
        }
        let url = spec["url"].as_str().filter(|u| !u.is_empty()).ok_or_else(|| source(origin, "GitRepository has no spec.url".into()))?;
        let r = &spec["ref"];
        let text = |k: &str| r[k].as_str().filter(|s| !s.is_empty()).map(str::to_string);
        if text("semver").is_some() {
            return Err(KustomizeError::Unsupported {
                origin: origin.into(),
                field: "GitRepository spec.ref.semver".into(),
                reason: "name the tag, branch or commit".into(),
            });
        }
        // Flux's precedence: commit, then name, then tag, then branch.
        let reference = if let Some(c) = text("commit") {
            GitRef::Commit(c)
        } else if let Some(n) = text("name") {
            GitRef::Name(n)
        } else if let Some(t) = text("tag") {
            GitRef::Tag(t)
        } else if let Some(b) = text("branch") {
            GitRef::Branch(b)
        } else {
            GitRef::Default
        };
        Ok(KustomizeSource::Git { url: url.into(), reference })
    }
}

fn source(origin: &str, message: String) -> KustomizeError {
    KustomizeError::Source { origin: origin.into(), message }
}

fn tarball(object: &Value, field: &str, origin: &str) -> Result<KustomizeSource, KustomizeError> {
    let encoded = object[field][TARBALL_KEY].as_str().ok_or_else(|| source(origin, format!("{field} has no key {TARBALL_KEY}")))?;
    let bytes = STANDARD.decode(encoded).map_err(|e| source(origin, format!("{field}[{TARBALL_KEY}] is not base64: {e}")))?;
    Ok(KustomizeSource::Tarball(bytes))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_tarballs_where_sveltos_does() {
        let cm = json!({"kind": "ConfigMap", "binaryData": {"kustomize.tar.gz": "AAEC"}});
        assert_eq!(KustomizeSource::from_config_map(&cm, "o"), Ok(KustomizeSource::Tarball(vec![0, 1, 2])));
        let in_data = json!({"kind": "ConfigMap", "data": {"kustomize.tar.gz": "AAEC"}});
        assert!(matches!(KustomizeSource::from_config_map(&in_data, "o"), Err(KustomizeError::Source { .. })));
        let secret = json!({"kind": "Secret", "type": SECRET_TYPE, "data": {"kustomize.tar.gz": "AAEC"}});
        assert_eq!(KustomizeSource::from_secret(&secret, "o"), Ok(KustomizeSource::Tarball(vec![0, 1, 2])));
        let opaque = json!({"kind": "Secret", "type": "Opaque", "data": {"kustomize.tar.gz": "AAEC"}});
        assert!(matches!(KustomizeSource::from_secret(&opaque, "o"), Err(KustomizeError::Source { .. })));
    }

    #[test]
    fn resolves_flux_git_repositories() {
        let repo = |r: Value| json!({"spec": {"url": "http://127.0.0.1:8418/x.git", "ref": r}});
        let git = |r| KustomizeSource::from_flux_git_repository(&repo(r), "o");
        let want = |reference| Ok(KustomizeSource::Git { url: "http://127.0.0.1:8418/x.git".into(), reference });
        assert_eq!(git(json!({"branch": "main"})), want(GitRef::Branch("main".into())));
        assert_eq!(git(json!({"branch": "main", "tag": "v1"})), want(GitRef::Tag("v1".into())));
        assert_eq!(git(json!({"tag": "v1", "commit": "abc"})), want(GitRef::Commit("abc".into())));
        assert_eq!(git(json!(null)), want(GitRef::Default));
        assert!(matches!(git(json!({"semver": ">=1"})), Err(KustomizeError::Unsupported { .. })));
        let with_secret = json!({"spec": {"url": "http://h/x.git", "secretRef": {"name": "s"}}});
        assert!(matches!(KustomizeSource::from_flux_git_repository(&with_secret, "o"), Err(KustomizeError::Unsupported { .. })));
    }
}
