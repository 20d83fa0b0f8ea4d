//! The Classifiers every pull-mode cluster's bundle carries for its puller to evaluate
//! (bundles-format.md 5.14): all of them, whatever profiles the cluster gets, as Sveltos
//! evaluates every Classifier on every cluster; none that cannot be read.

use super::*;

const CLASSIFIERS: &str = "
apiVersion: lib.projectsveltos.io/v1beta1
kind: Classifier
metadata: {name: sveltos-service}
spec:
  classifierLabels: [{key: sveltos-service, value: present}]
  deployedResourceConstraint:
    resourceSelectors: [{group: '', version: v1, kind: Service, labelFilters: [{key: sveltos, operation: Equal, value: fv}]}]
---
apiVersion: lib.projectsveltos.io/v1beta1
kind: Classifier
metadata: {name: by-version}
spec:
  classifierLabels: [{key: k8s, value: v1-20}]
  kubernetesVersionConstraints: [{comparison: GreaterThanOrEqualTo, version: 1.20.0}]
";

#[test]
fn every_cluster_carries_every_classifier_in_name_order() {
    let w = world(CLASSIFIERS);
    for cluster in ["fleet/eu-1", "fleet/us-1"] {
        let rendered = render_for(&w, cluster).unwrap();
        let names: Vec<&str> = rendered.evaluations.iter().map(|e| e.name.as_str()).collect();
        assert_eq!(names, ["by-version", "sveltos-service"], "{cluster}");
        let service = &rendered.evaluations[1].selectors[0].objects;
        assert_eq!((service.kind.as_str(), service.label_selector.as_str()), ("Service", "sveltos=fv"));
        assert!(rendered.evaluations[0].selectors.is_empty(), "version constraints stay on the management side");
    }
}

#[test]
fn a_classifier_that_cannot_be_read_is_carried_to_no_cluster() {
    let docs =
        yaml::parse_documents(&format!("{CLUSTERS}---\n{}", CLASSIFIERS.replace("comparison: GreaterThanOrEqualTo", "comparison: Above")))
            .unwrap();
    let inv = Inventory::from_objects(docs.iter().map(|d| ("test".to_string(), d)));
    assert_eq!(inv.classifiers.iter().map(|c| c.name.as_str()).collect::<Vec<_>>(), ["sveltos-service"]);
    assert!(inv.broken.iter().any(|b| b.message.contains("Classifier/by-version")), "{:?}", inv.broken);
}
