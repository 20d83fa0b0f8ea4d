//! The fields of Sveltos's HealthCheck, which the publisher carries to the pull-mode
//! clusters a ClusterHealthCheck selects (bundles-format.md 5.14), of the
//! ClusterHealthCheck, which the publisher and ingest read and whose status ingest
//! writes, and of the HealthCheckReport ingest writes (bundles-format.md 14.5), declared
//! so that the compatibility document lists each one against the CRDs. None earns notes
//! (no part carries them), so what they do differently is said here only.

use super::table::Class::{Differs, NotApplicable, NotSupported, Supported};
use super::table::{Field, all, f};

const REFERENCE: &str = "not read: a reference is by kind, apiVersion, name and namespace";

/// HealthCheck (lib.projectsveltos.io), cluster-scoped.
pub static HEALTH_CHECK_FIELDS: &[Field] = &[
    f(
        "spec.resourceSelectors",
        Supported,
        "carried signed in the bundle of every pull-mode cluster a ClusterHealthCheck naming it selects, and evaluated by the puller on each run; each lists one kind on the cluster",
    ),
    f("spec.resourceSelectors[].group", Supported, "the kind's group"),
    f("spec.resourceSelectors[].version", Supported, "the kind's version"),
    f("spec.resourceSelectors[].kind", Supported, "the kind, found by discovery; a kind the cluster does not serve lists nothing"),
    f("spec.resourceSelectors[].namespace", Supported, "one namespace; empty means all"),
    f("spec.resourceSelectors[].name", Supported, "only the object of that name"),
    all(
        "spec.resourceSelectors[].labelFilters",
        Differs,
        "joined into the list's label selector: Equal key=value, Different key!=value, Has key, DoesNotHave !key (Sveltos's agent lists key!=value for every operation but Equal)",
    ),
    f("spec.resourceSelectors[].selector", Supported, "ANDed with the label filters in the list's label selector"),
    all("spec.resourceSelectors[].selector.matchExpressions", Supported, "In, NotIn, Exists, DoesNotExist"),
    f("spec.resourceSelectors[].selector.matchLabels", Supported, "as selector"),
    f(
        "spec.resourceSelectors[].evaluate",
        Supported,
        "Lua run by the puller's sandbox under the checks' budget, with the object as obj; an object is kept when it returns matching",
    ),
    all("spec.resourceSelectors[].evaluateCEL", Supported, "CEL over resource: an object is kept when one rule is true"),
    f(
        "spec.evaluateHealth",
        Differs,
        "Lua run once by the puller's sandbox under the checks' budget with every object kept as resources; must parse when published (else the HealthCheck is carried to no cluster); each returned entry needs a resource table and one of Healthy, Progressing, Degraded, Suspended, else the result is an error; at most 256 entries; the identity is the returned resource's, the collected object the listed one of that identity; reEvaluate is ignored (the puller evaluates on each run)",
    ),
    f(
        "spec.collectResources",
        Differs,
        "the listed object, without metadata.managedFields, travels in the report when at most 16 KiB and within 1 MiB for all of a report's; never a Secret",
    ),
    f(
        "spec.evaluateIndependently",
        NotApplicable,
        "a memory-saving batch mode of Sveltos's agent; the puller's budget bounds the one evaluation, which sees every object",
    ),
];

