//! What a puller says once its cluster's final bundle was applied (spec 2.5.5). It does not
//! remove itself: deleting its own CronJob, ServiceAccount and RBAC from inside the run
//! would cut the branch it sits on (a run losing its rights half-way leaves a half-removed
//! puller and no report), and its state Secret is what keeps later runs from acting. So it
//! names what the site deletes, the reverse of the registration YAML, which
//! `airlock-publisher deregister cluster` prints too.

use jiff::Timestamp;

use crate::config::SyncSettings;

/// The label every object of the registration YAML carries.
pub const REGISTRATION_LABEL: &str = "app.kubernetes.io/part-of=airlock";

/// Logs that the cluster is decommissioned and what to delete at the site.
pub fn say(settings: &SyncSettings, at: Timestamp) {
    let at = airlock_bundle::statement::rfc3339::format(&at);
    tracing::warn!(
        cluster = %settings.cluster,
        "decommissioned at {at} by the cluster's final bundle: everything this puller applied is pruned, and it acts no more. \
         Remove it: kubectl delete cronjob,service,configmap,secret,serviceaccount,role,rolebinding -A -l {REGISTRATION_LABEL}; \
         kubectl delete clusterrole,clusterrolebinding -l {REGISTRATION_LABEL}; kubectl delete namespace {}",
        settings.state_namespace
    );
}
