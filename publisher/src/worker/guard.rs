//! What the signer agrees to sign for its worker: a statement, for a cluster the run was
//! asked to publish (all of them without `--cluster`), expiring no later than `--expires-in`
//! from now. A worker that profile content took over can still have bundles of those
//! clusters signed while it lives; it cannot have anything else signed, nor take the key.

use airlock_bundle::envelope::{IN_TOTO_PAYLOAD_TYPE, pae_payload};
use airlock_bundle::{ClusterId, Statement};
use jiff::{SignedDuration, Timestamp};

/// The clusters and the validity a run may sign for.
pub struct Guard {
    pub only: Vec<ClusterId>,
    pub expires_in: SignedDuration,
}

impl Guard {
    /// Why `message` must not be signed at `now`; the cluster it is for when it may.
    pub fn check(&self, message: &[u8], now: Timestamp) -> Result<String, String> {
        let payload = pae_payload(message, IN_TOTO_PAYLOAD_TYPE).ok_or("refused to sign: not the encoding of an in-toto statement")?;
        let statement: Statement = serde_json::from_slice(payload).map_err(|e| format!("refused to sign: not a bundle statement: {e}"))?;
        let cluster = &statement.predicate.cluster;
        if !self.only.is_empty() && !self.only.iter().any(|c| c.to_string() == *cluster) {
            return Err(format!("refused to sign a bundle for cluster {cluster}: the run publishes only those given with --cluster"));
        }
        let latest = now.checked_add(self.expires_in).map_err(|e| format!("refused to sign: --expires-in: {e}"))?;
        if statement.predicate.expires > latest {
            return Err(format!(
                "refused to sign a bundle for cluster {cluster} expiring {}, after now and --expires-in ({latest})",
                statement.predicate.expires
            ));
        }
        Ok(cluster.clone())
    }
}

#[cfg(test)]
mod tests {
    use airlock_bundle::envelope::pae;
    use airlock_bundle::testkit::Fixture;

    use super::*;

    fn statement(cluster: &str, expires: &str) -> Vec<u8> {
        let mut statement = Fixture::new(1).signed(1, Fixture::files()).statement;
        statement.predicate.cluster = cluster.into();
        statement.predicate.expires = expires.parse().unwrap();
        pae(IN_TOTO_PAYLOAD_TYPE, &statement.to_json())
    }

    #[test]
    fn signs_only_statements_of_the_runs_clusters_within_its_validity() {
        let now: Timestamp = "2030-01-01T00:00:00Z".parse().unwrap();
        let guard = Guard { only: vec!["fleet/a".parse().unwrap()], expires_in: SignedDuration::from_hours(24) };
        assert_eq!(guard.check(&statement("fleet/a", "2030-01-02T00:00:00Z"), now), Ok("fleet/a".into()));
        let other = guard.check(&statement("fleet/b", "2030-01-02T00:00:00Z"), now).unwrap_err();
        assert!(other.contains("cluster fleet/b"), "{other}");
        let late = guard.check(&statement("fleet/a", "2030-01-02T00:00:01Z"), now).unwrap_err();
        assert!(late.contains("expiring 2030-01-02T00:00:01Z"), "{late}");
        let label = guard.check(b"airlock-publisher seal secret v1", now).unwrap_err();
        assert!(label.contains("not the encoding"), "{label}");
        let everyone = Guard { only: vec![], expires_in: SignedDuration::from_hours(24) };
        assert_eq!(everyone.check(&statement("fleet/b", "2030-01-02T00:00:00Z"), now), Ok("fleet/b".into()));
    }
}
