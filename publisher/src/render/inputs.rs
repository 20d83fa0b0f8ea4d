//! The fingerprint of everything one cluster's rendering reads: its SveltosCluster, the
//! profiles it gets, the objects their references resolve to, what of the source could
//! not be read or is paused (whose parts a cluster keeps), the limits, the publisher's extra
//! age recipients (for a cluster with one of its own), and the version of this rendering
//! code. Two runs that compute the same fingerprint for a
//! cluster render it to the same bundle, which is what lets `memo` skip rendering.
//!
//! A fingerprint errs on the side of changing: anything rendering reads is in it, so a
//! missed change cannot hide behind an old bundle; a change that does not matter (a
//! Secret's resourceVersion, say) only costs a render.

use std::collections::HashMap;
use std::fmt::Write;

use airlock_bundle::age::Recipient;
use airlock_bundle::{Digest, Limits};

use super::hold::Unplanned;
use super::resolve::ClusterPlan;
use crate::sources::model::Profile;
use crate::sources::{ObjectKey, Resources};

/// Names what rendering does with its inputs. Change it whenever the same inputs would
/// render to other bytes (a new YAML writer, a new label), so no fingerprint from before
/// matches.
const RENDERING: &str = concat!("airlock-publisher ", env!("CARGO_PKG_VERSION"), " rendering 7");

/// Fingerprints the clusters of one run: the digests of the fetched objects and of the
/// profiles are taken once and shared by every cluster.
pub struct Fingerprints {
    base: Digest,
    /// The extra recipients, one line, for clusters that seal.
    recipients: String,
    resources: HashMap<ObjectKey, Digest>,
    profiles: HashMap<String, Digest>,
}

impl Fingerprints {
    pub fn new(resources: &Resources, profiles: &[Profile], unplanned: &Unplanned, limits: &Limits) -> Fingerprints {
        let json = |v| Digest::of(&serde_json::to_vec(v).expect("a JSON value serialises"));
        Fingerprints {
            base: Digest::of(format!("{RENDERING}\n{limits:?}\n{}\n", unplanned.fingerprint()).as_bytes()),
            recipients: String::new(),
            resources: resources
                .iter()
                .map(|(k, v)| (k.clone(), v.map_or_else(|why| Digest::of(format!("unreadable: {why}").as_bytes()), json)))
                .collect(),
            // The parsed profile, not the object as read: a ClusterProfile's status changes
            // all the time, and rendering reads none of it. Its Debug form shows every
            // field, so two profiles that render differently never print the same.
            profiles: profiles.iter().map(|p| (p.part_name(), Digest::of(format!("{p:?}").as_bytes()))).collect(),
        }
    }

    /// Counts `recipients`, the publisher's extra age recipients, among what a cluster with
    /// a recipient of its own reads: a new one must reach its sealed files.
    pub fn with_recipients(self, recipients: &[Recipient]) -> Fingerprints {
        let recipients = recipients.iter().map(ToString::to_string).collect::<Vec<_>>().join(" ");
        Fingerprints { recipients, ..self }
    }

    /// The fingerprint of one planned cluster.
    pub fn of(&self, plan: &ClusterPlan<'_>) -> Digest {
        let mut text = format!("{}\n", self.base);
        text.push_str(&serde_json::to_string(&plan.cluster.object).expect("a JSON value serialises"));
        if plan.cluster.age_recipient.is_some() {
            let _ = write!(text, "\nrecipients {}", self.recipients);
        }
        if let Some(relay) = &plan.credentials {
            let _ = write!(text, "\ncredentials {} {}", relay.source.key, self.found(&relay.source.key));
        }
        for evaluation in &plan.evaluations {
            let _ = write!(text, "\nevaluation {}", evaluation.digest());
        }
        for pp in &plan.profiles {
            let part = pp.profile.part_name();
            let profile = self.profiles.get(&part).map_or_else(String::new, Digest::to_string);
            let _ = write!(text, "\n{part} {profile}");
            for r in pp.references() {
                let _ = write!(text, "\n  {} {} {}", r.api_version, r.key, self.found(&r.key));
            }
        }
        Digest::of(text.as_bytes())
    }

    /// The digest of a fetched object, or `missing`.
    fn found(&self, key: &ObjectKey) -> String {
        self.resources.get(key).map_or_else(|| "missing".to_string(), Digest::to_string)
    }
}

