//! Soak: 200 cycles of random configuration changes, each published by the real
//! `airlock-publisher publish --from-dir` to the real registry and synced by the real
//! `airlock-puller sync` into the managed Kubernetes 1.20 apiserver for three clusters;
//! after every cycle the live objects of every cluster equal its desired set exactly.
//!
//! The changes (`soak/model.rs`) add, change, move between profiles and remove objects
//! (ConfigMaps and Secrets, rendered per cluster from templates) and relabel clusters so
//! they enter and leave profiles (WithdrawPolicies). A seeded RNG drives them: the seed is
//! printed first and in every failure, and `AIRLOCK_SOAK_SEED=<seed>` replays the same walk
//! (`AIRLOCK_SOAK_CYCLES` shortens or lengthens it).

mod model;

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use airlock_cli::install_crypto_provider;
use airlock_e2e::publisher::Keys;
use jiff::Timestamp;
use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube::api::{Api, ListParams};

use model::{CLUSTERS, Desired, Fleet, Kind, Rng};

const CYCLES: usize = 200;

#[tokio::test(flavor = "multi_thread")]
async fn random_changes_keep_every_cluster_equal_to_its_desired_set() {
    let seed = env_number("AIRLOCK_SOAK_SEED").unwrap_or_else(|| Timestamp::now().as_nanosecond() as u64);
    let cycles = env_number("AIRLOCK_SOAK_CYCLES").map_or(CYCLES, |n| n as usize);
    eprintln!("soak: seed {seed}, {cycles} cycles (replay with AIRLOCK_SOAK_SEED={seed})");
    let soak = Soak::new().await;
    let mut fleet = Fleet::new(&soak.run);
    let mut rng = Rng::new(seed);
    let mut times = Vec::with_capacity(cycles);
    let mut changes: BTreeMap<String, usize> = BTreeMap::new();
    for cycle in 1..=cycles {
        let start = Instant::now();
        let made: Vec<String> = (0..1 + rng.below(3)).map(|_| fleet.mutate(&mut rng, cycle)).collect();
        *changes.entry("cluster-cycles in no profile".into()).or_default() += fleet.unmatched();
        for change in &made {
            let what = change.split_whitespace().find(|w| ["add", "change", "move", "remove", "enters", "leaves"].contains(w));
            *changes.entry(what.unwrap_or("?").to_string()).or_default() += 1;
        }
        if let Err(why) = soak.cycle(&fleet).await {
            panic!(
                "soak seed {seed}, cycle {cycle} of {cycles} (changes: {}): {why}\nreplay: AIRLOCK_SOAK_SEED={seed} \
                 cargo test -p airlock-e2e --test e2e soak::",
                made.join("; ")
            );
        }
        times.push(start.elapsed());
        if cycle % 25 == 0 {
            eprintln!("soak: cycle {cycle}, {:.1}s so far", times.iter().sum::<Duration>().as_secs_f64());
        }
    }
    times.sort();
    let total: Duration = times.iter().sum();
    eprintln!(
        "soak: {cycles} cycles in {:.1}s, per cycle median {:.2}s, max {:.2}s; changes {changes:?}",
        total.as_secs_f64(),
        times[times.len() / 2].as_secs_f64(),
        times[times.len() - 1].as_secs_f64(),
    );
}

fn env_number(key: &str) -> Option<u64> {
    let value = std::env::var(key).ok()?;
    Some(value.parse().unwrap_or_else(|_| panic!("{key}={value:?} is not a number")))
}

/// The run's management directory, keys, render cache, store and namespaces.
struct Soak {
    run: String,
    dir: tempfile::TempDir,
    keys: Keys,
    store: String,
    client: kube::Client,
}

