//! A Git store's reports (spec 14.7): the branch `reports/<namespace>/<name>` of the
//! store's repository, whose tip holds one file, `report.json`; each report is a commit on
//! the previous tip, pushed without force and rebuilt when another puller moved the branch.
//!
//! Reading many clusters at once costs one fetch: every reports branch comes in through
//! one wildcard refspec, and the remote's advertisement tells which tips moved since the
//! commits a reader saw last. Blobs are size-checked before they are read.

use git2::{ObjectType, Oid, Repository, Signature};

use super::read::read_blob;
use super::target::{Reach, Target};
use super::tree::BLOB;
use super::write::{PUSH_ATTEMPTS, lock_local_remote, push_to};
use crate::error::StoreError;
use crate::reports::{Latest, REPORT_FILE, REPORTS, ReportPush};
use airlock_bundle::cluster::ClusterId;
use airlock_bundle::limits::Limits;
use airlock_bundle::statement::rfc3339;

/// Where every reports branch is fetched to in the cache.
const REPORTS_TRACKING: &str = "refs/airlock/reports/";

/// `reports/<namespace>/<name>`.
pub(super) fn report_branch(cluster: &ClusterId) -> String {
    format!("{REPORTS}/{}/{}", cluster.namespace(), cluster.name())
}

/// Commits `report` on its cluster's reports branch and pushes it.
pub(super) fn push_report(target: &Target, report: &ReportPush) -> Result<(), StoreError> {
    let branch = report_branch(&report.cluster);
    let (repo, _lock) = target.cache()?;
    let _remote_lock = lock_local_remote(target)?;
    let mut refusal = String::new();
    for attempt in 1..=PUSH_ATTEMPTS {
        let tip = target.fetch_branch(&repo, &branch, "fetch before reporting", Reach::Whole)?;
        let commit = report_commit(&repo, tip, report).map_err(|e| target.git_error("building the report commit", e))?;
        match push_to(target, &repo, commit, &branch)? {
            None => return Ok(()),
            Some(reason) => {
                tracing::debug!(store = %target.shown, attempt, %reason, "report push refused; again on the new tip");
                refusal = reason;
            }
        }
    }
    let message = format!("report push to {branch} refused {PUSH_ATTEMPTS} times, last: {refusal}");
    Err(StoreError::Unavailable { store: target.shown.clone(), message })
}

fn report_commit(repo: &Repository, tip: Option<Oid>, report: &ReportPush) -> Result<Oid, git2::Error> {
    let mut tree = repo.treebuilder(None)?;
    tree.insert(REPORT_FILE, repo.blob(&report.envelope)?, BLOB)?;
    let tree = repo.find_tree(tree.write()?)?;
    let parent = tip.map(|t| repo.find_commit(t)).transpose()?;
    let finished = rfc3339::format(&report.finished_at);
    let message = format!("airlock: report {} {finished} {}\n", report.cluster, report.result);
    let who = Signature::now("Airlock Puller", "airlock@localhost")?;
    repo.commit(None, &who, &who, &message, &tree, &parent.iter().collect::<Vec<_>>())
}

/// The newest report of each cluster of `wanted`, unless it is the commit its mark names.
pub(super) fn latest_reports(
    target: &Target,
    wanted: &[(ClusterId, Option<String>)],
    limits: &Limits,
) -> Result<Vec<Result<Latest, StoreError>>, StoreError> {
    let (repo, _lock) = target.cache()?;
    let spec = format!("+refs/heads/{REPORTS}/*:{REPORTS_TRACKING}*");
    let heads = target.fetch_refs(&repo, &spec, "fetching reports", Reach::Read { bytes: limits.git_fetch_bytes })?;
    let heads: std::collections::HashMap<String, Oid> = heads.into_iter().collect();
    Ok(wanted
        .iter()
        .map(|(cluster, seen)| match heads.get(&format!("refs/heads/{}", report_branch(cluster))) {
            None => Ok(Latest::None),
            Some(tip) if seen.as_deref() == Some(tip.to_string().as_str()) => Ok(Latest::Unchanged),
            Some(tip) => {
                read_report(target, &repo, cluster, *tip, limits).map(|envelope| Latest::Report { envelope, mark: tip.to_string() })
            }
        })
        .collect())
}

