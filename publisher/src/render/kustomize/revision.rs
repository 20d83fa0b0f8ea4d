//! Which commit a Flux GitRepository's ref names now, asked of the remote the way `git
//! ls-remote` asks (no objects fetched), once per repository and run. The commit is kept
//! among the run's fetched resources under the repository's revision key, so rendering
//! builds exactly that commit and a cluster's fingerprint changes when the branch moves.

use std::collections::BTreeSet;
use std::time::Duration;

use git2::{Direction, Repository};
use serde_json::json;

use super::error::{KustomizeError, fetch_error, io_error};
use super::source::{GitRef, KustomizeSource};
use crate::source_mirrors::Mirrors;
use crate::sources::model::kustomization::{flux_sources, revision_key};
use crate::sources::{ObjectKey, Resources};

/// Looks up the commit of every GitRepository in `repositories` that `resources` holds,
/// and records it (or why it could not be found) under its revision key. A repository
/// that is missing gets no revision: the reference is missing, and `optional` decides.
/// Returns the shortest `spec.interval` among them: how soon a long-running publisher
/// should look again. The remote asked is the repository's mirror in `mirrors`, if it has
/// one; the URL recorded is the one the GitRepository names, since the commit id says
/// what was found.
pub fn resolve_into(repositories: &BTreeSet<ObjectKey>, mirrors: &Mirrors, resources: &mut Resources) -> Option<Duration> {
    let (found, soonest) = flux_sources(repositories, resources);
    for (repository, source) in found {
        let origin = repository.to_string();
        let outcome = source.and_then(|value| {
            KustomizeSource::from_flux_git_repository(&value, &origin)
                .and_then(|source| match source {
                    KustomizeSource::Git { url, reference } => {
                        commit_of(&origin, &mirrors.rewrite(&url).url, &reference).map(|commit| json!({"url": url, "commit": commit}))
                    }
                    KustomizeSource::Tarball(_) => unreachable!("a GitRepository is a Git source"),
                })
                .map_err(|e| e.to_string())
        });
        resources.record(revision_key(&repository), outcome.map(Some));
    }
    soonest
}

/// The commit `reference` of `url` names. A commit names itself; it is checked to exist
/// when the tree is fetched.
pub fn commit_of(origin: &str, url: &str, reference: &GitRef) -> Result<String, KustomizeError> {
    let wanted = match reference {
        GitRef::Commit(id) => return Ok(id.clone()),
        GitRef::Default => "HEAD".to_string(),
        GitRef::Branch(b) => format!("refs/heads/{b}"),
        GitRef::Tag(t) => format!("refs/tags/{t}"),
        GitRef::Name(n) => n.clone(),
    };
    let fetch_err = |message: String| fetch_error(origin, url, &message);
    let scratch = tempfile::tempdir().map_err(|e| io_error(&std::env::temp_dir(), e))?;
    let repo = Repository::init_bare(scratch.path()).map_err(|e| fetch_err(e.message().into()))?;
    let mut remote = repo.remote_anonymous(url).map_err(|e| fetch_err(e.message().into()))?;
    let connection = remote.connect_auth(Direction::Fetch, None, None).map_err(|e| fetch_err(e.message().into()))?;
    let heads = connection.list().map_err(|e| fetch_err(e.message().into()))?;
    // An annotated tag is listed twice: the tag object, then `^{}` with its commit.
    let peeled = format!("{wanted}^{{}}");
    let found = heads.iter().find(|h| h.name() == peeled).or_else(|| heads.iter().find(|h| h.name() == wanted));
    found.map(|h| h.oid().to_string()).ok_or_else(|| fetch_err(format!("the remote has no {wanted}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::sources::Lookup;
    use std::collections::BTreeMap;

    fn repository(name: &str, interval: &str) -> (ObjectKey, serde_json::Value) {
        let key = ObjectKey::new("source.toolkit.fluxcd.io/v1", "GitRepository", "flux", name);
        let commit = "0123456789abcdef0123456789abcdef01234567";
        (key, json!({"spec": {"url": "http://127.0.0.1:1/x.git", "interval": interval, "ref": {"commit": commit}}}))
    }

    #[test]
    fn a_commit_needs_no_lookup_and_the_soonest_interval_is_returned() {
        let (a, b) = (repository("a", "5m"), repository("b", "2m30s"));
        let mut resources = Resources::found(BTreeMap::from([a.clone(), b.clone()]));
        let missing = ObjectKey::new("source.toolkit.fluxcd.io/v1", "GitRepository", "flux", "gone");
        let wanted = BTreeSet::from([a.0.clone(), b.0.clone(), missing.clone()]);
        assert_eq!(resolve_into(&wanted, &Mirrors::default(), &mut resources), Some(Duration::from_secs(150)));
        let revision = resources.get(&revision_key(&a.0)).expect("recorded");
        assert_eq!(revision["commit"], "0123456789abcdef0123456789abcdef01234567");
        assert!(matches!(resources.lookup(&revision_key(&missing)), Lookup::Missing), "a missing repository has no revision");

        let fast = repository("fast", "1s");
        let mut resources = Resources::found(BTreeMap::from([fast.clone()]));
        assert_eq!(
            resolve_into(&BTreeSet::from([fast.0]), &Mirrors::default(), &mut resources),
            Some(crate::sources::model::kustomization::MIN_SOURCE_INTERVAL)
        );
    }

    #[test]
    fn asks_the_mirror_and_records_the_url_the_repository_names() {
        let key = ObjectKey::new("source.toolkit.fluxcd.io/v1", "GitRepository", "flux", "mirrored");
        let value = json!({"spec": {"url": "https://github.com/org/x.git", "ref": {"branch": "main"}}});
        let mut resources = Resources::found(BTreeMap::from([(key.clone(), value)]));
        let mirrors = Mirrors::parse([("--mirror number 1".to_string(), "https://github.com/org=http://127.0.0.1:1/org")]).expect("valid");
        resolve_into(&BTreeSet::from([key.clone()]), &mirrors, &mut resources);
        match resources.lookup(&revision_key(&key)) {
            Lookup::Failed(why) => assert!(why.contains("http://127.0.0.1:1/org/x.git"), "the mirror was asked: {why}"),
            _ => panic!("expected a failure"),
        }
    }

    #[test]
    fn an_unreachable_remote_is_recorded_as_unreadable() {
        let key = ObjectKey::new("source.toolkit.fluxcd.io/v1", "GitRepository", "flux", "down");
        let value = json!({"spec": {"url": "http://127.0.0.1:1/x.git", "ref": {"branch": "main"}}});
        let mut resources = Resources::found(BTreeMap::from([(key.clone(), value)]));
        assert_eq!(resolve_into(&BTreeSet::from([key.clone()]), &Mirrors::default(), &mut resources), None);
        match resources.lookup(&revision_key(&key)) {
            Lookup::Failed(why) => assert!(why.contains("http://127.0.0.1:1/x.git"), "{why}"),
            _ => panic!("expected a failure"),
        }
    }
}
