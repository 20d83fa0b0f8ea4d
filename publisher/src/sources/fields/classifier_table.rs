//! The fields of Sveltos's Classifier, which the publisher reads and carries to every
//! pull-mode cluster (bundles-format.md 5.14) and ingest decides, and of the
//! ClassifierReport ingest writes (bundles-format.md 14.5), declared so that the
//! compatibility document lists each one against the CRDs. A Classifier earns no notes
//! (no part carries it), so what it does differently is said here only.

use super::table::Class::{Differs, NotApplicable, NotSupported, Supported};
use super::table::{Field, all, f};

const DEPRECATED: &str =
    "deprecated by Sveltos for the ClassifierReports' status; airlock-publisher ingest writes the ClassifierReports and none of this";

/// Classifier (lib.projectsveltos.io), cluster-scoped.
pub static CLASSIFIER_FIELDS: &[Field] = &[
    f(
        "spec.classifierLabels",
        Supported,
        "set on every SveltosCluster the Classifier matches by airlock-publisher ingest, and removed once it no longer matches; profiles select on them at the next publish",
    ),
    f(
        "spec.classifierLabels[].key",
        Differs,
        "a label key; one Classifier owns a key on a cluster at a time: the one whose ClassifierReport lists it as managed, else the first matching Classifier by name (Sveltos: the first its controller registered); the others record the key as unmanaged",
    ),
    f("spec.classifierLabels[].value", Supported, "the label's value"),
    f(
        "spec.kubernetesVersionConstraints",
        Supported,
        "decided by airlock-publisher ingest from the Kubernetes version the cluster's report carries (or the one ingested before), as major.minor.patch; every entry must hold",
    ),
    f(
        "spec.kubernetesVersionConstraints[].comparison",
        Supported,
        "Equal, NotEqual, GreaterThan, LessThan, GreaterThanOrEqualTo, LessThanOrEqualTo",
    ),
    f(
        "spec.kubernetesVersionConstraints[].version",
        Differs,
        "MAJOR[.MINOR[.PATCH]], missing parts 0; a pre-release or build suffix makes the Classifier unreadable (Sveltos compares it as a semantic version)",
    ),
    f(
        "spec.deployedResourceConstraint",
        Supported,
        "carried signed in every pull-mode cluster's bundle as an evaluation and evaluated by the puller on each run; the result travels back in the signed report",
    ),
    f(
        "spec.deployedResourceConstraint.aggregatedClassification",
        Supported,
        "Lua run by the puller's sandbox under the checks' budget, with every object kept as the global resources; a script that does not compile refuses the bundle before any write",
    ),
    f(
        "spec.deployedResourceConstraint.resourceSelectors",
        Supported,
        "each lists one kind on the cluster; without an aggregate the cluster matches when each keeps an object",
    ),
    f("spec.deployedResourceConstraint.resourceSelectors[].group", Supported, "the kind's group"),
    f("spec.deployedResourceConstraint.resourceSelectors[].version", Supported, "the kind's version"),
    f(
        "spec.deployedResourceConstraint.resourceSelectors[].kind",
        Supported,
        "the kind, found by discovery; a kind the cluster does not serve lists nothing",
    ),
    f("spec.deployedResourceConstraint.resourceSelectors[].namespace", Supported, "one namespace; empty means all"),
    f("spec.deployedResourceConstraint.resourceSelectors[].name", Supported, "only the object of that name"),
    all(
        "spec.deployedResourceConstraint.resourceSelectors[].labelFilters",
        Differs,
        "joined into the list's label selector: Equal key=value, Different key!=value, Has key, DoesNotHave !key (Sveltos's agent lists key!=value for every operation but Equal)",
    ),
    f(
        "spec.deployedResourceConstraint.resourceSelectors[].selector",
        Supported,
        "ANDed with the label filters in the list's label selector",
    ),
    all("spec.deployedResourceConstraint.resourceSelectors[].selector.matchExpressions", Supported, "In, NotIn, Exists, DoesNotExist"),
    f("spec.deployedResourceConstraint.resourceSelectors[].selector.matchLabels", Supported, "as selector"),
    f(
        "spec.deployedResourceConstraint.resourceSelectors[].evaluate",
        Supported,
        "Lua run by the puller's sandbox under the checks' budget, with the object as obj; an object is kept when it returns matching; a script that does not compile refuses the bundle before any write",
    ),
    all(
        "spec.deployedResourceConstraint.resourceSelectors[].evaluateCEL",
        Supported,
        "CEL over resource: an object is kept when one rule is true; a rule that does not compile refuses the bundle",
    ),
    all("status.clusterInfo", NotApplicable, DEPRECATED),
    all("status.machingClusterStatuses", NotApplicable, DEPRECATED),
];

/// ClassifierReport (lib.projectsveltos.io), one per (Classifier, cluster) pair in the
/// cluster's namespace, `sveltos--<classifier>--<cluster>`.
pub static CLASSIFIER_REPORT_FIELDS: &[Field] = &[
    f(
        "metadata.labels",
        Supported,
        "projectsveltos.io/classifier-name, classifier.projectsveltos.io/cluster-name and classifier.projectsveltos.io/cluster-type (sveltos), as libsveltos labels it",
    ),
    f("spec.classifierName", Supported, "the Classifier's name"),
    f("spec.clusterName", Supported, "the SveltosCluster's name"),
    f("spec.clusterNamespace", Supported, "the SveltosCluster's namespace"),
    f("spec.clusterType", Supported, "Sveltos"),
    f(
        "spec.match",
        Supported,
        "whether the cluster satisfies the version constraints and the puller found the deployed-resource constraint met; a report whose result is for another definition, or failed, leaves it as it was",
    ),
    f("status.managedLabels", Supported, "the label keys this Classifier owns on the cluster"),
    f("status.unmanagedLabels", Supported, "the keys it sets but another Classifier owns"),
    f("status.unmanagedLabels[].key", Supported, "the key"),
    f("status.unmanagedLabels[].failureMessage", Supported, "names the owning Classifier"),
    f(
        "status.phase",
        NotApplicable,
        "the delivery state of a report a Sveltos agent writes on the managed cluster; the signed report is the delivery, and ingest leaves it unset",
    ),
    f(
        "status.deploymentStatus",
        NotSupported,
        "never written: whether the Classifier reached the cluster shows as the definition's digest in the cluster's report, not here",
    ),
    f("status.failureMessage", NotSupported, "never written: a failed evaluation is the puller's warning and leaves the match as it was"),
    f("status.hash", NotSupported, "never written: the report names the definition it evaluated by its SHA-256 instead"),
];
