//! Faults end to end: the real `airlock-puller sync` against the real
//! registry, Git server and Kubernetes 1.20 API server of `hack/services.sh`, with the
//! fault put between them: a registry answering 500, cutting a transfer or stopping mid-
//! fetch, and an API server unreachable mid-apply (both through `airlock_e2e::fault_proxy`); a real
//! kube-apiserver stopped mid-apply and restarted (`hack/kube.sh`'s `faults` instance); the
//! puller's clock moved (libfaketime); the state or inventory Secret deleted or corrupted
//! by hand, or left half-written; the state written by another writer mid-run; a Git
//! remote rewound to an older history.
//!
//! Every case asserts the exact exit code and error, that a failed or refused run changed
//! no object's resourceVersion (the snapshot of `airlock_e2e::hostile_site`) and that the state
//! never claims a version not fully applied, then that the next healthy run converges to
//! exactly the bundle's objects: none missing, none extra, none stale. The SIGKILL and
//! two-pullers faults are in `puller.rs`, refused bundles in `hostile.rs`.

mod apiserver;
mod clock;
mod inventory;
mod proxy;
mod registry;
mod rollback;
mod state_race;

use std::collections::BTreeMap;

use airlock_bundle::Digest;
use airlock_bundle::{Release, SignedBundle};
use airlock_e2e::Run;
use airlock_e2e::hostile_site::{Site, Snapshot};
use airlock_e2e::kept::Kept;
pub use airlock_e2e::kept::{gunzip, gzip};
use airlock_store::{PublishMeta, RegistryCredentials, StoreRef};
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};

/// The label every object the puller applies carries.
const CLUSTER_LABEL: &str = "airlock.dev/cluster";
/// The annotation naming the version that last changed an object.
const VERSION_ANNOTATION: &str = "airlock.dev/version";

/// One version of the test bundle: the application Namespace and ConfigMaps `cm-<i>`,
/// by name with their `value`.
pub struct Version {
    pub number: u64,
    pub maps: BTreeMap<String, String>,
}

impl Version {
    /// `count` ConfigMaps of `bytes` bytes each. The values differ in every version and
    /// hardly compress, so the part blob is about half the ConfigMaps' size.
    pub fn new(number: u64, count: usize, bytes: usize) -> Version {
        // 64 hex digits per SHA-256.
        let value = |i: usize| {
            let mut value: String = (0..bytes.div_ceil(64)).map(|n| Digest::of(format!("{number}/{i}/{n}").as_bytes()).hex()).collect();
            value.truncate(bytes);
            value
        };
        Version { number, maps: (0..count).map(|i| (format!("cm-{i}"), value(i))).collect() }
    }

    pub fn files(&self, site: &Site) -> Vec<(String, Vec<u8>)> {
        let mut files = site.files(0, "");
        files.extend(self.maps.iter().map(|(name, value)| site.config_map(name, &site.app_ns, value)));
        files
    }

    /// Signed as `site.release` says: issued now, valid for an hour.
    pub fn signed(&self, site: &Site) -> SignedBundle {
        self.signed_as(site, |_| {})
    }

    pub fn signed_as(&self, site: &Site, release: impl FnOnce(&mut Release)) -> SignedBundle {
        let mut r = site.release(self.number);
        release(&mut r);
        site.signed(self.files(site), &r)
    }
}

/// The version the state Secret records, if there is one.
pub async fn state_version(site: &Site) -> Option<u64> {
    Kept::new(&site.client, &site.state_ns, &site.cluster).state().await.map(|s| s.version)
}

/// Publishes `signed` into the OCI layout `name` of the site's directory (created if
/// new); the puller's `--source` for it.
pub async fn publish_layout(site: &Site, name: &str, signed: SignedBundle) -> String {
    let reference = StoreRef::OciLayout(site.path(name));
    let store = airlock_store::open(&reference, &RegistryCredentials::default()).await.expect("layout opens");
    store.publish(&[signed], &PublishMeta::default()).await.expect("published");
    reference.to_string()
}

/// A new site with `baseline` (version `BASELINE`) published into the layout `layout`
/// and applied; the layout's `--source`.
pub async fn site_with_baseline(layout: &str, baseline: &Version) -> (Site, String) {
    with_baseline(Site::new().await, layout, baseline).await
}

