//! Another writer records a state while a run is between its first read of the state and
//! the Lease: the run must notice when it reads the state again under the Lease, and act
//! on nothing (`cmd/sync/writer.rs`, `Writer::take`). The window is held open without timing: the
//! part blob of the OCI layout is replaced by a named pipe, so the puller, once past its
//! first state read, waits in the fetch until the test has written the state and lets the
//! blob through.

use std::io::Write;
use std::path::{Path, PathBuf};

use airlock_bundle::testkit::Fixture;
use airlock_bundle::{PartSettings, SyncMode, sign};
use airlock_e2e::Run;
use airlock_e2e::hostile_site::{BASELINE, Site};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, Patch, PatchParams, PostParams};
use tokio::process::Child;

use super::registry::part_blob;
use super::{Version, assert_failed, changes, gunzip, gzip, publish_layout, site_with_baseline};

/// A blob of an OCI layout replaced by a named pipe holding it back.
struct HeldBlob {
    path: PathBuf,
    bytes: Vec<u8>,
}

impl HeldBlob {
    fn hold(layout: &Path, hex: &str) -> HeldBlob {
        let path = layout.join("blobs/sha256").join(hex);
        let bytes = std::fs::read(&path).expect("the blob");
        std::fs::remove_file(&path).expect("blob removed");
        let made = std::process::Command::new("mkfifo").arg(&path).status().expect("mkfifo runs");
        assert!(made.success(), "mkfifo {}", path.display());
        HeldBlob { path, bytes }
    }

    /// Waits until `child` opens the blob, then runs `meanwhile` and lets the blob through.
    async fn release_after(self, child: &mut Child, meanwhile: impl Future<Output = ()>) {
        let path = self.path.clone();
        // Opening a pipe for writing waits for its reader.
        let open = tokio::task::spawn_blocking(move || std::fs::OpenOptions::new().write(true).open(path));
        let mut pipe = tokio::select! {
            opened = open => opened.expect("open finished").expect("the pipe opens"),
            status = child.wait() => {
                let _ = std::fs::File::open(&self.path); // lets the waiting open finish
                panic!("the puller exited ({status:?}) before reading the blob");
            }
        };
        meanwhile.await;
        tokio::task::spawn_blocking(move || pipe.write_all(&self.bytes)).await.expect("write finished").expect("blob written");
    }
}

/// What another puller would do meanwhile: record another applied version.
async fn another_writer_records_a_version(site: &Site) {
    let api = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let name = format!("airlock-state-{}", site.cluster.name());
    let mut secret = api.get(&name).await.expect("the state");
    let data = secret.data.as_mut().expect("data");
    let mut state: serde_json::Value = serde_json::from_slice(&gunzip(&data["state.json.gz"].0)).expect("JSON");
    state["version"] = (BASELINE + 5).into();
    data.insert("state.json.gz".into(), k8s_openapi::ByteString(gzip(state.to_string().as_bytes())));
    api.replace(&name, &PostParams::default(), &secret).await.expect("state written");
}

/// Runs the puller on `source`, holding back the blob `hex` of `layout` until another writer
/// recorded a state; the snapshot taken then, and the run.
async fn sync_racing_another_writer(site: &Site, source: &str, layout: &str, hex: &str) -> (airlock_e2e::hostile_site::Snapshot, Run) {
    let held = HeldBlob::hold(&site.path(layout), hex);
    let mut child = site.sync_command(source, &[]).spawn().expect("puller starts");
    let mut before = None;
    held.release_after(&mut child, async {
        another_writer_records_a_version(site).await;
        before = Some(site.snapshot().await);
    })
    .await;
    let run = Run::from(child.wait_with_output().await.expect("puller ends"));
    (before.expect("the snapshot"), run)
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_written_meanwhile_stops_the_apply() {
    let (site, _) = site_with_baseline("store", &Version::new(BASELINE, 2, 64)).await;
    let next = Version::new(BASELINE + 1, 3, 64).signed(&site);
    let hex = part_blob(&next);
    let source = publish_layout(&site, "store", next).await;

    let (before, run) = sync_racing_another_writer(&site, &source, "store", &hex).await;
    println!("| state written before the apply | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 1, "the state changed before the apply (another puller?); nothing was applied");
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "nothing written");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_state_written_meanwhile_stops_the_drift_correction() {
    let mut site = Site::new().await;
    let detected = |_: &str| PartSettings { sync_mode: SyncMode::ContinuousWithDriftDetection, ..PartSettings::default() };
    let version = Version::new(BASELINE, 2, 64);
    let signed = sign::sign(Fixture::bundle(version.files(&site)), &site.release(BASELINE), &detected, &site.fixture.keys[..2], None);
    let hex = part_blob(&signed);
    let source = publish_layout(&site, "store", signed).await;
    site.apply_baseline(&source).await;
    let edit = serde_json::json!({"data": {"value": "edited by hand"}});
    let config_maps = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    config_maps.patch("cm-0", &PatchParams::default(), &Patch::Merge(&edit)).await.expect("edited");

    let (before, run) = sync_racing_another_writer(&site, &source, "store", &hex).await;
    println!("| state written during the drift check | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(&run, 1, "the state changed during the drift check (another puller?); nothing was corrected");
    assert_eq!(changes(&before, &site.snapshot().await), Vec::<String>::new(), "nothing written");
    let cm = config_maps.get("cm-0").await.expect("cm-0");
    assert_eq!(cm.data.expect("data")["value"], "edited by hand", "the drift is still there");
}
