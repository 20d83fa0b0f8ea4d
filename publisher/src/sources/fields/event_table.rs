//! The fields of Sveltos's EventSource and EventTrigger, which the publisher reads (the
//! EventSources carried to the clusters the triggers watch, bundles-format.md 5.14; the
//! triggers instantiated from EventReports, 14.5), and of the EventReport ingest writes,
//! declared so that the compatibility document lists each one against the CRDs. What an
//! instance does with a ClusterProfile field is the ClusterProfile table's.

use super::table::Class::{Differs, NotApplicable, NotSupported, Supported};
use super::table::{Field, all, f};

const AS_PROFILE: &str =
    "carried into each instance as written; the ClusterProfile table says how it is honoured, and its templates see the event";
const SELECTOR_AS_CLASSIFIER: &str = "as a Classifier's resource selector";

/// EventSource (lib.projectsveltos.io), cluster-scoped.
pub static EVENT_SOURCE_FIELDS: &[Field] = &[
    f(
        "spec.resourceSelectors",
        Supported,
        "carried signed in the bundle of every pull-mode cluster an EventTrigger naming it watches, evaluated by the puller on each run with the Classifier's evaluator; the objects every selector keeps make the event",
    ),
    all("spec.resourceSelectors[]", Supported, SELECTOR_AS_CLASSIFIER),
    all(
        "spec.resourceSelectors[].labelFilters",
        Differs,
        "joined into the list's label selector: Equal key=value, Different key!=value, Has key, DoesNotHave !key (Sveltos's agent lists key!=value for every operation but Equal)",
    ),
    f(
        "spec.aggregatedSelection",
        Differs,
        "Lua run by the puller's sandbox under the checks' budget with every object kept as resources; each object it returns is taken as the name of a kept object, which is reported as listed (Sveltos reports the returned object as the script wrote it); one naming no kept object is left out",
    ),
    f(
        "spec.collectResources",
        Differs,
        "the matching objects travel whole in the signed report, without managedFields, a Secret without data and stringData (Sveltos sends a Secret whole); at most 256 objects and 256 KiB per EventSource, 2 MiB per report, beyond which the result is an error",
    ),
    all(
        "spec.messagingMatchCriteria",
        NotApplicable,
        "CloudEvents reach a cluster over Sveltos's NATS link, which a pull-mode cluster does not have: an EventSource that sets it is refused, naming the field, and carried to no cluster",
    ),
];