/// [`site_with_baseline`] on a site of the caller's.
pub async fn with_baseline(mut site: Site, layout: &str, baseline: &Version) -> (Site, String) {
    let source = publish_layout(&site, layout, baseline.signed(&site)).await;
    site.apply_baseline(&source).await;
    (site, source)
}

/// A ConfigMap the puller applied.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Applied {
    /// The bundle version that last changed it.
    pub version: String,
    pub value: String,
    pub resource_version: String,
}

/// The ConfigMaps the puller applied in the application namespace, by name.
pub async fn applied_maps(site: &Site) -> BTreeMap<String, Applied> {
    let api = Api::<ConfigMap>::namespaced(site.client.clone(), &site.app_ns);
    let list = api.list(&ListParams::default().labels(CLUSTER_LABEL)).await.expect("list ConfigMaps");
    list.items
        .into_iter()
        .map(|cm| {
            let version = cm.metadata.annotations.unwrap_or_default().remove(VERSION_ANNOTATION).unwrap_or_default();
            let value = cm.data.unwrap_or_default().remove("value").unwrap_or_default();
            let resource_version = cm.metadata.resource_version.unwrap_or_default();
            (cm.metadata.name.unwrap_or_default(), Applied { version, value, resource_version })
        })
        .collect()
}

/// The cluster holds exactly `want`'s ConfigMaps with its values, and the state says so.
pub async fn assert_converged(site: &Site, want: &Version) {
    let live = applied_maps(site).await;
    let missing: Vec<&String> = want.maps.keys().filter(|n| !live.contains_key(*n)).collect();
    let extra: Vec<&String> = live.keys().filter(|n| !want.maps.contains_key(*n)).collect();
    let stale: Vec<&String> = live
        .iter()
        .filter(|(n, a)| want.maps.get(*n).is_some_and(|v| *v != a.value || a.version != want.number.to_string()))
        .map(|(n, _)| n)
        .collect();
    assert!(
        missing.is_empty() && extra.is_empty() && stale.is_empty(),
        "version {}: missing {missing:?}, extra {extra:?}, stale {stale:?}",
        want.number
    );
    assert_eq!(state_version(site).await, Some(want.number), "the state records the version applied");
}

/// The keys of `before` and `after` whose resourceVersion differs, appeared or went away.
pub fn changes(before: &Snapshot, after: &Snapshot) -> Vec<String> {
    let changed = before.iter().filter(|(k, v)| after.get(*k) != Some(v)).map(|(k, _)| k.clone());
    changed.chain(after.keys().filter(|k| !before.contains_key(*k)).cloned()).collect()
}

/// A run that failed with `code`, naming `what` on stderr.
pub fn assert_failed(run: &Run, code: i32, what: &str) {
    assert!(run.code == Some(code) && run.stderr.contains(what), "expected exit {code} naming {what:?}: {run:?}");
}

/// A run stopped because the puller's `what` Secret `name` ("state" or "inventory"),
/// corrupted as `corruption` says, is unreadable for `reason`; it names the recovery and
/// changed nothing since `before`. Prints the case's row for RELIABILITY.md.
pub async fn assert_unreadable(run: &Run, site: &Site, before: &Snapshot, what: &str, name: &str, corruption: &str, reason: &str) {
    println!("| {what}: {corruption} | {:?} | {} |", run.code, run.stderr.lines().last().unwrap_or_default());
    assert_failed(run, 1, &format!("{what} Secret {}/{name} is unreadable: {reason}", site.state_ns));
    assert_failed(run, 1, &format!("(kubectl -n {} delete secret {name})", site.state_ns));
    assert_eq!(changes(before, &site.snapshot().await), Vec::<String>::new(), "{corruption}: nothing written");
}

/// Replaces the data of the Secret `name` of the site's state namespace with `key` → `bytes`.
pub async fn overwrite_secret(site: &Site, name: &str, key: &str, bytes: Vec<u8>) {
    let api = Api::<Secret>::namespaced(site.client.clone(), &site.state_ns);
    let mut secret = api.get(name).await.expect("the Secret");
    secret.data = Some([(key.to_string(), k8s_openapi::ByteString(bytes))].into());
    api.replace(name, &kube::api::PostParams::default(), &secret).await.expect("Secret overwritten");
}

/// A run that applied `version`.
pub fn assert_applied(run: &Run, version: u64) {
    assert!(run.code == Some(0) && run.stdout.contains(&format!("applied version {version}")), "{run:?}");
}
