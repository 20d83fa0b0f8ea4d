//! A Sveltos Classifier as the publisher and ingest use it: what its puller evaluates
//! (`deployedResourceConstraint`, carried in every pull-mode cluster's bundle as an
//! evaluation, bundles-format.md 5.14), what ingest decides itself from the version a
//! report carries (`kubernetesVersionConstraints`), and the labels a match gives a
//! cluster (`classifierLabels`). Reading one is `parse::classifier`'s; applying the
//! labels is ingest's.

use airlock_bundle::statement::Evaluation;

/// A Classifier, read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classifier {
    pub name: String,
    /// `classifierLabels`, in the order written.
    pub labels: Vec<(String, String)>,
    /// `kubernetesVersionConstraints`: a cluster matches only when every one holds.
    pub versions: Vec<VersionConstraint>,
    /// `deployedResourceConstraint`, as the bundle carries it.
    pub evaluation: Evaluation,
}

/// Sveltos's `comparison` of a version constraint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Comparison {
    Equal,
    NotEqual,
    GreaterThan,
    LessThan,
    GreaterThanOrEqualTo,
    LessThanOrEqualTo,
}

impl Comparison {
    pub fn parse(text: &str) -> Option<Comparison> {
        Some(match text {
            "Equal" => Comparison::Equal,
            "NotEqual" => Comparison::NotEqual,
            "GreaterThan" => Comparison::GreaterThan,
            "LessThan" => Comparison::LessThan,
            "GreaterThanOrEqualTo" => Comparison::GreaterThanOrEqualTo,
            "LessThanOrEqualTo" => Comparison::LessThanOrEqualTo,
            _ => return None,
        })
    }
}

/// `major.minor.patch`, as Sveltos compares a cluster's version.
pub type Version = (u64, u64, u64);

/// One `kubernetesVersionConstraints` entry.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionConstraint {
    pub comparison: Comparison,
    pub version: Version,
}

impl VersionConstraint {
    /// Whether `cluster` (a cluster's `major.minor.patch`) satisfies this constraint.
    pub fn holds(&self, cluster: Version) -> bool {
        let order = cluster.cmp(&self.version);
        match self.comparison {
            Comparison::Equal => order.is_eq(),
            Comparison::NotEqual => order.is_ne(),
            Comparison::GreaterThan => order.is_gt(),
            Comparison::LessThan => order.is_lt(),
            Comparison::GreaterThanOrEqualTo => order.is_ge(),
            Comparison::LessThanOrEqualTo => order.is_le(),
        }
    }
}

impl Classifier {
    /// Whether a cluster whose API server says `git_version` satisfies every version
    /// constraint; `None` when the version does not read as one.
    pub fn version_matches(&self, git_version: &str) -> Option<bool> {
        let version = cluster_version(git_version)?;
        Some(self.versions.iter().all(|c| c.holds(version)))
    }
}

/// A cluster's `gitVersion` (`v1.20.2`, `v1.27.3+k3s1`, `v1.28.1-eks-43840fb`) as
/// `major.minor.patch`: what follows the patch number is dropped, as Sveltos drops it
/// before comparing.
pub fn cluster_version(git_version: &str) -> Option<Version> {
    let text = git_version.strip_prefix('v').unwrap_or(git_version);
    let end = text.find(['-', '+']).unwrap_or(text.len());
    let mut numbers = text[..end].split('.').map(|n| n.parse::<u64>().ok());
    let version = (numbers.next()??, numbers.next()??, numbers.next()??);
    numbers.next().is_none().then_some(version)
}

/// A constraint's version: `1.25.0`, `v1.25.0`, or shorter (`1.25`, missing parts 0).
/// One with a pre-release or build suffix is refused: a cluster's version is compared
/// without one, so such a constraint would read differently here and in Sveltos.
pub fn constraint_version(text: &str) -> Result<Version, String> {
    let plain = text.strip_prefix('v').unwrap_or(text);
    let parts: Vec<&str> = plain.split('.').collect();
    let number = |i: usize| parts.get(i).map_or(Ok(0), |p| p.parse::<u64>());
    match (parts.len(), number(0), number(1), number(2)) {
        (1..=3, Ok(major), Ok(minor), Ok(patch)) => Ok((major, minor, patch)),
        _ => Err(format!("{text:?} is not a version: MAJOR[.MINOR[.PATCH]], without a suffix")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn constraint(comparison: Comparison, version: &str) -> VersionConstraint {
        VersionConstraint { comparison, version: constraint_version(version).unwrap() }
    }

    #[test]
    fn reads_cluster_versions_as_sveltos_compares_them() {
        assert_eq!(cluster_version("v1.20.2"), Some((1, 20, 2)));
        assert_eq!(cluster_version("v1.27.3+k3s1"), Some((1, 27, 3)));
        assert_eq!(cluster_version("v1.28.1-eks-43840fb"), Some((1, 28, 1)));
        for bad in ["", "v1.20", "1.x.2", "v1.2.3.4"] {
            assert_eq!(cluster_version(bad), None, "{bad}");
        }
    }

    #[test]
    fn the_documented_version_ranges() {
        // The two Classifiers of Sveltos's documentation: >= 1.25.0, and [1.24.0, 1.25.0).
        let newer = Classifier {
            name: "deploy-gatekeeper-3-10".into(),
            labels: vec![],
            versions: vec![constraint(Comparison::GreaterThanOrEqualTo, "1.25.0")],
            evaluation: airlock_bundle::statement::Evaluation {
                kind: airlock_bundle::statement::EvaluationKind::Classifier,
                name: "deploy-gatekeeper-3-10".into(),
                selectors: vec![],
                aggregate: None,
                collect_resources: false,
            },
        };
        let older = Classifier {
            versions: vec![constraint(Comparison::GreaterThanOrEqualTo, "1.24.0"), constraint(Comparison::LessThan, "1.25.0")],
            ..newer.clone()
        };
        assert_eq!([newer.version_matches("v1.25.3"), older.version_matches("v1.25.3")], [Some(true), Some(false)]);
        assert_eq!([newer.version_matches("v1.24.9"), older.version_matches("v1.24.9")], [Some(false), Some(true)]);
        assert_eq!(older.version_matches("not a version"), None);
    }

    #[test]
    fn every_comparison() {
        let at = (1, 20, 2);
        let holds = |c, v| constraint(c, v).holds(at);
        assert!(holds(Comparison::Equal, "1.20.2") && !holds(Comparison::Equal, "1.20"));
        assert!(holds(Comparison::NotEqual, "v1.21.0"));
        assert!(holds(Comparison::GreaterThan, "1.20") && !holds(Comparison::GreaterThan, "1.20.2"));
        assert!(holds(Comparison::LessThan, "1.21") && holds(Comparison::LessThanOrEqualTo, "1.20.2"));
        assert!(constraint_version("1.25.0-rc.1").is_err() && constraint_version("").is_err());
    }
}
