//! Steps 7-10 of spec section 8: what a statement claims about its cluster, version and
//! lifetime, judged against the puller's cluster, floor and clock. The statement's own
//! consistency (step 6) is `consistency`'s; this module trusts it.

use jiff::{SignedDuration, Timestamp};

use super::error::VerifyError;
use super::expectation::Expectation;
use crate::digest::Digest;
use crate::limits::Limits;
use crate::statement::rfc3339;

/// What steps 7-10 judge of a statement that passed steps 1-6.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Claims<'a> {
    pub cluster: &'a str,
    pub version: u64,
    /// The bundle digest step 6 computed.
    pub digest: Digest,
    pub issued_at: Timestamp,
    pub expires: Timestamp,
    /// The version of the keyring that verified it (step 6 checked `keyringVersion`).
    pub keyring_version: u64,
}

/// Steps 7-10, against the puller's cluster, floor and clock. Returns whether this
/// version and digest were applied already (8.8).
pub fn check_claims(claims: &Claims<'_>, expect: &Expectation<'_>, limits: &Limits) -> Result<bool, VerifyError> {
    // spec 8.7
    let own = expect.cluster.to_string();
    if claims.cluster != own {
        return Err(VerifyError::WrongCluster { field: "predicate.cluster", expected: own, actual: claims.cluster.to_string() });
    }
    // spec 7.4: a keyring the root rotated since the floor was set starts from none, so
    // that a floor or a time a stolen online key pushed forward does not outlive the key.
    let renewed = expect.floor.renewed_by(claims.keyring_version);
    // spec 8.8
    let mut already_applied = false;
    if let Some((floor, applied)) = expect.floor.applied.filter(|_| !renewed) {
        if claims.version < floor {
            return Err(VerifyError::Rollback { version: claims.version, floor });
        }
        if claims.version - floor > limits.max_version_step {
            return Err(VerifyError::VersionLeap { version: claims.version, floor, step: limits.max_version_step });
        }
        if claims.version == floor {
            if applied != claims.digest {
                return Err(VerifyError::VersionReused { version: claims.version, applied, actual: claims.digest });
            }
            already_applied = true;
        }
    }
    // spec 8.9: a clock behind the newest issuedAt already accepted is known to be wrong
    // (reset, dead battery), so it cannot judge "future"; the newest issuedAt then bounds
    // it instead, by one validity, so that a far-future issuedAt cannot freeze the floor
    // for years. Expiry below still holds.
    let skew = SignedDuration::from_secs(limits.clock_skew_secs);
    let validity = SignedDuration::from_secs(limits.max_validity_secs);
    let max_days = limits.max_validity_secs / 86_400;
    match expect.floor.highest_issued_at.filter(|&h| expect.now < h) {
        None if claims.issued_at > expect.now + skew => {
            return Err(VerifyError::FromTheFuture {
                issued_at: rfc3339::format(&claims.issued_at),
                now: rfc3339::format(&expect.now),
                skew_secs: limits.clock_skew_secs,
            });
        }
        Some(highest) if claims.issued_at.duration_since(highest) > validity => {
            return Err(VerifyError::BeyondKnownTime {
                issued_at: rfc3339::format(&claims.issued_at),
                highest: rfc3339::format(&highest),
                now: rfc3339::format(&expect.now),
                max_days,
            });
        }
        _ => {}
    }
    // spec 8.10: a long validity would let one signed bundle outlive a freeze for years.
    if claims.expires.duration_since(claims.issued_at) > validity {
        return Err(VerifyError::ValidityTooLong {
            issued_at: rfc3339::format(&claims.issued_at),
            expires: rfc3339::format(&claims.expires),
            max_days,
        });
    }
    // spec 8.10
    let highest = expect.floor.highest_issued_at.filter(|_| !renewed);
    let reference = highest.map_or(expect.now, |t| t.max(expect.now));
    if claims.expires <= reference {
        return Err(VerifyError::Expired { expires: rfc3339::format(&claims.expires), reference: rfc3339::format(&reference) });
    }
    Ok(already_applied)
}
