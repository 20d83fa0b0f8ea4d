//! Sveltos's health checks as the publisher and ingest use them: a `HealthCheck` is what a
//! puller evaluates (carried as an evaluation, bundles-format.md 5.14); a
//! `ClusterHealthCheck` says which clusters carry which HealthChecks (its
//! `clusterSelector` and the `livenessChecks` of type `HealthCheck`), and what ingest
//! judges and whom it tells when a cluster's liveness changes (its `livenessChecks` and
//! `notifications`). Reading them is `parse::health_check`'s; judging and notifying is
//! ingest's (`cmd::ingest::liveness_checks`).

use std::collections::BTreeMap;

use airlock_bundle::statement::Evaluation;

use super::selector::Selector;

/// A ClusterHealthCheck, read.
#[derive(Debug, Clone)]
pub struct ClusterHealthCheck {
    pub name: String,
    /// `clusterSelector`; `None` (empty) selects no cluster, as in Sveltos.
    pub selector: Option<Selector>,
    pub liveness: Vec<LivenessCheck>,
    pub notifications: Vec<Notification>,
}

/// One `livenessChecks` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LivenessCheck {
    pub name: String,
    pub kind: Liveness,
}

/// What a liveness check judges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Liveness {
    /// Whether every profile deployed on the cluster without failure.
    Addons,
    /// Whether every object the named HealthCheck judged on the cluster is healthy.
    HealthCheck(String),
}

impl LivenessCheck {
    /// The condition type Sveltos gives it: `<type>:<name>`.
    pub fn condition_type(&self) -> String {
        let kind = match self.kind {
            Liveness::Addons => "Addons",
            Liveness::HealthCheck(_) => "HealthCheck",
        };
        format!("{kind}:{}", self.name)
    }
}

/// One `notifications` entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Notification {
    pub name: String,
    pub kind: NotificationKind,
    /// `notificationRef` of a Secret: `(namespace, name)`.
    pub secret: Option<(String, String)>,
}

/// How a notification is sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NotificationKind {
    /// A Kubernetes Event on the ClusterHealthCheck.
    KubernetesEvent,
    /// A JSON POST of an adaptive card to the webhook URL its Secret holds.
    Teams,
    /// A type of Sveltos's Airlock does not send (Slack, Webex, Discord, Telegram,
    /// SMTP): its summary says so.
    Other(String),
}

impl ClusterHealthCheck {
    /// Whether it selects a cluster labelled `labels`.
    pub fn selects(&self, labels: &BTreeMap<String, String>) -> bool {
        self.selector.as_ref().is_some_and(|s| s.matches(labels))
    }

    /// The names of the HealthChecks its liveness checks name.
    pub fn health_checks(&self) -> impl Iterator<Item = &str> {
        self.liveness.iter().filter_map(|l| match &l.kind {
            Liveness::HealthCheck(name) => Some(name.as_str()),
            Liveness::Addons => None,
        })
    }
}

/// The HealthChecks (as evaluations) that the ClusterHealthChecks selecting a cluster
/// labelled `labels` name, by name, each once.
pub fn carried<'a>(
    checks: &'a [ClusterHealthCheck],
    health_checks: &'a [Evaluation],
    labels: &BTreeMap<String, String>,
) -> Vec<&'a Evaluation> {
    let mut named: Vec<&str> = checks.iter().filter(|c| c.selects(labels)).flat_map(ClusterHealthCheck::health_checks).collect();
    named.sort_unstable();
    named.dedup();
    named.into_iter().filter_map(|n| health_checks.iter().find(|h| h.name == n)).collect()
}
