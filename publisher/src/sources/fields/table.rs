//! The declared fields, [`Field`]s each of a [`Class`]: what airlock-publisher does with
//! each field of a ClusterProfile or Profile (their specs are identical) and of a
//! SveltosCluster. The details of the entries
//! that are not supported or not applicable are the notes' text (bundles-format.md 5.9);
//! all of them are the compatibility document's.

use airlock_bundle::statement::Support;

use Class::{Differs, NotApplicable, Supported};

/// How far a field is honoured.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Class {
    /// Does what Sveltos does with it.
    Supported,
    /// Honoured, with a difference the entry states.
    Differs,
    /// Has no meaning for a cluster that pulls: a management-side or push-mode feature.
    NotApplicable,
    /// Airlock does not do what Sveltos would; a profile setting it gets a note.
    NotSupported,
}

impl Class {
    /// How the compatibility document names the class.
    #[cfg(test)]
    pub fn label(self) -> &'static str {
        match self {
            Class::Supported => "supported",
            Class::Differs => "supported, with a difference",
            Class::NotApplicable => "not applicable to pull mode",
            Class::NotSupported => "not supported",
        }
    }

    /// The note a set field of this class gets in the bundle, if any.
    pub fn support(self) -> Option<Support> {
        match self {
            Class::NotApplicable => Some(Support::NotApplicable),
            Class::NotSupported => Some(Support::NotSupported),
            Class::Supported | Class::Differs => None,
        }
    }
}

/// One declared field.
#[derive(Debug, Clone, Copy)]
pub struct Field {
    pub path: &'static str,
    pub class: Class,
    /// Whether the entry covers every field below it too.
    pub subtree: bool,
    pub detail: &'static str,
}

pub(super) const fn f(path: &'static str, class: Class, detail: &'static str) -> Field {
    Field { path, class, subtree: false, detail }
}

/// An entry that covers every field below it.
pub(super) const fn all(path: &'static str, class: Class, detail: &'static str) -> Field {
    Field { path, class, subtree: true, detail }
}

pub(super) const IGNORED: &str = "ignored, as Sveltos ignores it";
pub(super) const STATUS: &str = "written by Sveltos's controllers on the management cluster; the publisher reads none of it, and airlock-publisher ingest writes only matchingClusters and failedClusters";
pub(super) const PUSH: &str = "how Sveltos reaches a cluster it pushes to; a pulling cluster is never reached";

/// RoleRequest: read as a profile of its own part (bundles-format.md 5.13).
pub static ROLE_REQUEST_FIELDS: &[Field] = &[
    all(
        "spec.clusterSelector",
        Supported,
        "a label selector over SveltosCluster labels, as a profile's; each matching pull-mode cluster gets the part RoleRequest.<name>, applied as the puller",
    ),
    all(
        "spec.roleRefs",
        Differs,
        "each ConfigMap or Secret read as a spec.policyRefs entry with the same kind, name and namespace is; of their objects the Roles and ClusterRoles are deployed, each with a RoleBinding or ClusterRoleBinding of its name binding it to the tenant's ServiceAccount, and the rest is left out with a warning, as Sveltos leaves it. A contained puller can grant only rights it holds in the role's namespace (it has no bind or escalate), and a ClusterRole or its binding only when --allow-cluster-scoped lists it",
    ),
    f(
        "spec.serviceAccountName",
        Differs,
        "with serviceAccountNamespace, the tenant: the part creates that ServiceAccount of the managed cluster, which the tenant's labelled profiles are applied as; Sveltos creates <namespace>--<name> in its own namespace instead, which a pulling cluster without Sveltos has not",
    ),
    f("spec.serviceAccountNamespace", Differs, "as spec.serviceAccountName; a contained puller needs it among its watch-namespaces"),
    f(
        "spec.expirationSeconds",
        NotApplicable,
        "the life of the token Sveltos stores for a cluster it pushes to; the puller impersonates the ServiceAccount, with no token",
    ),
    all("status", NotApplicable, STATUS),
];

/// SveltosCluster.
pub static CLUSTER_FIELDS: &[Field] = &[
    f(
        "metadata.annotations[agent.projectsveltos.io/watch-namespaces]",
        Differs,
        "relayed in the signed bundle; stricter than Sveltos's agent: the puller refuses every object outside them before applying anything, cluster-scoped objects only where the bundle allows them, and registration narrows the puller's RBAC to them",
    ),
    f("spec.pullMode", Supported, "only pull-mode clusters get bundles"),
    f(
        "spec.paused",
        Differs,
        "a paused cluster gets no new bundle; with spec.activeWindow set, Sveltos writes paused from the window by the management clock, so the publisher ignores it and relays the window",
    ),
    all(
        "spec.activeWindow",
        Supported,
        "relayed in the signed bundle; the puller changes the cluster only inside the window, by its own clock (bundles-format.md 5.6); a window that does not parse fails the cluster",
    ),
    all("spec.data", Supported, "templates see it as .Cluster.spec.data"),
    f("spec.kubeconfigName", NotApplicable, PUSH),
    f("spec.kubeconfigKeyName", NotApplicable, PUSH),
    all("spec.tokenRequestRenewalOption", NotApplicable, PUSH),
    all("spec.workloadIdentity", NotApplicable, PUSH),
    f(
        "spec.consecutiveFailureThreshold",
        Differs,
        "read by airlock-publisher ingest: a cluster that misses this many report intervals (airlock.dev/report-interval) is marked Down, ready staying as it is, as in Sveltos; Sveltos counts one failure per reconcile (about a minute) once the agent's last report is ten minutes old, which a puller reporting daily would always fail",
    ),
    all("spec.readinessChecks", NotApplicable, PUSH),
    all("spec.livenessChecks", NotApplicable, PUSH),
    f(
        "status.ready",
        Supported,
        "set true by airlock-publisher ingest on every verified report, as Sveltos's agent sets it when it reports; a failed run or missed reports leave it, since every selector reads false as the cluster no longer matching (a failure shows on the failing profile's status.failedClusters)",
    ),
    f("status.version", Supported, "set by airlock-publisher ingest: the site's Kubernetes version"),
    f("status.agentLastReportTime", Supported, "set by airlock-publisher ingest: when the last ingested report's run finished"),
    f(
        "status.failureMessage",
        Differs,
        "written by airlock-publisher ingest when reports go missing (ReportsMissing: ..., where Sveltos writes its heartbeat-timeout message) and removed by the next report; the error a report carries goes to the annotation airlock.dev/last-error, as Sveltos's counts any failureMessage as a connection failure",
    ),
    f(
        "status.connectionStatus",
        Supported,
        "written by airlock-publisher ingest: Down once spec.consecutiveFailureThreshold report intervals passed without a report, Healthy again on the next one",
    ),
    f("status.connectionFailures", Supported, "written by airlock-publisher ingest: the report intervals missed since the last report"),
    f("status.lastReconciledTokenRequestAt", NotApplicable, PUSH),
    f("status.activeWindowHash", NotApplicable, "Sveltos's record of the window it computed; the puller judges the window itself"),
    f("status.nextPause", NotApplicable, "Sveltos's record of the window it computed; the puller judges the window itself"),
    f("status.nextUnpause", NotApplicable, "Sveltos's record of the window it computed; the puller judges the window itself"),
];
