//! The fields of Sveltos's ClusterConfiguration that `airlock-publisher ingest` writes from
//! the pullers' reports (`ingest::addons`), declared like the fields the publisher reads so
//! that the compatibility document lists each one against the CRD. Nothing parses these:
//! no profile or cluster carries them.

use super::table::Class::{Differs, NotSupported, Supported};
use super::table::{Field, all, f};

/// ClusterConfiguration (config.projectsveltos.io), one per cluster, `sveltos--<name>`.
pub static CONFIGURATION_FIELDS: &[Field] = &[
    f(
        "metadata.annotations[airlock.dev/drift]",
        Differs,
        "Airlock's own: per profile (ClusterProfile/<name>, Profile/<name>), the objects found drifted and those corrected, totalled over the ingested reports, with the time and the corrected objects of the last report that found drift (the count Sveltos keeps in its projectsveltos_total_drifts metric; see Drift below)",
    ),
    f(
        "status.clusterProfileResources",
        Differs,
        "one entry per ClusterProfile the cluster's ingested reports show deployed or failing there; Sveltos lists every ClusterProfile matching the cluster, so one that deploys nothing there yet is missing until a report names it",
    ),
    f("status.clusterProfileResources[].clusterProfileName", Supported, "the ClusterProfile's name"),
    f(
        "status.clusterProfileResources[].Features",
        Differs,
        "Helm, when the profile has Helm releases on the cluster, and Resources, when it has objects there: a report does not say whether an object came from policyRefs, kustomizationRefs or helmCharts, so a release's objects are listed among the resources too",
    ),
    f("status.clusterProfileResources[].Features[].featureID", Differs, "Helm or Resources; never Kustomize"),
    f(
        "status.clusterProfileResources[].Features[].charts",
        Supported,
        "one entry per Helm release of the profile, from the releases the report of a run that applied a bundle lists (bundles-format.md 14.3); other reports keep them as recorded",
    ),
    f("status.clusterProfileResources[].Features[].charts[].releaseName", Supported, "the release's name"),
    f("status.clusterProfileResources[].Features[].charts[].namespace", Supported, "the release's namespace"),
    f(
        "status.clusterProfileResources[].Features[].charts[].chartVersion",
        Supported,
        "the exact chart version rendered (a range resolved)",
    ),
    f(
        "status.clusterProfileResources[].Features[].charts[].appVersion",
        Supported,
        "the appVersion of the chart's Chart.yaml; absent when it declares none",
    ),
    f("status.clusterProfileResources[].Features[].charts[].repoURL", Supported, "the profile's repositoryURL, templates rendered"),
    f(
        "status.clusterProfileResources[].Features[].charts[].lastAppliedTime",
        Differs,
        "when the run that installed or upgraded the release finished; a release nothing of which changed keeps the time recorded before",
    ),
    f(
        "status.clusterProfileResources[].Features[].charts[].icon",
        NotSupported,
        "never written: the chart's icon is not carried to the cluster and back",
    ),
    f(
        "status.clusterProfileResources[].Features[].resources",
        Supported,
        "every object of the profile the cluster runs: after a run that applied a new bundle, what it lists; after other runs, what was recorded with what they changed (pruned objects removed)",
    ),
    f("status.clusterProfileResources[].Features[].resources[].group", Supported, "the object's identity as the report gives it"),
    f("status.clusterProfileResources[].Features[].resources[].version", Supported, "as `group`"),
    f("status.clusterProfileResources[].Features[].resources[].kind", Supported, "as `group`"),
    f("status.clusterProfileResources[].Features[].resources[].name", Supported, "as `group`"),
    f("status.clusterProfileResources[].Features[].resources[].namespace", Supported, "as `group`; absent for cluster-scoped objects"),
    f("status.clusterProfileResources[].Features[].resources[].deploymentType", Supported, "always Remote: Local parts are never sent"),
    f(
        "status.clusterProfileResources[].Features[].resources[].lastAppliedTime",
        Differs,
        "when the run that created, configured, drift-corrected, recreated or restarted it finished; an object a run left unchanged keeps the time recorded before (Sveltos sets the time of every deployment that re-applies it)",
    ),
    all(
        "status.profileResources",
        Supported,
        "as status.clusterProfileResources, for the Profiles of the cluster's namespace (profileName)",
    ),
];
