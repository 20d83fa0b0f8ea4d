//! A fleet of several chunks through the whole pipeline, into an OCI layout: each chunk is
//! signed while the next renders and written while the one after renders, and every
//! cluster still gets exactly its own bundle, once.

use std::fmt::Write as _;
use std::path::Path;

use airlock_bundle::ClusterId;

use super::testing::publisher;
use super::*;
use crate::sources::dir::DirSource;

/// Two and a half chunks.
const CLUSTERS: usize = CHUNK * 2 + CHUNK / 2;

/// `CLUSTERS` clusters and a profile templated over each one's name.
fn write_fleet(dir: &Path) {
    let mut text = String::new();
    for i in 0..CLUSTERS {
        writeln!(
            text,
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
             metadata: {{name: c{i:04}, namespace: fleet, labels: {{env: edge}}}}\nspec: {{pullMode: true}}\n---"
        )
        .unwrap();
    }
    text.push_str(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {name: app}\n\
         spec:\n  clusterSelector: {matchLabels: {env: edge}}\n  policyRefs: [{kind: ConfigMap, namespace: defs, name: app}]\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: defs\n  annotations: {projectsveltos.io/template: ok}\n\
         data:\n  cm.yaml: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata: {name: whoami, namespace: apps}\n\
         \x20   data: {cluster: '{{ .Cluster.metadata.name }}'}\n",
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("fleet.yaml"), text).unwrap();
}

async fn publish(root: &Path) -> (Published, Publisher) {
    let publisher = publisher(root, Vec::new(), true).await;
    let source = Source::Dir(DirSource::read(&root.join("mgmt")).unwrap());
    (run(&source, &publisher, publisher.helm_renderer()).await.unwrap(), publisher)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_cluster_of_several_chunks_gets_its_own_bundle_once() {
    let tmp = tempfile::tempdir().unwrap();
    write_fleet(&tmp.path().join("mgmt"));
    let (first, publisher) = publish(tmp.path()).await;
    let expected: Vec<ClusterId> = (0..CLUSTERS).map(|i| format!("fleet/c{i:04}").parse().unwrap()).collect();
    let clusters: Vec<ClusterId> = first.rows.iter().map(|r| r.cluster.clone()).collect();
    assert_eq!(clusters, expected, "a row per cluster, in order");
    for row in &first.rows {
        assert_eq!((&row.status, row.version), (&Status::Published, Some(1)), "{}", row.cluster);
    }
    // Each cluster's stored statement is its own: a chunk handed to the wrong rows or
    // written twice would show here.
    for (i, cluster) in expected.iter().enumerate().step_by(97) {
        let statement = publisher.store.fetch_envelope(cluster, &Limits::SPEC).await.unwrap().unverified_statement().unwrap();
        assert_eq!((statement.predicate.cluster.as_str(), statement.predicate.version), (cluster.to_string().as_str(), 1));
        assert_eq!(Some(statement.subject[0].digest.sha256.clone()), first.rows[i].digest.map(|d| d.hex().to_string()));
    }
    let digests: std::collections::HashSet<_> = first.rows.iter().map(|r| r.digest).collect();
    assert_eq!(digests.len(), CLUSTERS, "every cluster's bundle names its cluster, so no two are alike");

    let (again, _) = publish(tmp.path()).await;
    assert!(again.rows.iter().all(|r| r.status == Status::Unchanged && r.version == Some(1)), "nothing changed, nothing published");
}
