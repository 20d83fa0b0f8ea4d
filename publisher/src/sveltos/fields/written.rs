//! The fields of Sveltos's ClusterConfiguration that `airlock-publisher ingest` writes from
//! the pullers' reports (`ingest::addons`), declared like the fields the publisher reads so
//! that the compatibility document lists each one against the CRD. Nothing parses these:
//! no profile or cluster carries them.

use super::table::Class::{Differs, NotSupported, Supported};
use super::table::{Field, all, f};

/// ClusterConfiguration (config.projectsveltos.io), one per cluster, `sveltos--<name>`.
pub static CONFIGURATION_FIELDS: &[Field] = &[
    f(
        "status.clusterProfileResources",
        Differs,
        "one entry per ClusterProfile the cluster's ingested reports show deployed or failing there; Sveltos lists every ClusterProfile matching the cluster, so one that deploys nothing there yet is missing until a report names it",
    ),
    f("status.clusterProfileResources[].clusterProfileName", Supported, "the ClusterProfile's name"),
    f(
        "status.clusterProfileResources[].Features",
        Differs,
        "one feature, Resources, when the profile has objects on the cluster: a report does not say whether an object came from policyRefs, kustomizationRefs or helmCharts",
    ),
    f("status.clusterProfileResources[].Features[].featureID", Differs, "always Resources"),
    all(
        "status.clusterProfileResources[].Features[].charts",
        NotSupported,
        "never written: a report names no Helm release, chart or chart version, so a chart's objects are listed among the resources",
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