#[cfg(test)]
mod tests {
    use super::super::plan;
    use super::*;
    use crate::sources::{Inventory, select};
    use crate::yaml;

    const WORLD: &str = "
apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {name: a, namespace: fleet, labels: {zone: north}}
spec: {pullMode: true}
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: SveltosCluster
metadata: {name: b, namespace: fleet, labels: {zone: north}}
spec: {pullMode: true}
---
apiVersion: config.projectsveltos.io/v1beta1
kind: ClusterProfile
metadata: {name: web}
spec:
  clusterSelector: {matchLabels: {zone: north}}
  policyRefs: [{kind: ConfigMap, namespace: defs, name: web}]
---
apiVersion: v1
kind: ConfigMap
metadata: {name: web, namespace: defs}
data: {x.yaml: 'apiVersion: v1\nkind: Namespace\nmetadata: {name: web}\n'}
";

    /// The fingerprints of every cluster of a world written as YAML.
    fn fingerprints(text: &str) -> Vec<Digest> {
        let docs = yaml::parse_documents(text).unwrap();
        let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
        let res = Resources::found(docs.iter().filter_map(|d| ObjectKey::of(d).map(|k| (k, d.clone()))).collect());
        let f = Fingerprints::new(&res, &inv.profiles, &Unplanned::of(&inv), &Limits::SPEC);
        inv.clusters.iter().map(|c| f.of(&plan(c, select::profiles_for(c, &inv), &inv).unwrap())).collect()
    }

    #[test]
    fn stable_for_the_same_inputs_and_distinct_per_cluster() {
        let first = fingerprints(WORLD);
        assert_eq!(first, fingerprints(WORLD));
        assert_ne!(first[0], first[1], "clusters see their own object");
    }

    #[test]
    fn changes_with_every_input_rendering_reads() {
        let before = fingerprints(WORLD);
        for (what, from, to) in [
            ("a referenced object", "name: web}\n'", "name: api}\n'"),
            ("a profile field", "policyRefs:", "tier: 50\n  policyRefs:"),
            (
                "a cluster label",
                "{zone: north}}\nspec: {pullMode: true}\n---\napiVersion: lib",
                "{zone: north, extra: label}}\nspec: {pullMode: true}\n---\napiVersion: lib",
            ),
            ("which profiles match", "matchLabels: {zone: north}", "matchLabels: {zone: south}"),
            ("where a reference resolves", "namespace: defs, name: web}]", "namespace: other, name: web}]"),
        ] {
            assert!(WORLD.contains(from), "{what}");
            assert_ne!(fingerprints(&WORLD.replacen(from, to, 1))[0], before[0], "{what}");
        }
    }

    #[test]
    fn changes_with_the_classifiers_every_cluster_evaluates() {
        let classifier = "---\napiVersion: lib.projectsveltos.io/v1beta1\nkind: Classifier\nmetadata: {name: gpu}\nspec:\n  \
                          deployedResourceConstraint: {resourceSelectors: [{version: v1, kind: Node}]}\n";
        let with = fingerprints(&format!("{WORLD}{classifier}"));
        assert!(with.iter().zip(fingerprints(WORLD)).all(|(a, b)| *a != b), "a new classifier reaches every cluster");
        let changed = fingerprints(&format!("{WORLD}{}", classifier.replace("Node", "Pod")));
        assert!(with.iter().zip(changed).all(|(a, b)| *a != b), "a changed definition too");
        let labels_only = fingerprints(&format!("{WORLD}{classifier}  classifierLabels: [{{key: gpu, value: 'yes'}}]\n"));
        assert_eq!(labels_only, with, "labels are ingest's, not the bundle's");
    }

    #[test]
    fn changes_with_the_relayed_credentials() {
        let relayed =
            WORLD.replacen("labels: {zone: north}}", "labels: {zone: north}, annotations: {airlock.dev/store-credentials: creds}}", 1)
                + "---\napiVersion: v1\nkind: Secret\nmetadata: {name: creds, namespace: fleet}\ndata: {.dockerconfigjson: e30=}\n";
        let before = fingerprints(&relayed);
        assert_eq!(before, fingerprints(&relayed));
        let renewed = fingerprints(&relayed.replace("e30=", "eyJhIjoxfQ=="));
        assert_ne!(renewed[0], before[0], "a renewed Secret is a new input");
        assert_eq!(renewed[1], before[1], "a cluster without the annotation does not read it");
    }
}
