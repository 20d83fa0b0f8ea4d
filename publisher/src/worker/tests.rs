//! The worker's two promises, in process: a run through the channel publishes the same
//! bundles as a run that holds the key, and a process confined as the worker is reaches
//! only its own files.

use std::io::ErrorKind;
use std::path::Path;
use std::sync::Arc;

use airlock_bundle::age::Identity;
use airlock_bundle::{Limits, SigningKey};
use airlock_store::{PublishMeta, Store, StoreRef};
use jiff::SignedDuration;

use super::child::publisher;
use super::rpc::Peer;
use super::serve::Served;
use super::wire::{Job, max_frame};
use super::{Guard, Reach, sandbox_of};
use crate::publish::memo::Memo;
use crate::publish::{self, Published, Publisher, Signer};
use crate::sandbox;
use crate::sources::Source;
use crate::sources::dir::DirSource;

/// A cluster sealed to the identity of seed 1, and a profile with a Secret and a template
/// drawing a random value: both keyed by the secrets the signer derives.
fn write_fleet(dir: &Path) {
    let text = format!(
        "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\n\
         metadata: {{name: eu-1, namespace: fleet, labels: {{region: eu}}, annotations: {{airlock.dev/age-recipient: {}}}}}\n\
         spec: {{pullMode: true}}\n---\n\
         apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata: {{name: app}}\n\
         spec:\n  clusterSelector: {{matchLabels: {{region: eu}}}}\n  policyRefs: [{{kind: ConfigMap, namespace: defs, name: app}}]\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: app, namespace: defs, annotations: {{projectsveltos.io/template: \"true\"}}}}\n\
         data:\n  objects.yaml: |\n    apiVersion: v1\n    kind: Secret\n    metadata: {{name: db, namespace: apps}}\n    \
         stringData: {{password: '{{{{ randAlphaNum 24 }}}}'}}\n",
        Identity::from_secret([1; 32]).recipient()
    );
    std::fs::create_dir_all(dir).unwrap();
    std::fs::write(dir.join("fleet.yaml"), text).unwrap();
}

fn signer() -> Signer {
    Signer::new(vec![Box::new(SigningKey::from_seed([5; 32]))], 1, None, SignedDuration::from_hours(720)).unwrap()
}

async fn layout(root: &Path, name: &str) -> Arc<dyn Store> {
    airlock_store::open(&StoreRef::OciLayout(root.join(name)), &Default::default()).await.unwrap().into()
}

/// A job from `from_dir` (the signer's cluster without one) signed by `keys`.
fn job(from_dir: Option<std::path::PathBuf>, keys: Vec<String>, expires_in: SignedDuration) -> Job {
    Job {
        from_dir,
        store: "oci-layout:through-the-worker".into(),
        layout: None,
        meta: PublishMeta::default(),
        only: Vec::new(),
        shard: None,
        dry_run: false,
        renew_before: SignedDuration::from_hours(24),
        kubectl: None,
        helm: None,
        helm_cache: None,
        memo: None,
        age_recipients: Vec::new(),
        keys,
        keyring_version: 1,
        chain: None,
        expires_in,
        mirrors: Default::default(),
    }
}

