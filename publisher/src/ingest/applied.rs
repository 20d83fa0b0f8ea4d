//! The per-object entries of a report (spec 14.3 `objects`) as ingest reads them: which
//! object, of which part, and what the run did to it. The puller's own type carries more
//! (whether a detail is sealed) and lives in its apply engine; this one reads the wire
//! form only, and is what `addons` turns into Sveltos's per-profile status.

use serde::Deserialize;

/// An object's identity as a report writes it.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Deserialize)]
pub struct ReportedId {
    pub group: String,
    pub version: String,
    pub kind: String,
    /// `None` for cluster-scoped objects.
    pub namespace: Option<String>,
    pub name: String,
}

/// What a run did to one object (spec 14.3 `action`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub enum Action {
    Created,
    Configured,
    Unchanged,
    Pruned,
    Left,
    DriftCorrected,
    Recreated,
    Restarted,
    WouldCreate,
    WouldConfigure,
    WouldPrune,
    Refused,
    Failed,
    Skipped,
    /// An action a later puller may add within version 1 (14.3: readers ignore what they
    /// do not know): it changes nothing ingest records.
    #[serde(other)]
    Unknown,
}

impl Action {
    /// The run wrote the object: it was applied at the run's end.
    pub fn wrote(self) -> bool {
        matches!(self, Action::Created | Action::Configured | Action::DriftCorrected | Action::Recreated | Action::Restarted)
    }

    /// The object is on the cluster after the run, as the part wants it.
    pub fn deployed(self) -> bool {
        self.wrote() || self == Action::Unchanged
    }

    /// The object is no longer the part's on the cluster.
    pub fn gone(self) -> bool {
        matches!(self, Action::Pruned | Action::Left | Action::Refused)
    }
}

/// One entry of a report's `objects`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReportedObject {
    pub id: ReportedId,
    /// The part name (spec 2.3).
    pub profile: String,
    pub action: Action,
    #[serde(default)]
    pub detail: Option<String>,
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn reads_the_wire_form_and_tolerates_an_action_added_later() {
        let entry: ReportedObject = serde_json::from_value(json!({
            "id": {"group": "", "version": "v1", "kind": "ConfigMap", "namespace": "apps", "name": "settings"},
            "profile": "ClusterProfile.web", "action": "driftCorrected",
        }))
        .unwrap();
        assert_eq!((entry.action, entry.id.namespace.as_deref(), entry.detail), (Action::DriftCorrected, Some("apps"), None));
        let later: ReportedObject = serde_json::from_value(json!({
            "id": {"group": "", "version": "v1", "kind": "Namespace", "namespace": null, "name": "apps"},
            "profile": "ClusterProfile.web", "action": "adopted", "detail": "x",
        }))
        .unwrap();
        assert_eq!(later.action, Action::Unknown);
        assert!(!later.action.deployed() && !later.action.gone());
    }

    #[test]
    fn rejects_an_entry_without_its_identity() {
        let err = serde_json::from_value::<ReportedObject>(json!({"profile": "ClusterProfile.web", "action": "created"})).unwrap_err();
        assert!(err.to_string().contains("missing field `id`"), "{err}");
    }
}
