//! The pull-mode loop as an operator runs it, on the node of `hack/node.sh`: `register
//! cluster`, `kubectl apply -f` of its YAML, and nothing else by hand. The registration's
//! CronJob runs the puller (from the image `hack/image.sh` builds) with its ServiceAccount,
//! its mounted keyring, settings, store credentials and report key; the puller sends its
//! signed report to the store, and `airlock-publisher watch` brings it to the SveltosCluster
//! (bundles-format.md 14.7-14.8) and to the ClusterConfiguration Sveltos's `show addons`
//! reads.
//!
//! Each test is one "Done when" of the loop: ready within two CronJob periods and a profile
//! change arriving the same way (registry, watch-namespaces); a store that refuses the
//! reports (token registry, every namespace); a puller killed mid-apply; a Git store. The
//! scoping of each cluster's writes is shown on the token registry and the Git server.

pub(crate) mod site;
mod stores;

use std::time::{Duration, Instant};

use airlock_bundle::testkit::Fixture;
use airlock_e2e::publisher::install_status_crds;
use airlock_store::{GitStore, RegistryCredentials, ReportPush, StoreRef};

use site::{NODE_VERSION, Site, cluster_of, config_maps};
use stores::{GitServer, PREFIX, PUBLISHER, Rights, TokenRegistry};

/// Two periods of the CronJob (`* * * * *`) and what a run takes.
const TWO_PERIODS: Duration = Duration::from_secs(150);

