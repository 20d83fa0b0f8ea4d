//! Publishing confidential bundles through the whole pipeline, into an OCI layout: sealed
//! once, unchanged after (the memo and the store agree), sealed again for a new
//! break-glass recipient, and kept byte for byte when the profile fails.

use std::path::Path;

use airlock_bundle::ClusterId;
use airlock_bundle::age::{self, Identity, Recipient};
use airlock_bundle::statement::Statement;

use super::testing::publisher;
use super::*;
use crate::sources::dir::DirSource;

const SEALED_DB: &str = "ClusterProfile.app/Secret.apps.db.yaml.age";

fn identity(seed: u8) -> Identity {
    Identity::from_secret([seed; 32])
}

/// Two clusters in region eu, eu-2 sealed to the identity of seed 1, and a profile
/// deploying a ConfigMap and a Secret to both, from `source` (the ConfigMap's name).
fn write_fleet(dir: &Path, source: &str) {
    let body = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: apps}\ndata: {color: blue}\n---\n\
                apiVersion: v1\nkind: Secret\nmetadata: {name: db, namespace: apps}\nstringData: {password: hunter2}\n";
    let indented: String = body.lines().map(|l| format!("    {l}\n")).collect();
    let text = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: eu-1, namespace: fleet, labels: {{region: eu}}}}\nspec: {{pullMode: true}}\n---\n\
         apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: eu-2, namespace: fleet, labels: {{region: eu}}, annotations: {{airlock.dev/age-recipient: {}}}}}\n\
         spec: {{pullMode: true}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: app}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{region: eu}}}}\n  policyRefs: [{{kind: ConfigMap, namespace: defs, name: app}}]\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: {source}, namespace: defs}}\ndata:\n  objects.yaml: |\n{indented}",
        identity(1).recipient()
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("fleet.yaml"), text).unwrap();
}

/// Publishes the fleet in `root`, with the memo.
async fn publish(root: &Path, age_recipients: Vec<Recipient>) -> (Published, Publisher) {
    publish_with(root, age_recipients, true).await
}

async fn publish_with(root: &Path, age_recipients: Vec<Recipient>, memo: bool) -> (Published, Publisher) {
    let publisher = publisher(root, age_recipients, memo).await;
    let source = Source::Dir(DirSource::read(&root.join("mgmt")).unwrap());
    (run(&source, &publisher, publisher.helm_renderer()).await.unwrap(), publisher)
}

fn statuses(published: &Published) -> Vec<Status> {
    published.rows.iter().map(|r| r.status.clone()).collect()
}

fn eu_2() -> ClusterId {
    "fleet/eu-2".parse().unwrap()
}

async fn stored_statement(publisher: &Publisher) -> Statement {
    publisher.store.fetch_envelope(&eu_2(), &Limits::SPEC).await.unwrap().unverified_statement().unwrap()
}

/// The sealed Secret of eu-2's stored bundle, read back as `publish` keeps a part.
async fn kept_secret(publisher: &Publisher) -> (Vec<u8>, crate::render::KeptContent) {
    let keyring = publisher.signer.own_keyring(&Limits::SPEC).unwrap();
    let stored = kept::read(&*publisher.store, &eu_2(), &keyring, Timestamp::now(), &Limits::SPEC).await.unwrap().unwrap();
    let entry = stored.statement().predicate.profiles.iter().find(|e| e.name == "ClusterProfile.app").unwrap().clone();
    let Ok(content) = stored.part(&*publisher.store, &eu_2(), &entry, &Limits::SPEC).await else { panic!("the part reads back") };
    let bytes = content.part.files().find(|(p, _)| *p == SEALED_DB).expect("the sealed Secret").1.to_vec();
    (bytes, content)
}

#[tokio::test]
async fn sealed_once_unchanged_after_and_sealed_again_for_a_new_break_glass_key() {
    let tmp = tempfile::tempdir().unwrap();
    write_fleet(&tmp.path().join("mgmt"), "app");
    let (first, publisher) = publish(tmp.path(), Vec::new()).await;
    assert_eq!(statuses(&first), [Status::Published, Status::Published]);
    let statement = stored_statement(&publisher).await;
    assert_eq!(statement.predicate.settings.recipients, Some(vec![identity(1).recipient().to_string()]));
    let (sealed, content) = kept_secret(&publisher).await;
    assert!(!sealed.windows(7).any(|w| w == b"hunter2"));
    let opened = age::decrypt(&sealed, &[identity(1)], 1 << 20).unwrap();
    assert!(String::from_utf8(opened).unwrap().ends_with("password: hunter2\n"));
    assert!(content.part.plaintext(SEALED_DB).is_some(), "kept with the plaintext its entry signs");
    assert_eq!(content.recipients, statement.predicate.settings.recipients);
    assert_eq!(content.keys.len(), 2, "the ConfigMap and its Namespace: a sealed file's objects stay unknown");

    let (second, _) = publish_with(tmp.path(), Vec::new(), false).await;
    assert_eq!(statuses(&second), [Status::Unchanged, Status::Unchanged], "rendered again, unchanged Secrets seal to the same bytes");
    let (recalled, _) = publish(tmp.path(), Vec::new()).await;
    assert_eq!(statuses(&recalled), [Status::Unchanged, Status::Unchanged], "and the memo agrees");

    let (third, publisher) = publish(tmp.path(), vec![identity(2).recipient()]).await;
    assert_eq!(statuses(&third), [Status::Unchanged, Status::Published], "only a cluster that seals reads the flag");
    let recipients = stored_statement(&publisher).await.predicate.settings.recipients.unwrap();
    assert_eq!(recipients, [identity(1).recipient().to_string(), identity(2).recipient().to_string()]);
    let (resealed, _) = kept_secret(&publisher).await;
    assert!(age::decrypt(&resealed, &[identity(2)], 1 << 20).is_ok(), "the break-glass key opens it");
}

#[tokio::test]
async fn a_failed_profile_keeps_its_sealed_files_as_the_store_has_them() {
    let tmp = tempfile::tempdir().unwrap();
    write_fleet(&tmp.path().join("mgmt"), "app");
    let (_, publisher) = publish(tmp.path(), Vec::new()).await;
    let (sealed, _) = kept_secret(&publisher).await;
    write_fleet(&tmp.path().join("mgmt"), "renamed");
    let (failed, publisher) = publish(tmp.path(), Vec::new()).await;
    let row = failed.rows.iter().find(|r| r.cluster == eu_2()).unwrap();
    assert_eq!((row.status.clone(), row.failures.len()), (Status::Published, 1), "{row:?}");
    let statement = stored_statement(&publisher).await;
    assert_eq!(statement.predicate.version, 2);
    assert_eq!(statement.predicate.settings.recipients, Some(vec![identity(1).recipient().to_string()]));
    assert_eq!(kept_secret(&publisher).await.0, sealed, "byte for byte");
}