impl Soak {
    async fn new() -> Soak {
        install_crypto_provider();
        let run = format!("soak-{:x}-{:x}", Timestamp::now().as_second() % 0x100_0000, std::process::id());
        let dir = tempfile::tempdir().expect("temp dir");
        // Built before the clock starts, and copied: the soak runs for minutes, and a
        // rebuild of target/debug in the meantime must not swap the binaries under test.
        for (name, built) in [("publisher", airlock_e2e::publisher_bin()), ("puller", airlock_e2e::puller_bin())] {
            std::fs::copy(&built, dir.path().join(name)).unwrap_or_else(|e| panic!("{}: {e}", built.display()));
        }
        std::fs::create_dir(dir.path().join("management")).expect("management dir");
        let store = format!("oci+http://{}/{run}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
        let config = kube::config::Kubeconfig::read_from(kubeconfig()).expect("kubeconfig");
        let config = kube::Config::from_custom_kubeconfig(config, &Default::default()).await.expect("kube config");
        let client = kube::Client::try_from(config).expect("kube client");
        let soak = Soak { keys: Keys::new("soak"), run, dir, store, client };
        for ns in soak.namespaces() {
            airlock_e2e::create_namespace(&soak.client, &ns).await;
        }
        soak
    }

    /// The state namespace and one namespace per cluster.
    fn namespaces(&self) -> Vec<String> {
        let fleet = Fleet::new(&self.run);
        std::iter::once(format!("{}-state", self.run)).chain((0..CLUSTERS).map(|c| fleet.namespace(c))).collect()
    }

    fn path(&self, name: &str) -> String {
        self.dir.path().join(name).to_str().expect("UTF-8 temp path").to_string()
    }

    /// Writes the fleet, publishes it, syncs every cluster, compares live with desired.
    async fn cycle(&self, fleet: &Fleet) -> Result<(), String> {
        fleet.write(&self.dir.path().join("management"));
        let (management, cache) = (self.path("management"), self.path("cache"));
        let out = std::process::Command::new(self.path("publisher"))
            .args(["publish", "--from-dir", &management, "--to", &self.store, "--key", &self.keys.key])
            .args(["--cache-dir", &cache])
            .env("AIRLOCK_LOG", "warn")
            .env_remove("KUBECONFIG")
            .output()
            .expect("airlock-publisher runs");
        if !out.status.success() {
            return Err(format!("publish: {:?}", airlock_e2e::Run::from(out)));
        }
        let syncs = (0..CLUSTERS).map(|c| self.sync(c));
        for (c, run) in futures::future::join_all(syncs).await.into_iter().enumerate() {
            if run.code != Some(0) {
                return Err(format!("sync of c{c}: {run:?}"));
            }
        }
        for c in 0..CLUSTERS {
            compare(&format!("c{c}"), &fleet.desired(c), &self.live(c).await)?;
        }
        Ok(())
    }

    async fn sync(&self, c: usize) -> airlock_e2e::Run {
        tokio::process::Command::new(self.path("puller"))
            .args(["sync", "--source", &self.store, "--cluster", &format!("{}/{}", self.run, Fleet::cluster_name(c))])
            .args(["--keyring", &self.keys.keyring_path, "--state-namespace", &format!("{}-state", self.run)])
            // The walk drops whole profiles at random, which may prune most of a cluster:
            // what is soaked is convergence; the mass-prune guard has tests of its own.
            .arg("--allow-mass-prune")
            .env("KUBECONFIG", kubeconfig())
            .env("AIRLOCK_LOG", "warn")
            .output()
            .await
            .expect("airlock-puller runs")
            .into()
    }

    /// Every ConfigMap and Secret, in any namespace, labelled as applied for cluster `c`.
    async fn live(&self, c: usize) -> Desired {
        let selector = format!("airlock.dev/cluster={}.{}", self.run, Fleet::cluster_name(c));
        let params = ListParams::default().labels(&selector);
        let mut live = Desired::new();
        for cm in Api::<ConfigMap>::all(self.client.clone()).list(&params).await.expect("list ConfigMaps") {
            let value = cm.data.unwrap_or_default().remove("v").unwrap_or_default();
            live.insert((Kind::ConfigMap, cm.metadata.namespace.unwrap_or_default(), cm.metadata.name.unwrap_or_default()), value);
        }
        for secret in Api::<Secret>::all(self.client.clone()).list(&params).await.expect("list Secrets") {
            let value = secret.data.unwrap_or_default().remove("v").map(|b| String::from_utf8_lossy(&b.0).into_owned());
            let id = (Kind::Secret, secret.metadata.namespace.unwrap_or_default(), secret.metadata.name.unwrap_or_default());
            live.insert(id, value.unwrap_or_default());
        }
        live
    }
}

/// Deletes the run's namespaces, also when the test failed, without waiting.
impl Drop for Soak {
    fn drop(&mut self) {
        let _ = std::process::Command::new(airlock_e2e::service_env("AIRLOCK_KUBECTL"))
            .args(["--kubeconfig", &kubeconfig(), "delete", "namespace", "--ignore-not-found", "--wait=false"])
            .args(self.namespaces())
            .output();
    }
}

/// Live equals desired: nothing missing, nothing extra, nothing stale.
fn compare(cluster: &str, desired: &Desired, live: &Desired) -> Result<(), String> {
    let missing: Vec<_> = desired.keys().filter(|k| !live.contains_key(*k)).collect();
    let extra: Vec<_> = live.keys().filter(|k| !desired.contains_key(*k)).collect();
    let stale: Vec<_> = desired.iter().filter_map(|(k, want)| live.get(k).filter(|got| *got != want).map(|got| (k, want, got))).collect();
    if missing.is_empty() && extra.is_empty() && stale.is_empty() {
        return Ok(());
    }
    Err(format!("{cluster}: missing {missing:?}, extra {extra:?}, stale (want, live) {stale:?}"))
}

fn kubeconfig() -> String {
    airlock_e2e::service_env("AIRLOCK_KUBECONFIG_MANAGED")
}