#[tokio::test(flavor = "multi_thread")]
async fn the_registration_applied_as_is_reports_ready_and_a_profile_change_arrives_the_same_way() {
    let store = format!("oci+http://{}/airlock-e2e-loop-{}", airlock_e2e::service_env("AIRLOCK_REGISTRY"), std::process::id());
    let mut site = Site::new("ready", &store, &store);
    let app = site.app_ns.clone();
    site.management(&[("app.yaml", config_maps(&app, (0, 3), "one"))]);
    let yaml = site.register(&["--watch-namespaces", &app]);
    assert!(!yaml.contains("resources:\n  - '*'"), "with watch-namespaces, no cluster-wide grant of every resource");
    site.apply_registration();
    // Sveltos's status CRDs beside the profiles: the watch's ingest writes the cluster's
    // ClusterConfiguration, which `sveltosctl show addons` reads.
    install_status_crds();
    let applied = Instant::now();
    site.start_watch();

    let first = site.wait_reported(None, 1, TWO_PERIODS).await;
    println!("ready {:?} after kubectl apply", applied.elapsed());
    let row = site.get_sveltoscluster_row();
    assert_eq!((row[1].as_str(), row[2].as_str(), row[3].as_str()), ("edge", "true", NODE_VERSION), "{row:?}");
    let cluster = format!("{}/{}", site.cluster.namespace(), site.cluster.name());
    let deployed: Vec<_> = crate::sveltos_status::addons_rows(site.cluster.namespace())
        .into_iter()
        .filter(|r| r[0] == cluster && r[1] == ":ConfigMap" && r[2] == app)
        .collect();
    assert_eq!(deployed.len(), 3, "show addons lists the three ConfigMaps the CronJob applied: {deployed:?}");
    assert!(deployed.iter().all(|r| !r[5].is_empty() && r[6].starts_with("ClusterProfile/")), "{deployed:?}");
    let object = site.sveltos_cluster().await;
    let apis = object["metadata"]["annotations"]["airlock.dev/api-versions"].as_str().unwrap_or_default().to_string();
    for served in ["v1", "apps/v1", "batch/v1", "rbac.authorization.k8s.io/v1"] {
        assert!(apis.split(',').any(|a| a == served), "{served} among the APIs the signed report named, which Helm renders with: {apis}");
    }
    let config_map = site.app_config_map("c0002").await.expect("the bundle's objects are live");
    assert_eq!(config_map.data.unwrap()["value"], "one");

    // A profile change, published by the watch, reaches the cluster and comes back reported.
    site.management(&[("app.yaml", config_maps(&app, (0, 3), "two"))]);
    let changed = Instant::now();
    site.wait_reported(Some(&first), 2, TWO_PERIODS).await;
    println!("version 2 reported {:?} after the change", changed.elapsed());
    assert_eq!(site.app_config_map("c0002").await.unwrap().data.unwrap()["value"], "two");
    let object = site.sveltos_cluster().await;
    assert_eq!(object["status"]["connectionStatus"], "Healthy");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_store_refusing_reports_leaves_the_cluster_converged_and_the_report_comes_next_run() {
    // The test process opens the registry itself, as the cluster.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let (ns, user) = (cluster_of("refused").namespace().to_string(), ("edge", "edge-pw"));
    let bundles = format!("{PREFIX}/{ns}/edge");
    let rights = |push: bool| {
        vec![
            Rights { user: PUBLISHER, pull: vec![format!("{PREFIX}/*")], push: vec![format!("{PREFIX}/*")] },
            Rights {
                user,
                pull: vec![bundles.clone(), format!("{bundles}/reports")],
                push: if push { vec![format!("{bundles}/reports")] } else { vec![] },
            },
        ]
    };
    let registry = TokenRegistry::start(&rights(true));
    let mut site = Site::new("refused", &registry.source(), &registry.source());
    site.env = vec![("AIRLOCK_REGISTRY_USERNAME", PUBLISHER.0.into()), ("AIRLOCK_REGISTRY_PASSWORD", PUBLISHER.1.into())];

    // The cluster's credentials write its own reports only: not another cluster's, not its bundles.
    let credentials = RegistryCredentials { username: Some(user.0.into()), password: Some(user.1.into()), ..Default::default() };
    let as_cluster = airlock_store::open(&registry.source().parse::<StoreRef>().unwrap(), &credentials).await.unwrap();
    let other = ReportPush {
        cluster: format!("{ns}-other/edge").parse().unwrap(),
        finished_at: jiff::Timestamp::now(),
        result: "applied".into(),
        envelope: b"{}".to_vec(),
    };
    let err = as_cluster.reports().unwrap().push_report(&other).await.unwrap_err();
    assert!(err.to_string().contains("credentials") || err.to_string().contains("refused"), "{err}");
    let fixture = Fixture { cluster: site.cluster.clone(), ..Fixture::new(1) };
    let err = as_cluster.publish(&[fixture.signed(1, Fixture::files())], &Default::default()).await.unwrap_err();
    assert!(err.to_string().contains("credentials") || err.to_string().contains("refused"), "{err}");

    // The fault: the store refuses the cluster's reports.
    registry.set_users(&rights(false));
    let app = site.app_ns.clone();
    site.management(&[("app.yaml", config_maps(&app, (0, 5), "one"))]);
    std::fs::write(site.path("password"), user.1).unwrap();
    site.register(&["--registry-username", user.0, "--registry-password-file", &site.path("password")]);
    site.apply_registration();
    site.start_watch();
    let deadline = Instant::now() + TWO_PERIODS;
    while !site.jobs().await.iter().any(|(_, succeeded, _)| *succeeded == 1) {
        assert!(Instant::now() < deadline, "no puller run succeeded:\n{}", site.progress().await);
        tokio::time::sleep(Duration::from_secs(1)).await;
    }
    assert!(site.app_config_map("c0004").await.is_some(), "converged though the report was refused");
    let kept = site.kept_report().await.expect("the report is kept in the cluster");
    assert!(kept.data.as_ref().unwrap()["report.json"].contains("\"result\":\"applied\""), "{kept:?}");
    let pushed = kept.metadata.annotations.unwrap_or_default().get("airlock.dev/report-pushed").cloned();
    assert_eq!(pushed, None, "the store refused it");
    let object = site.sveltos_cluster().await;
    assert!(object["metadata"]["annotations"].get("airlock.dev/report-time").is_none(), "nothing reached the management side");

    // The fault lifted: the next run sends the kept report, then its own.
    registry.set_users(&rights(true));
    let lifted = Instant::now();
    site.wait_reported(None, 1, TWO_PERIODS).await;
    println!("report delivered {:?} after the fault was lifted", lifted.elapsed());
    let kept = site.kept_report().await.unwrap();
    assert!(kept.metadata.annotations.unwrap_or_default().contains_key("airlock.dev/report-pushed"));
    let row = site.get_sveltoscluster_row();
    assert_eq!((row[2].as_str(), row[3].as_str()), ("true", NODE_VERSION), "{row:?}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_puller_killed_mid_apply_converges_on_the_next_scheduled_run() {
    let store = format!("oci+http://{}/airlock-e2e-loop-{}", airlock_e2e::service_env("AIRLOCK_REGISTRY"), std::process::id());
    let mut site = Site::new("killed", &store, &store);
    let app = site.app_ns.clone();
    // Enough objects that the apply lasts a few seconds; a file holds at most 1,000 documents.
    site.management(&[("a.yaml", config_maps(&app, (0, 750), "x")), ("b.yaml", config_maps(&app, (750, 1500), "x"))]);
    site.register(&[]);
    site.apply_registration();
    site.start_watch();

    let deadline = Instant::now() + TWO_PERIODS;
    let (pod, job) = loop {
        let running = site.pods().await.into_iter().find(|p| p.status.as_ref().and_then(|s| s.phase.as_deref()) == Some("Running"));
        let applying = site.app_config_map("c0000").await.is_some();
        if let (Some(pod), true) = (running, applying) {
            let job = pod.metadata.labels.as_ref().and_then(|l| l.get("job-name").cloned()).expect("a Job's pod");
            break (pod, job);
        }
        assert!(Instant::now() < deadline, "the first run never started applying:\n{}", site.progress().await);
        tokio::time::sleep(Duration::from_millis(100)).await;
    };
    kill_puller(pod.metadata.uid.as_deref().expect("a uid"));
    let killed = Instant::now();
    let deadline = Instant::now() + Duration::from_secs(30);
    while !site.jobs().await.iter().any(|(name, _, failed)| *name == job && *failed == 1) {
        assert!(Instant::now() < deadline, "the killed run's Job did not fail: {:?}", site.jobs().await);
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(site.app_config_map("c1499").await.is_none(), "killed before the apply finished");

    site.wait_reported(None, 1, TWO_PERIODS).await;
    println!("converged {:?} after the kill", killed.elapsed());
    // The report is in before the Job controller has seen the pod end.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let jobs = site.jobs().await;
        let next = jobs.iter().skip_while(|(name, _, _)| *name != job).nth(1);
        if next.is_some_and(|(_, succeeded, _)| *succeeded == 1) {
            break;
        }
        assert!(Instant::now() < deadline, "the next scheduled run converged: {jobs:?}");
        tokio::time::sleep(Duration::from_millis(500)).await;
    }
    assert!(site.app_config_map("c1499").await.is_some());
}

/// SIGKILLs the puller of the pod `uid`, as the OOM killer would: its container's process
/// runs on this machine, in the pod's cgroup.
fn kill_puller(uid: &str) {
    for entry in std::fs::read_dir("/proc").expect("/proc") {
        let dir = entry.expect("a /proc entry").path();
        let comm = std::fs::read_to_string(dir.join("comm")).unwrap_or_default();
        let cgroup = std::fs::read_to_string(dir.join("cgroup")).unwrap_or_default();
        if comm.trim() == "airlock-puller" && cgroup.contains(&format!("pod{uid}")) {
            let pid = dir.file_name().unwrap().to_string_lossy().into_owned();
            let status = std::process::Command::new("kill").args(["-KILL", &pid]).status().expect("kill runs");
            assert!(status.success(), "kill -KILL {pid}");
            return;
        }
    }
    panic!("no airlock-puller process in the cgroup of pod {uid}");
}

#[tokio::test(flavor = "multi_thread")]
async fn a_git_store_takes_each_clusters_reports_on_its_own_branch_only() {
    let cluster = cluster_of("git").to_string();
    let user = ("edge", "edge-pw");
    let git = GitServer::start(&[PUBLISHER, user], &[(user.0, &cluster)]);
    let mut site = Site::new("git", &git.source(), &git.publish_to());
    let app = site.app_ns.clone();
    site.management(&[("app.yaml", config_maps(&app, (0, 3), "one"))]);
    std::fs::write(site.path("password"), user.1).unwrap();
    site.register(&["--git-username", user.0, "--git-password-file", &site.path("password")]);
    site.apply_registration();
    site.start_watch();
    site.wait_reported(None, 1, TWO_PERIODS).await;
    let branch = format!("refs/heads/reports/{cluster}");
    let log = std::process::Command::new("git").arg("--git-dir").arg(git.repo()).args(["log", "--format=%s", &branch]).output().unwrap();
    let log = String::from_utf8_lossy(&log.stdout).into_owned();
    assert!(log.starts_with(&format!("airlock: report {cluster} ")), "the reports are commits on {branch}:\n{log}");

    // The cluster's login pushes its own branch only (hack/git-reports-hook).
    let StoreRef::Git { url, branch } = git.source().parse().unwrap() else { unreachable!() };
    let cache = tempfile::tempdir().unwrap();
    let credentials = airlock_store::GitCredentials::new(user.0, user.1).unwrap();
    let as_cluster = GitStore::with_cache(&url, &branch, cache.path()).unwrap().with_credentials(credentials).unwrap();
    let other = ReportPush {
        cluster: format!("{}-other/edge", site.cluster.namespace()).parse().unwrap(),
        finished_at: jiff::Timestamp::now(),
        result: "applied".into(),
        envelope: b"{}".to_vec(),
    };
    let err = airlock_store::Store::reports(&as_cluster).unwrap().push_report(&other).await.unwrap_err();
    assert!(err.to_string().contains("declined"), "{err}");
}