fn digests(published: &Published) -> Vec<String> {
    published.rows.iter().map(|r| format!("{} {:?} {:?}", r.cluster, r.status, r.digest)).collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_run_through_the_channel_publishes_what_a_run_holding_the_key_does() {
    let root = tempfile::tempdir().unwrap();
    write_fleet(&root.path().join("mgmt"));
    let source = || Source::Dir(DirSource::read(&root.path().join("mgmt")).unwrap());
    let holding = Publisher {
        signer: signer(),
        store: layout(root.path(), "in-process").await,
        meta: PublishMeta::default(),
        only: Vec::new(),
        shard: None,
        dry_run: false,
        limits: Limits::SPEC,
        memo: Memo::disabled(),
        renew_before: SignedDuration::from_hours(24),
        remote: Default::default(),
        kubectl: None,
        helm: None,
        helm_cache: None,
        age_recipients: Vec::new(),
        mirrors: Default::default(),
    };
    let in_process = publish::run(&source(), &holding, holding.helm_renderer()).await.unwrap();

    let (signer_read, worker_write) = std::io::pipe().unwrap();
    let (worker_read, signer_write) = std::io::pipe().unwrap();
    let (to_worker, calls) = Peer::start("render worker", signer_read, signer_write, max_frame(&Limits::SPEC));
    let (to_signer, _jobs) = Peer::start("signer", worker_read, worker_write, max_frame(&Limits::SPEC));
    let store = layout(root.path(), "through-the-worker").await;
    let guard = Guard { only: Vec::new(), expires_in: SignedDuration::from_hours(720) };
    let served = Arc::new(Served::new(signer(), Arc::clone(&store), None, guard, Limits::SPEC));
    tokio::spawn(served.serve(to_worker, calls));
    let job = job(None, vec![SigningKey::from_seed([5; 32]).public().to_pem()], SignedDuration::from_hours(720));
    let worker = publisher(&to_signer, &job).await.unwrap();
    let through = publish::run(&source(), &worker, worker.helm_renderer()).await.unwrap();

    assert!(!in_process.any_failed() && in_process.rows.len() == 1, "{in_process:?}");
    assert_eq!(digests(&through), digests(&in_process), "the same bundle, sealed and drawn alike");
    let cluster = &in_process.rows[0].cluster;
    let fetched = store.fetch_envelope(cluster, &Limits::SPEC).await.unwrap();
    let keyring = airlock_bundle::Keyring::new(1, 1, vec![SigningKey::from_seed([5; 32]).public()], &Limits::SPEC).unwrap();
    let decoded =
        airlock_bundle::envelope::decode(&fetched.envelope, airlock_bundle::envelope::IN_TOTO_PAYLOAD_TYPE, &Limits::SPEC).unwrap();
    keyring.check(&decoded).expect("the signer's signature verifies");
}

#[test]
fn a_thread_confined_as_the_worker_reaches_only_its_own_files() {
    let (source, caches, secrets, home) =
        (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    std::fs::write(source.path().join("fleet.yaml"), "kind: SveltosCluster\n").unwrap();
    let (key, kubeconfig, dotfile) = (secrets.path().join("ops.key"), secrets.path().join("kubeconfig"), home.path().join(".netrc"));
    for file in [&key, &kubeconfig, &dotfile] {
        std::fs::write(file, "secret").unwrap();
    }
    let reach = Reach { from_dir: Some(source.path().to_path_buf()), caches: Some(caches.path().to_path_buf()), ..Reach::default() };
    let scratch = tempfile::tempdir().unwrap();
    let sandbox = sandbox_of(&reach, &std::env::current_exe().unwrap(), scratch.path());
    let (source, caches, scratch) = (source.path().to_path_buf(), caches.path().to_path_buf(), scratch.path().to_path_buf());
    std::thread::spawn(move || {
        sandbox::confine(&sandbox).expect("this kernel enforces Landlock");
        for denied in [&key, &kubeconfig, &dotfile] {
            assert_eq!(std::fs::read(denied).unwrap_err().kind(), ErrorKind::PermissionDenied, "{}", denied.display());
        }
        assert_eq!(std::fs::read("/proc/self/environ").unwrap_err().kind(), ErrorKind::PermissionDenied);
        assert_eq!(std::fs::read_to_string(source.join("fleet.yaml")).unwrap(), "kind: SveltosCluster\n");
        assert_eq!(
            std::fs::write(source.join("new.yaml"), "x").unwrap_err().kind(),
            ErrorKind::PermissionDenied,
            "the source is read only"
        );
        std::fs::write(scratch.join("values.yaml"), "a: 1").expect("the scratch directory is writable");
        std::fs::write(caches.join("memo.json"), "{}").expect("the caches are writable");
    })
    .join()
    .expect("the confined thread's checks pass");
}