/// EventTrigger (lib.projectsveltos.io), cluster-scoped.
pub static EVENT_TRIGGER_FIELDS: &[Field] = &[
    f("spec.eventSourceName", Supported, "the EventSource carried to the clusters the trigger watches"),
    all("spec.sourceClusterSelector", Supported, "the clusters it watches, by their labels; an empty selector selects none"),
    f("spec.clusterSetRefs", Supported, "ClusterSets whose selected clusters it watches"),
    f(
        "spec.oneForEvent",
        Supported,
        "one ClusterProfile instance per matching object (true) or one per cluster; instances are named sveltos-<hex> from the trigger, the cluster and the object, so an event keeps its part from publish to publish",
    ),
    f(
        "spec.profileNameFormat",
        NotSupported,
        "instances are named from the trigger, the cluster and the object so their parts stay stable; the format is ignored",
    ),
    all(
        "spec.destinationClusterSelector",
        NotSupported,
        "add-ons go to the cluster the event happened in: a trigger that sets it is refused, naming the field",
    ),
    all(
        "spec.destinationCluster",
        NotSupported,
        "add-ons go to the cluster the event happened in: a trigger that sets it is refused, naming the field",
    ),
    f("spec.cloudEventAction", NotApplicable, "CloudEvents do not reach a pull-mode cluster (EventSource messagingMatchCriteria)"),
    all(
        "spec.configMapGenerator",
        NotSupported,
        "never read: instances reference the trigger's ConfigMaps and Secrets, templated in place with projectsveltos.io/instantiate",
    ),
    all(
        "spec.secretGenerator",
        NotSupported,
        "never read: instances reference the trigger's ConfigMaps and Secrets, templated in place with projectsveltos.io/instantiate",
    ),
    all(
        "spec.policyRefs",
        Differs,
        "carried into each instance; names and namespaces are templates over the event, and a ConfigMap or Secret annotated projectsveltos.io/instantiate is rendered as a template over the event and the cluster in one pass (Sveltos writes an instantiated copy in the management cluster first)",
    ),
    all("spec.helmCharts", Supported, AS_PROFILE),
    all("spec.kustomizationRefs", Supported, AS_PROFILE),
    all("spec.templateResourceRefs", Supported, AS_PROFILE),
    all("spec.patches", Supported, AS_PROFILE),
    all("spec.patchesFrom", Supported, AS_PROFILE),
    all("spec.driftExclusions", Supported, AS_PROFILE),
    all("spec.validateHealths", Supported, AS_PROFILE),
    all("spec.preDeployChecks", Supported, AS_PROFILE),
    all("spec.preDeleteChecks", Supported, AS_PROFILE),
    all("spec.postDeleteChecks", Supported, AS_PROFILE),
    all("spec.extraLabels", Supported, AS_PROFILE),
    all("spec.extraAnnotations", Supported, AS_PROFILE),
    f("spec.dependsOn", Supported, AS_PROFILE),
    f("spec.continueOnConflict", Supported, AS_PROFILE),
    f("spec.maxUpdate", Supported, AS_PROFILE),
    f("spec.reloader", Supported, AS_PROFILE),
    f("spec.stopMatchingBehavior", Supported, AS_PROFILE),
    f("spec.syncMode", Supported, AS_PROFILE),
    f("spec.tier", Supported, AS_PROFILE),
    all("status.clusterInfo", NotSupported, "never written: each cluster's report says what its instances did"),
    all(
        "status.matchingClusters",
        NotSupported,
        "never written: which clusters a trigger watches shows as the EventSource in their bundles",
    ),
    all("status.destinationMatchingClusterRefs", NotApplicable, "add-ons go to the cluster the event happened in"),
];

/// EventReport (lib.projectsveltos.io), one per (EventSource, cluster) pair in the
/// cluster's namespace, `sveltos--<eventsource>--<cluster>`, while the event happens.
pub static EVENT_REPORT_FIELDS: &[Field] = &[
    f(
        "metadata.labels",
        Supported,
        "projectsveltos.io/eventsource-name, eventreport.projectsveltos.io/cluster-name and eventreport.projectsveltos.io/cluster-type (sveltos), as libsveltos labels it",
    ),
    f("spec.eventSourceName", Supported, "the EventSource's name"),
    f("spec.clusterName", Supported, "the SveltosCluster's name"),
    f("spec.clusterNamespace", Supported, "the SveltosCluster's namespace"),
    f("spec.clusterType", Supported, "Sveltos"),
    f(
        "spec.matchingResources",
        Differs,
        "the objects that make the event, from the cluster's signed report; the EventReport is deleted when none is left (Sveltos's agent keeps it with an empty list); the add-ons follow the event after one report, one ingest, one publish and one pull",
    ),
    f("spec.matchingResources[].apiVersion", Supported, "the object's apiVersion"),
    f("spec.matchingResources[].kind", Supported, "the object's kind"),
    f("spec.matchingResources[].name", Supported, "the object's name"),
    f("spec.matchingResources[].namespace", Supported, "the object's namespace, absent when cluster-scoped"),
    f("spec.matchingResources[].uid", NotSupported, "never written: the report names objects by kind, namespace and name"),
    f("spec.matchingResources[].resourceVersion", NotSupported, "never written: the report names objects by kind, namespace and name"),
    f("spec.matchingResources[].fieldPath", NotSupported, "never written: Sveltos leaves it empty too"),
    f(
        "spec.resources",
        Differs,
        "with collectResources: each collected object's JSON followed by ---, as Sveltos's agent writes it, within the report's bounds and without Secret data",
    ),
    f("spec.cloudEvents", NotApplicable, "CloudEvents do not reach a pull-mode cluster"),
    f(
        "status.phase",
        NotApplicable,
        "the delivery state of a report a Sveltos agent writes on the managed cluster; the signed report is the delivery, and ingest leaves it unset",
    ),
    f(
        "status.failureMessage",
        NotSupported,
        "never written: an instance that cannot render is the publisher's failure for that cluster's part",
    ),
];