/// `report.json` of the commit `tip` of `cluster`'s reports branch.
fn read_report(target: &Target, repo: &Repository, cluster: &ClusterId, tip: Oid, limits: &Limits) -> Result<Vec<u8>, StoreError> {
    let what = format!("{}:{REPORT_FILE}", report_branch(cluster));
    let err = |e| target.git_error(&what, e);
    let tree = repo.find_commit(tip).and_then(|c| c.tree()).map_err(err)?;
    let entry = tree.get_name(REPORT_FILE).ok_or_else(|| target.malformed(what.clone(), "the reports branch holds no report.json"))?;
    if entry.filemode() != BLOB || entry.kind() != Some(ObjectType::Blob) {
        return Err(target.malformed(what, "report.json is not a plain file"));
    }
    let odb = repo.odb().map_err(err)?;
    read_blob(target, &odb, entry.id(), limits.envelope_bytes, &what)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::git::GitStore;
    use crate::reports::ReportStore;
    use futures::StreamExt;
    use jiff::{SignedDuration, Timestamp};

    fn report(cluster: &str, at: Timestamp, body: &str) -> ReportPush {
        ReportPush { cluster: cluster.parse().unwrap(), finished_at: at, result: "up-to-date".into(), envelope: body.as_bytes().to_vec() }
    }

    #[tokio::test]
    async fn each_cluster_has_a_branch_and_one_listing_reads_them_all() {
        let dir = tempfile::tempdir().unwrap();
        let remote = Repository::init_bare(dir.path().join("remote.git")).unwrap();
        let url = format!("file://{}", dir.path().join("remote.git").display());
        let (puller, reader) = (
            GitStore::with_cache(&url, "main", &dir.path().join("a")).unwrap(),
            GitStore::with_cache(&url, "main", &dir.path().join("b")).unwrap(),
        );
        let at: Timestamp = "2026-03-01T10:00:00Z".parse().unwrap();
        puller.push_report(&report("fleet/edge-1", at, "one")).await.unwrap();
        puller.push_report(&report("fleet/edge-1", at + SignedDuration::from_secs(60), "two")).await.unwrap();
        puller.push_report(&report("fleet/edge-2", at, "other")).await.unwrap();

        let tip = remote.refname_to_id("refs/heads/reports/fleet/edge-1").unwrap();
        let commit = remote.find_commit(tip).unwrap();
        assert_eq!(commit.message().unwrap(), "airlock: report fleet/edge-1 2026-03-01T10:01:00Z up-to-date\n");
        assert_eq!(commit.parent_count(), 1, "the history is the branch's");
        assert!(remote.find_reference("refs/heads/main").is_err(), "the bundles' branch is untouched");

        let wanted: Vec<(ClusterId, Option<String>)> =
            ["fleet/edge-1", "fleet/edge-2", "fleet/edge-3"].iter().map(|c| (c.parse().unwrap(), None)).collect();
        let found: Vec<Latest> =
            reader.latest_reports(&wanted, &Limits::SPEC).collect::<Vec<_>>().await.into_iter().map(Result::unwrap).collect();
        let Latest::Report { envelope, mark } = &found[0] else { panic!("{found:?}") };
        assert_eq!((envelope.as_slice(), mark.as_str()), (&b"two"[..], tip.to_string().as_str()));
        assert!(matches!(&found[1], Latest::Report { envelope, .. } if envelope == b"other"));
        assert_eq!(found[2], Latest::None);
        let edge = "fleet/edge-1".parse().unwrap();
        assert_eq!(reader.latest_report(&edge, Some(mark), &Limits::SPEC).await.unwrap(), Latest::Unchanged);
    }

    #[tokio::test]
    async fn refuses_a_report_branch_without_a_plain_report_file() {
        let dir = tempfile::tempdir().unwrap();
        let remote = Repository::init_bare(dir.path().join("remote.git")).unwrap();
        let tree = remote.treebuilder(None).unwrap().write().unwrap();
        let who = Signature::now("Mallory", "mallory@localhost").unwrap();
        remote.commit(Some("refs/heads/reports/fleet/edge-1"), &who, &who, "empty", &remote.find_tree(tree).unwrap(), &[]).unwrap();
        let url = format!("file://{}", dir.path().join("remote.git").display());
        let store = GitStore::with_cache(&url, "main", &dir.path().join("cache")).unwrap();
        let err = store.latest_report(&"fleet/edge-1".parse().unwrap(), None, &Limits::SPEC).await.unwrap_err();
        assert!(matches!(&err, StoreError::Malformed { message, .. } if message.contains("no report.json")), "{err:?}");
    }
}
