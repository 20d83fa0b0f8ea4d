//! The fields of Sveltos's ClusterProfile and Profile (their specs are identical), each
//! with what airlock-publisher does with it; the types and the other kinds' tables are in
//! `table`.

use super::table::Class::{Differs, NotApplicable, NotSupported, Supported};
use super::table::{Field, IGNORED, STATUS, all, f};

/// ClusterProfile and Profile.
pub static PROFILE_FIELDS: &[Field] = &[
    f(
        "metadata.annotations[profile.projectsveltos.io/paused]",
        Supported,
        "a paused profile is not reconciled: each cluster keeps what the profile deployed there, and no cluster gets it anew",
    ),
    f(
        "metadata.labels[projectsveltos.io/serviceaccount-name]",
        Differs,
        "with serviceaccount-namespace, the tenant: signed in the part's settings, and every write of the part at the edge (apply, prune, drift correction, hooks, Job checks) impersonates that ServiceAccount, so the cluster's RBAC holds the tenant to its rights (bundles-format.md 5.13); both labels or neither, each a Kubernetes name, else the profile fails. Unlike Sveltos, which deploys as the ServiceAccount <namespace>--<name> its RoleRequest makes in its own namespace, the puller impersonates the ServiceAccount of the labels' namespace and name on the managed cluster, which the RoleRequest part or the operator creates and register --tenant lets the puller impersonate; the part depends on the RoleRequest parts granting that tenant on the cluster, so they are applied first",
    ),
    f(
        "metadata.labels[projectsveltos.io/serviceaccount-namespace]",
        Differs,
        "as metadata.labels[projectsveltos.io/serviceaccount-name]; copied as it is for a namespaced Profile too, as Sveltos copies it (not defaulted to the Profile's namespace); a contained puller refuses a namespace outside its watch-namespaces",
    ),
    f(
        "metadata.annotations[projectsveltos.io/tex-template]",
        Differs,
        "no effect: reference names are rendered without the HTML escaping Sveltos applies when it is absent (names cannot hold the escaped characters)",
    ),
    all("spec.clusterSelector", Supported, "a label selector over SveltosCluster labels; an empty selector matches nothing, as in Sveltos"),
    f("spec.clusterRefs", Supported, "clusters named outright, added to what clusterSelector matches"),
    f(
        "spec.clusterRefs[].kind",
        Differs,
        "SveltosCluster; a CAPI Cluster is never a pull-mode cluster, so such a reference gets a not-applicable note and matches nothing",
    ),
    f("spec.clusterRefs[].name", Supported, "the cluster's name"),
    f("spec.clusterRefs[].namespace", Supported, "the cluster's namespace; a Profile's own namespace replaces it, as in Sveltos"),
    f("spec.clusterRefs[].apiVersion", Supported, IGNORED),
    f("spec.clusterRefs[].fieldPath", Supported, IGNORED),
    f("spec.clusterRefs[].resourceVersion", Supported, IGNORED),
    f("spec.clusterRefs[].uid", Supported, IGNORED),
    f(
        "spec.setRefs",
        Differs,
        "the clusters a ClusterSet (ClusterProfile) or a Set of the Profile's namespace lists in status.selectedClusterRefs, as Sveltos's set controller writes it: from --from-dir the status must be in the files; a set that does not exist selects nothing",
    ),
    f("spec.syncMode", Supported, "relayed to the puller (bundles-format.md 5.3)"),
    f(
        "spec.tier",
        Supported,
        "the lower tier wins an object two profiles deploy; relayed to the puller, which decides the same way between parts",
    ),
    f(
        "spec.dependsOn",
        Supported,
        "each prerequisite is deployed to every cluster a dependent matches, even where its own selector does not (Sveltos's --auto-deploy-dependencies default), and applied first; a dependent whose prerequisite does not exist or never rendered is held back",
    ),
    f("spec.stopMatchingBehavior", Supported, "relayed to the puller"),
    f(
        "spec.continueOnConflict",
        Differs,
        "profiles are reconciled when publishing, not on the cluster: of two profiles deploying one object at one tier, the one whose part holds it in the store keeps it (else the first by part name), as Sveltos lets the first deployer keep it; the other fails (keeping its last good part), or with continueOnConflict publishes without that object; a Helm release two profiles deploy goes whole to one (the lower tier, else the part holding it, else the first by part name), and the other fails alike or, with continueOnConflict, publishes without any of the release and with a note (docs/helm.md)",
    ),
    f("spec.continueOnError", Supported, "relayed to the puller (bundles-format.md 5.7)"),
    f("spec.maxConsecutiveFailures", Supported, "relayed to the puller (bundles-format.md 5.7)"),
    f(
        "spec.maxUpdate",
        Differs,
        "honoured across publishes: of the matching clusters, at most this many (a percentage rounds up; 0 means all) take a new version of the profile at once, in namespace/name order; the others keep the part they hold, marked held back, until the updating clusters' ingested reports show their bundle applied (docs/rollout.md)",
    ),
    f(
        "spec.reloader",
        Differs,
        "the puller digests, each run, the ConfigMaps and Secrets each Deployment, StatefulSet and DaemonSet of the profile mounts as a volume, and restarts one whose digest moved with the pod-template annotation airlock.dev/restarted-at, as kubectl rollout restart does: a change is found at the puller's next run, not when it happens",
    ),
    all("spec.extraLabels", Supported, "set on every object the profile deploys, after patches, as Sveltos does in push mode"),
    all("spec.extraAnnotations", Supported, "set on every object the profile deploys, after patches, as Sveltos does in push mode"),
    f("spec.templateResourceRefs", Supported, "management-cluster objects templates and Lua see by identifier"),
    f("spec.templateResourceRefs[].identifier", Supported, "the key in .MgmtResources, getResource and Lua's resources"),
    f("spec.templateResourceRefs[].optional", Supported, "a missing object is left out instead of failing the profile"),
    f(
        "spec.templateResourceRefs[].ignoreStatusChanges",
        Supported,
        "the object's status is removed before templates see it, as Sveltos does",
    ),
    f(
        "spec.templateResourceRefs[].watchFields",
        Differs,
        "Sveltos re-renders only when these fields change; the publisher re-renders on any change of the object, and a bundle changes only when the rendered output does",
    ),
    f("spec.templateResourceRefs[].resource", Supported, "which object"),
    f("spec.templateResourceRefs[].resource.apiVersion", Supported, "its API version"),
    f("spec.templateResourceRefs[].resource.kind", Supported, "its kind"),
    f(
        "spec.templateResourceRefs[].resource.name",
        Supported,
        "a template over .Cluster, .ClusterNamespace and .ClusterName, resolved per cluster",
    ),
    f(
        "spec.templateResourceRefs[].resource.namespace",
        Differs,
        "a template like the name; empty means the cluster's namespace; a Profile may read only its own namespace (Sveltos leaves that to RBAC), so another fails the profile",
    ),
    f("spec.templateResourceRefs[].resource.fieldPath", Supported, IGNORED),
    f("spec.templateResourceRefs[].resource.resourceVersion", Supported, IGNORED),
    f("spec.templateResourceRefs[].resource.uid", Supported, IGNORED),
    f("spec.policyRefs", Supported, "the ConfigMaps and Secrets whose data keys hold the manifests to deploy, in order"),
    f(
        "spec.policyRefs[].kind",
        Differs,
        "ConfigMap, and Secret of type addons.projectsveltos.io/cluster-profile; a Flux source (GitRepository, OCIRepository, Bucket) is not read yet: such a reference gets a not-supported note and is skipped",
    ),
    f(
        "spec.policyRefs[].name",
        Supported,
        "a template over .Cluster, .ClusterNamespace and .ClusterName, resolved per cluster before the lookup",
    ),
    f(
        "spec.policyRefs[].namespace",
        Supported,
        "a template like the name; empty means the cluster's namespace; a Profile's own namespace replaces it, as in Sveltos",
    ),
    f(
        "spec.policyRefs[].path",
        Differs,
        "applies to Flux sources only, which are not read; ignored on a ConfigMap or Secret, as Sveltos ignores it",
    ),
    f(
        "spec.policyRefs[].deploymentType",
        Differs,
        "Remote is deployed; Local is deployed by Sveltos to the management cluster, so it is not sent and gets a not-applicable note",
    ),
    f("spec.policyRefs[].tier", Supported, "the lower tier wins an object two references of the profile deploy; a tie fails the profile"),
    f("spec.policyRefs[].optional", Supported, "a missing object is skipped instead of failing the profile"),
    f(
        "spec.policyRefs[].skipNamespaceCreation",
        Supported,
        "without it, the bundle carries a bare Namespace, created only when missing, for each namespace the reference's objects name",
    ),
    f(
        "spec.policyRefs[].force",
        Differs,
        "each object of the reference carries airlock.dev/force-recreate: \"true\"; an update the API server refuses as Invalid (422) or for an immutable field makes the puller delete the object in the foreground, wait up to 60s for it to go, and apply it again (reported recreated); projectsveltos.io/forceRecreate, any value, does the same for one object",
    ),
    f(
        "spec.policyRefs[].remoteURL",
        Supported,
        "fetched by the publisher and read as a ConfigMap's data: a YAML or JSON document, gzip, tar or tar.gz of .yaml/.yml/.json files (docs/remote-url.md)",
    ),
    f(
        "spec.policyRefs[].remoteURL.url",
        Supported,
        "http://, https:// or oci://; bodies over 16 MiB, or inflating past 64 MiB, fail the profile",
    ),
    f("spec.policyRefs[].remoteURL.plainHTTP", Supported, "oci:// only: the registry is spoken to over http"),
    f("spec.policyRefs[].remoteURL.insecureSkipTLSVerify", Supported, "ignored when the Secret has caFile"),
    all(
        "spec.policyRefs[].remoteURL.secretRef",
        Differs,
        "token (bearer), username and password (basic, and for a registry's token service), caFile; a Profile reads only a Secret of its own namespace",
    ),
    f("spec.policyRefs[].remoteURL.template", Supported, "the content is templated as a ConfigMap with projectsveltos.io/template is"),
    f(
        "spec.policyRefs[].remoteURL.interval",
        Differs,
        "watch fetches again once it passed (default 5m0s); a publish run fetches once, so the interval is how often it is run",
    ),
    all(
        "spec.patches",
        Supported,
        "templated, then applied to every object the profile renders, as kustomize does (strategic merge and JSON 6902, with target selectors); a JSON 6902 remove of a path the object lacks is dropped for that object, as Sveltos drops it, with a skipped note",
    ),
    all(
        "spec.patchesFrom",
        Supported,
        "each data value a {patch, target} entry, templated when the object has projectsveltos.io/template; applied after spec.patches, templated entries first",
    ),
    f(
        "spec.helmCharts",
        Differs,
        "rendered on the management side by the helm binary (v3 or v4; --helm, else PATH), as helm template renders an install against the cluster's reported Kubernetes version; the release's CRDs, objects and install and upgrade hooks are published as the profile's objects; the puller fires the hooks around the release's objects in Helm's phases; no Helm release record is written on the cluster (docs/helm.md)",
    ),
    f(
        "spec.helmCharts[].repositoryURL",
        Supported,
        "http(s) repositories serving index.yaml, and oci:// registries; Flux source URLs fail the profile",
    ),
    f("spec.helmCharts[].repositoryName", Supported, "the prefix of an HTTP repository's chartName"),
    f("spec.helmCharts[].chartName", Supported, "repositoryName/chart for an HTTP repository, the bare chart name for OCI"),
    f(
        "spec.helmCharts[].chartVersion",
        Differs,
        "an exact version or a semver range, a template over the cluster like every field of the entry (one line; checked as a version before helm sees it), resolved once per publish run; the exact version and the archive's digest are part of what a cluster's rendering reads",
    ),
    f(
        "spec.helmCharts[].releaseName",
        Supported,
        "the release name the chart renders with, a template over the cluster, checked as a Helm release name",
    ),
    f(
        "spec.helmCharts[].releaseNamespace",
        Supported,
        "the release namespace; objects the chart leaves without a namespace are put there (cluster-scoped kinds drop it at the puller)",
    ),
    f(
        "spec.helmCharts[].helmChartAction",
        Differs,
        "Uninstall publishes the chart's delete hooks alone: the puller fires pre-delete, prunes what the release deployed, then fires post-delete; hooks are left in place. An entry dropped from a profile, or a profile that stops matching (WithdrawPolicies), carries the release's delete hooks until the cluster reports the uninstall",
    ),
    f("spec.helmCharts[].values", Supported, "a template over the cluster's data, then a YAML map of values"),
    all(
        "spec.helmCharts[].valuesFrom",
        Supported,
        "each data value a YAML map merged over values (maps key by key): the objects without projectsveltos.io/template first, then those with it, templated, each in list order; a Profile reads only its own namespace",
    ),
    all(
        "spec.helmCharts[].registryCredentialsConfig",
        Supported,
        "credentials (a Secret holding a Docker config JSON; key names its data key), ca (the Secret's ca.crt), plainHTTP, insecureSkipTLSVerify",
    ),
    all(
        "spec.helmCharts[].options",
        Differs,
        "skipCRDs, disableHooks, skipSchemaValidation, passCredentialsAll, postRenderStrategy, installOptions.createNamespace and upgradeOptions.upgradeCRDs change the render; timeout, runTests and install/upgrade/uninstallOptions.disableHooks how the puller fires hooks; wait, waitForJobs, atomic, upgradeOptions.cleanupOnFail, upgradeOptions.force and uninstallOptions.deletionPropagation how it applies and prunes the release (atomic cannot roll changed objects back, and says so in a note); every other option set away from its default gets a note of its own (docs/helm.md)",
    ),
    all(
        "spec.helmCharts[].provenanceVerification",
        NotSupported,
        "chart provenance is not verified, so a chart that asks for it is not rendered and fails the profile",
    ),
    all(
        "spec.helmCharts[].signatureVerification",
        NotSupported,
        "chart signatures are not verified, so a chart that asks for it is not rendered and fails the profile",
    ),
    f(
        "spec.kustomizationRefs",
        Differs,
        "built on the management side with the kustomize inside kubectl (kubectl kustomize --load-restrictor LoadRestrictionsNone; plugins off), found on PATH or given by --kubectl; the objects go through extra labels and tiers like a policyRef's, but not through spec.patches, which Sveltos applies to policyRefs and charts only (docs/helm.md, Kustomize)",
    ),
    f(
        "spec.kustomizationRefs[].kind",
        Differs,
        "ConfigMap (binaryData kustomize.tar.gz), Secret of type addons.projectsveltos.io/cluster-profile (data kustomize.tar.gz), a Flux GitRepository (url, ref branch/tag/commit/name) and a Flux OCIRepository (url, ref tag/digest, layerSelector, insecure) the publisher fetches itself, anonymously, read as source.toolkit.fluxcd.io/v1 or, where the management cluster serves only that, v1beta2 (Sveltos reads v1 alone); a Bucket gets a not-supported note and is skipped",
    ),
    f(
        "spec.kustomizationRefs[].name",
        Supported,
        "a template over .Cluster, .ClusterNamespace and .ClusterName, resolved per cluster before the lookup",
    ),
    f(
        "spec.kustomizationRefs[].namespace",
        Supported,
        "a template like the name; empty means the cluster's namespace; a Profile's own namespace replaces it, as in Sveltos",
    ),
    f(
        "spec.kustomizationRefs[].path",
        Supported,
        "a template, joined to the source tree as Sveltos joins it (a leading / is the tree's root, .. steps back); the directory must hold a file named exactly kustomization.yaml, as Sveltos reads it, which generates none for plain YAML; a path stepping above the tree fails the profile",
    ),
    all("spec.kustomizationRefs[].components", Supported, "templates, appended to the kustomization's components before the build"),
    f(
        "spec.kustomizationRefs[].targetNamespace",
        Differs,
        "set on every object built (the puller leaves it off cluster-scoped kinds); a template, where Sveltos sets it as written (so a templated one fails there)",
    ),
    all(
        "spec.kustomizationRefs[].values",
        Supported,
        "each value a template over the cluster's data; with any value set, every object built is then a template with the values as its data",
    ),
    f(
        "spec.kustomizationRefs[].valuesFrom",
        Supported,
        "each data key of the ConfigMap or Secret is one more value: templated like values, and winning over them, when the object has projectsveltos.io/template; as written, and winning over both, when not; later entries win within each",
    ),
    f("spec.kustomizationRefs[].valuesFrom[].kind", Supported, "ConfigMap or Secret"),
    f("spec.kustomizationRefs[].valuesFrom[].name", Supported, "a template like the reference's name"),
    f("spec.kustomizationRefs[].valuesFrom[].namespace", Supported, "a template; empty means the cluster's namespace"),
    f("spec.kustomizationRefs[].valuesFrom[].optional", Supported, "a missing object adds no values instead of failing the profile"),
    f("spec.kustomizationRefs[].optional", Supported, "ignored, as Sveltos ignores it: a missing source fails the profile"),
    f(
        "spec.kustomizationRefs[].tier",
        Supported,
        "the lower tier wins an object two references of the profile deploy; a tie fails the profile",
    ),
    f(
        "spec.kustomizationRefs[].skipNamespaceCreation",
        Supported,
        "without it, the bundle carries a bare Namespace for each namespace the objects name",
    ),
    f(
        "spec.kustomizationRefs[].deploymentType",
        Differs,
        "Remote is deployed; Local is deployed by Sveltos to the management cluster, so it is not sent and gets a not-applicable note",
    ),
    f("spec.kustomizationRefs[].force", Supported, "each object built carries airlock.dev/force-recreate, as a policyRef's with force"),
    f(
        "spec.kustomizationRefs[].remoteURL",
        Supported,
        "fetched by the publisher: an http(s) body that is a gzip'ed tar of the tree, or an oci:// artifact's first layer; built like a ConfigMap's tarball",
    ),
    f("spec.kustomizationRefs[].remoteURL.url", Supported, "http://, https:// or oci://; bodies over 16 MiB fail the profile"),
    f("spec.kustomizationRefs[].remoteURL.plainHTTP", Supported, "oci:// only: the registry is spoken to over http"),
    f("spec.kustomizationRefs[].remoteURL.insecureSkipTLSVerify", Supported, "ignored when the Secret has caFile"),
    all(
        "spec.kustomizationRefs[].remoteURL.secretRef",
        Differs,
        "token (bearer), username and password (basic, and for a registry's token service), caFile; a Profile reads only a Secret of its own namespace",
    ),
    f(
        "spec.kustomizationRefs[].remoteURL.interval",
        Differs,
        "watch fetches again once it passed (default 5m0s); a publish run fetches once, so the interval is how often it is run",
    ),
    all(
        "spec.validateHealths",
        Differs,
        "run by the puller after the part is applied, tried again for up to --check-timeout (default 2m); a failure fails the run, which records nothing, so the next run applies and checks again. Every check runs after the whole part, whatever its featureID: the puller applies a part at once (bundles-format.md 5.11)",
    ),
    all(
        "spec.preDeployChecks",
        Differs,
        "run by the puller before the part is applied; while one fails, the part and the parts that depend on it are held back and the run fails. Every check runs before the whole part, whatever its featureID",
    ),
    all(
        "spec.preDeleteChecks",
        Differs,
        "kept in the puller's state when the part is applied and run once the part leaves the bundle, before its objects are pruned; while one fails they stay and the run fails",
    ),
    all(
        "spec.postDeleteChecks",
        Differs,
        "kept as preDeleteChecks are, run after the leaving part's objects are pruned; a failure fails the run, and the next run checks again",
    ),
    all(
        "spec.driftExclusions",
        Supported,
        "relayed to the puller, whose drift check and re-apply leave those fields alone (bundles-format.md 5.8)",
    ),
    all("status", NotApplicable, STATUS),
    all(
        "status.matchingClusters",
        Differs,
        "written by airlock-publisher ingest: the clusters whose ingested reports show the profile deployed or failing there (what sveltosctl show usage reads); Sveltos lists every matching cluster, so one that has not reported the profile yet is missing",
    ),
    all(
        "status.failedClusters",
        Differs,
        "written by airlock-publisher ingest: the clusters where the profile failed in the last report that says: an object failed to apply (kind, namespace/name and the puller's detail) or the render failed; lastFailureTime is that report's finishedAt. Sveltos lists here the clusters it could not make a ClusterSummary for, and puts deployment failures in the ClusterSummary",
    ),
];