/// ClusterHealthCheck (lib.projectsveltos.io), cluster-scoped.
pub static CLUSTER_HEALTH_CHECK_FIELDS: &[Field] = &[
    f(
        "spec.clusterSelector",
        Supported,
        "the clusters whose bundles carry the HealthChecks its liveness checks name, and whose reports ingest judges; an empty selector selects none",
    ),
    all("spec.clusterSelector.matchExpressions", Supported, "In, NotIn, Exists, DoesNotExist"),
    f("spec.clusterSelector.matchLabels", Supported, "as clusterSelector"),
    f("spec.livenessChecks", Supported, "judged by airlock-publisher ingest for each report of a selected cluster"),
    f("spec.livenessChecks[].name", Supported, "the condition's name"),
    f(
        "spec.livenessChecks[].type",
        Differs,
        "HealthCheck: passes when the HealthCheckReport exists and every object in it is Healthy; Addons: passes when no ClusterProfile or Profile lists the cluster in status.failedClusters (which ingest writes), where Sveltos reads the ClusterSummaries' feature status",
    ),
    f("spec.livenessChecks[].livenessSourceRef", Supported, "for type HealthCheck: the lib.projectsveltos.io/v1beta1 HealthCheck"),
    f("spec.livenessChecks[].livenessSourceRef.apiVersion", Supported, "lib.projectsveltos.io/v1beta1"),
    f("spec.livenessChecks[].livenessSourceRef.kind", Supported, "HealthCheck"),
    f("spec.livenessChecks[].livenessSourceRef.name", Supported, "the HealthCheck's name"),
    f("spec.livenessChecks[].livenessSourceRef.namespace", NotApplicable, "a HealthCheck is cluster-scoped"),
    f("spec.livenessChecks[].livenessSourceRef.fieldPath", NotApplicable, REFERENCE),
    f("spec.livenessChecks[].livenessSourceRef.resourceVersion", NotApplicable, REFERENCE),
    f("spec.livenessChecks[].livenessSourceRef.uid", NotApplicable, REFERENCE),
    f(
        "spec.notifications",
        Differs,
        "sent by airlock-publisher ingest when some liveness check passes or fails where it did not before (or was never judged), and retried while not delivered; Sveltos also sends again when a failing check's message changes",
    ),
    f("spec.notifications[].name", Supported, "its summary's name in the status"),
    f(
        "spec.notifications[].type",
        Differs,
        "KubernetesEvent (an Event on the ClusterHealthCheck in namespace default, reason ClusterHealthCheck) and Teams (an adaptive card POSTed to the webhook URL) are sent; Slack, Webex, Discord, Telegram and SMTP are recorded FailedToDeliver, naming the type",
    ),
    f(
        "spec.notifications[].notificationRef",
        Supported,
        "for Teams: a v1 Secret of type addons.projectsveltos.io/cluster-profile whose TEAMS_WEBHOOK_URL is an http or https URL, never logged beyond its scheme and host",
    ),
    f("spec.notifications[].notificationRef.apiVersion", Supported, "v1"),
    f("spec.notifications[].notificationRef.kind", Supported, "Secret"),
    f("spec.notifications[].notificationRef.name", Supported, "the Secret's name"),
    f("spec.notifications[].notificationRef.namespace", Supported, "the Secret's namespace"),
    f("spec.notifications[].notificationRef.fieldPath", NotApplicable, REFERENCE),
    f("spec.notifications[].notificationRef.resourceVersion", NotApplicable, REFERENCE),
    f("spec.notifications[].notificationRef.uid", NotApplicable, REFERENCE),
    f(
        "status.clusterCondition",
        Supported,
        "written by ingest, one entry per selected cluster (removed when it is no longer selected); what it records decides what the next ingest sends",
    ),
    f("status.clusterCondition[].clusterInfo", Supported, "the cluster"),
    all("status.clusterCondition[].clusterInfo.cluster", Supported, "the SveltosCluster: apiVersion, kind, namespace, name"),
    f(
        "status.clusterCondition[].clusterInfo.hash",
        Differs,
        "base64 of the SHA-256 of the digests of the HealthChecks the cluster carries",
    ),
    f(
        "status.clusterCondition[].clusterInfo.status",
        Differs,
        "Provisioned: there is nothing to deploy to a pull-mode cluster beyond the bundle",
    ),
    f("status.clusterCondition[].clusterInfo.failureMessage", NotSupported, "never written"),
    f("status.clusterCondition[].conditions", Supported, "one per liveness check"),
    f("status.clusterCondition[].conditions[].type", Supported, "<type>:<name>"),
    f("status.clusterCondition[].conditions[].name", Supported, "the liveness check's name"),
    f("status.clusterCondition[].conditions[].status", Supported, "True when passing, False when not"),
    f("status.clusterCondition[].conditions[].severity", Supported, "Warning when failing"),
    f("status.clusterCondition[].conditions[].message", Supported, "what fails, one line per object as Sveltos words it"),
    f(
        "status.clusterCondition[].conditions[].lastTransitionTime",
        Differs,
        "when the status last changed (Sveltos writes the time of each evaluation)",
    ),
    f("status.clusterCondition[].conditions[].reason", NotSupported, "never written, as by Sveltos"),
    f("status.clusterCondition[].notificationSummaries", Supported, "one per notification"),
    f("status.clusterCondition[].notificationSummaries[].name", Supported, "the notification's name"),
    f("status.clusterCondition[].notificationSummaries[].status", Supported, "Delivered or FailedToDeliver"),
    f(
        "status.clusterCondition[].notificationSummaries[].failureMessage",
        Supported,
        "why it was not delivered, the webhook named by scheme and host",
    ),
    all("status.matchingClusters", Supported, "the SveltosClusters it selects, as their reports are ingested"),
];

/// HealthCheckReport (lib.projectsveltos.io), one per (HealthCheck, cluster) pair in the
/// cluster's namespace, `sveltos--<healthcheck>--<cluster>`.
pub static HEALTH_CHECK_REPORT_FIELDS: &[Field] = &[
    f(
        "metadata.labels",
        Supported,
        "projectsveltos.io/healthcheck-name, healthcheckreport.projectsveltos.io/cluster-name and healthcheckreport.projectsveltos.io/cluster-type (sveltos), as libsveltos labels it",
    ),
    f("spec.clusterName", Supported, "the SveltosCluster's name"),
    f("spec.clusterNamespace", Supported, "the SveltosCluster's namespace"),
    f("spec.clusterType", Supported, "Sveltos"),
    f("spec.healthCheckName", Supported, "the HealthCheck's name"),
    f(
        "spec.resourceStatuses",
        Supported,
        "each object the puller's evaluateHealth judged, from a report of the HealthCheck's current definition without error; at most 256",
    ),
    f("spec.resourceStatuses[].healthStatus", Supported, "Healthy, Progressing, Degraded or Suspended"),
    f("spec.resourceStatuses[].message", Supported, "the script's message, at most 1,024 bytes; withheld for a Secret"),
    f("spec.resourceStatuses[].objectRef", Supported, "the object"),
    f("spec.resourceStatuses[].objectRef.apiVersion", Supported, "as the script returned it"),
    f("spec.resourceStatuses[].objectRef.kind", Supported, "as the script returned it"),
    f("spec.resourceStatuses[].objectRef.name", Supported, "as the script returned it"),
    f("spec.resourceStatuses[].objectRef.namespace", Supported, "absent for a cluster-scoped object"),
    f("spec.resourceStatuses[].objectRef.fieldPath", NotApplicable, REFERENCE),
    f("spec.resourceStatuses[].objectRef.resourceVersion", NotSupported, "never written"),
    f("spec.resourceStatuses[].objectRef.uid", NotSupported, "never written"),
    f("spec.resourceStatuses[].resource", Differs, "with collectResources, within the bounds of spec.collectResources"),
    f(
        "status.phase",
        NotApplicable,
        "the delivery state of a report a Sveltos agent writes on the managed cluster; the signed report is the delivery, and ingest leaves it unset",
    ),
];
