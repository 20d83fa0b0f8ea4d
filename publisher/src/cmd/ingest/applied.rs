//! The per-object entries of a report (spec 14.3 `objects`) as ingest reads them: which
//! object, of which part, and what the run did to it, read for what that means to the
//! objects a profile holds on the cluster ([`Effect`]). The puller's own type carries more
//! and lives in its apply engine; this one reads the wire form only, for `addons`.

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

/// What a run's action on an object (spec 14.3 `action`) means for what the cluster runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effect {
    /// Written by the run (`created`, `configured`, `driftCorrected`, `recreated`,
    /// `restarted`): applied when the run finished.
    Wrote,
    /// On the cluster as the part wants it, not written this run.
    Unchanged,
    /// No longer the part's on the cluster (`pruned`, `left`, `refused`).
    Gone,
    Failed,
    /// Left as it was: `skipped`, the previews of a dry run, and any action a later puller
    /// adds within version 1 (readers ignore what they do not know, 14.3).
    Kept,
}

/// One entry of a report's `objects`.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct ReportedObject {
    pub id: ReportedId,
    /// The part name (spec 2.3).
    pub profile: String,
    pub action: String,
    #[serde(default)]
    pub detail: Option<String>,
}

impl ReportedObject {
    pub fn effect(&self) -> Effect {
        match self.action.as_str() {
            "created" | "configured" | "driftCorrected" | "recreated" | "restarted" => Effect::Wrote,
            "unchanged" => Effect::Unchanged,
            "pruned" | "left" | "refused" => Effect::Gone,
            "failed" => Effect::Failed,
            _ => Effect::Kept,
        }
    }
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
        assert_eq!((entry.effect(), entry.id.namespace.as_deref(), entry.detail), (Effect::Wrote, Some("apps"), None));
        let later: ReportedObject = serde_json::from_value(json!({
            "id": {"group": "", "version": "v1", "kind": "Namespace", "namespace": null, "name": "apps"},
            "profile": "ClusterProfile.web", "action": "adopted", "detail": "x",
        }))
        .unwrap();
        assert_eq!(later.effect(), Effect::Kept);
    }

    #[test]
    fn rejects_an_entry_without_its_identity() {
        let err = serde_json::from_value::<ReportedObject>(json!({"profile": "ClusterProfile.web", "action": "created"})).unwrap_err();
        assert!(err.to_string().contains("missing field `id`"), "{err}");
    }
}
