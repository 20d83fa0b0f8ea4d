//! The reports of a run: signed into `--report-to` and kept in the cluster, also when they
//! are too large for a ConfigMap.

use std::collections::BTreeMap;
use std::path::PathBuf;

use airlock_bundle::Limits;
use airlock_bundle::envelope::REPORT_PAYLOAD_TYPE;
use airlock_bundle::{Keyring, SigningKey, envelope};
use airlock_e2e::assert_exit;
use airlock_e2e::puller::Site;
use airlock_puller::reports::report::{Report, RunResult};

#[tokio::test(flavor = "multi_thread")]
async fn a_signed_report_is_written_and_verifies() {
    let site = Site::new("report").await;
    site.publish("store", &[site.signed(1, site.files(2, "one"), |_| {})]).await;
    let key = SigningKey::from_seed([42; 32]);
    let key_path = site.dir.path().join("cluster.key");
    std::fs::write(&key_path, key.to_pkcs8_pem()).unwrap();
    let reports = site.dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let run = site.run("sync", "store", &["--report-to", reports.to_str().unwrap(), "--report-key", key_path.to_str().unwrap()]).await;
    assert_exit(&run, 0);

    let files: Vec<PathBuf> = std::fs::read_dir(&reports).unwrap().map(|e| e.unwrap().path()).collect();
    assert_eq!(files.len(), 1, "{files:?}");
    let name = files[0].file_name().unwrap().to_str().unwrap();
    assert!(name.starts_with(&format!("report-e2e.{}-", site.cluster.name())), "{name}");
    let decoded = envelope::decode(&std::fs::read(&files[0]).unwrap(), REPORT_PAYLOAD_TYPE, &Limits::SPEC).expect("a DSSE envelope");
    let keyring = Keyring::new(1, 1, vec![key.public()], &Limits::SPEC).unwrap();
    assert_eq!(keyring.check(&decoded).expect("signed by the cluster key"), [key.public().key_id()]);
    let report: Report = serde_json::from_slice(&decoded.payload).unwrap();
    assert_eq!(report.result, RunResult::Applied);
    assert_eq!(report.cluster, site.cluster.to_string());
    assert_eq!(report.applied_version, Some(1));
    assert_eq!(report.kubernetes_version.as_deref(), Some("v1.20.2"));
    assert_eq!(report.objects.len(), 3, "{report:?}");

    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::Applied, Some(1)));
}

/// A report of 5,000 objects is over 1 MiB, more than a ConfigMap holds. The
/// objects are refused by the namespace policy, so nothing but the Namespace is applied.
#[tokio::test(flavor = "multi_thread")]
async fn a_five_thousand_object_report_is_kept_without_its_object_list() {
    const COUNT: usize = 5_000;
    let site = Site::new("large-report").await;
    let outside = format!("{}-x", site.app_ns);
    let mut files = site.files(0, "");
    files.extend((0..COUNT).map(|i| {
        let yaml = format!("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-{i}\n  namespace: {outside}\n");
        (format!("ClusterProfile.app/ConfigMap.{outside}.cm-{i}.yaml"), yaml.into_bytes())
    }));
    site.publish("store", &[site.signed(1, files, |_| {})]).await;
    let reports = site.dir.path().join("reports");
    std::fs::create_dir(&reports).unwrap();
    let policy = ["--watch-namespaces", &site.app_ns, "--namespace-policy", "filter"];
    let run = site.run("sync", "store", &[&policy[..], &["--report-to", reports.to_str().unwrap()]].concat()).await;
    assert_exit(&run, 0);
    assert!(run.stdout.contains(&format!("{COUNT} refused")), "{run:?}");
    assert!(!run.stderr.contains("report not kept"), "{run:?}");

    let file = std::fs::read_dir(&reports).unwrap().next().expect("a report file").unwrap().path();
    let whole: Report = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(whole.objects.len(), COUNT + 1, "the report file keeps every object");
    assert!(std::fs::metadata(&file).unwrap().len() > 1024 * 1024);
    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::Applied, Some(1)));
    assert!(kept.report.objects.is_empty(), "{kept:?}");
    assert_eq!(kept.omitted_objects, BTreeMap::from([("created".to_string(), 1), ("refused".to_string(), COUNT as u64)]));

    // The next run reads that copy back, and replaces it with its own outcome.
    assert_exit(&site.run("sync", "store", &policy).await, 0);
    let kept = site.kept_report().await;
    assert_eq!((kept.report.result, kept.report.applied_version), (RunResult::UpToDate, Some(1)));
}
