//! Across the air gap end to end, with the real binaries and services of
//! `hack/services.sh`: `airlock-publisher publish` to the "connected" registry, `export` to
//! an OCI archive, `airlock-puller import` into the "disconnected" registry, a one-profile
//! change carried as a delta, damaged archives refused with nothing imported; and on the way
//! back, reports signed with the cluster key `register cluster` made, gathered by
//! `airlock-puller export-reports`, `ingest`ed into the management apiserver until
//! `kubectl get sveltoscluster` shows READY and VERSION, and a report signed with another key
//! refused and named.

use std::os::unix::fs::PermissionsExt;
use std::path::Path;
use std::process::Command;

use airlock_bundle::SigningKey;
use airlock_bundle::{ClusterId, Limits};
use airlock_cli::KubeArgs;
use airlock_e2e::publisher::reports::{report_key_of, signed_report};
use airlock_e2e::publisher::{Fixture, Keys, file, has_part, install_crds, kubectl_ok, read_back, run, run_expect, summary, unique};
use airlock_store::mirror::ExportIndex;
use airlock_store::{OciStore, StoreRef, open_oci};
use base64::Engine;

const MANAGEMENT: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";
const L: Limits = Limits::SPEC;
/// Generated clusters beside the fixture's three; every second one is in the north zone.
const SITES: usize = 50;

/// Adds SITES pull-mode clusters to the fixture (taking Secrets in clear, as the fixture's
/// own do), and a platform profile every cluster of the
/// run gets: four CA bundles of 96 KiB each, the kind of shared content that dominates a
/// real fleet's bundles (and that a delta must not carry again).
fn grow_fleet(fx: &Fixture) {
    let run = &fx.run;
    let mut yaml = String::new();
    for i in 0..SITES {
        let zone = if i % 2 == 0 { "north" } else { "south" };
        yaml += &format!(
            "apiVersion: lib.projectsveltos.io/v1beta1\nkind: SveltosCluster\nmetadata:\n  name: site-{i:02}\n  \
             namespace: {run}\n  labels: {{e2e.airlock.dev/run: {run}, e2e.airlock.dev/zone: {zone}}}\n  \
             annotations: {{airlock.dev/plaintext-secrets: allow}}\nspec: {{pullMode: true}}\n---\n"
        );
    }
    yaml += &format!(
        "apiVersion: config.projectsveltos.io/v1beta1\nkind: ClusterProfile\nmetadata:\n  name: {run}-platform\nspec:\n  \
         clusterSelector:\n    matchLabels: {{e2e.airlock.dev/run: {run}}}\n  policyRefs:\n    \
         - {{kind: ConfigMap, namespace: {run}, name: platform-manifests}}\n---\n\
         apiVersion: v1\nkind: ConfigMap\nmetadata: {{name: platform-manifests, namespace: {run}}}\ndata:\n"
    );
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    for bundle in 0..4 {
        let bytes: Vec<u8> = (0..72 * 1024)
            .map(|_| {
                // xorshift: certificates are incompressible, and so is this.
                state ^= state << 13;
                state ^= state >> 7;
                state ^= state << 17;
                state as u8
            })
            .collect();
        let text = base64::engine::general_purpose::STANDARD.encode(bytes);
        yaml += &format!(
            "  ca-bundle-{bundle}.yaml: |\n    apiVersion: v1\n    kind: ConfigMap\n    metadata:\n      name: ca-bundle-{bundle}\n      \
             namespace: apps\n    data:\n      ca.crt: |\n        -----BEGIN CERTIFICATE-----\n"
        );
        for line in text.as_bytes().chunks(64) {
            yaml += &format!("        {}\n", std::str::from_utf8(line).expect("base64 is ASCII"));
        }
        yaml += "        -----END CERTIFICATE-----\n";
    }
    std::fs::write(fx.dir.path().join("generated.yaml"), yaml).expect("write generated fleet");
}

fn site(fx: &Fixture, i: usize) -> ClusterId {
    fx.cluster(&format!("site-{i:02}"))
}

/// The archive size `export` reported, checked against the file.
fn reported_archive_bytes(stdout: &str, archive: &Path) -> u64 {
    let line = stdout.lines().find(|l| l.starts_with("archive: ")).unwrap_or_else(|| panic!("no archive line in:\n{stdout}"));
    let (path, rest) = line["archive: ".len()..].split_once(" (").expect("archive: PATH (N bytes, ...)");
    assert_eq!(path, archive.display().to_string());
    let bytes: u64 = rest.split_once(" bytes").expect("N bytes").0.parse().expect("a byte count");
    assert_eq!(bytes, std::fs::metadata(archive).expect("archive written").len());
    bytes
}

async fn oci(reference: &str) -> Box<dyn OciStore> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    open_oci(&reference.parse::<StoreRef>().expect("store reference"), &Default::default()).await.expect("open store")
}

/// `airlock-puller import` of `archive` into `into`, as the disconnected site runs it.
fn import(archive: &Path, into: &str, keys: &Keys) -> airlock_e2e::Run {
    let from = format!("oci-archive:{}", archive.display());
    let out = Command::new(airlock_e2e::puller_bin())
        .args(["import", "--from", &from, "--to", into, "--keyring", &keys.keyring_path])
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-puller runs");
    out.into()
}

/// Imports that must succeed: (written, already present) from the summary line.
fn imported(archive: &Path, into: &str, keys: &Keys) -> (usize, usize) {
    let run = import(archive, into, keys);
    assert_eq!(run.code, Some(0), "{run:?}");
    let line = run.stdout.lines().find(|l| l.starts_with("imported into ")).unwrap_or_else(|| panic!("{run:?}"));
    let counts: Vec<usize> =
        line.split(": ").nth(1).expect("counts").split(", ").map(|c| c.split(' ').next().unwrap().parse().unwrap()).collect();
    (counts[0], counts[1])
}

/// Imports `archive` into a registry prefix of its own and expects exit 1 and an error
/// mentioning `want`, with nothing written there.
async fn refused(archive: &Path, keys: &Keys, want: &str) {
    let empty = format!("oci+http://{}/airlock-e2e/{}", airlock_e2e::service_env("AIRLOCK_REGISTRY_REMOTE"), unique("refused"));
    let run = import(archive, &empty, keys);
    eprintln!("refused {}: {}", archive.display(), run.stderr.trim());
    assert_eq!(run.code, Some(1), "{run:?}");
    assert!(run.stderr.contains(want), "{}: {run:?}", archive.display());
    assert_eq!(oci(&empty).await.clusters(&L).await.expect("catalog"), [], "nothing imported from {}", archive.display());
}

/// (name, data offset, size) of each entry of an uncompressed ustar archive.
fn tar_entries(tar: &[u8]) -> Vec<(String, usize, usize)> {
    let (mut entries, mut pos) = (Vec::new(), 0);
    while pos + 512 <= tar.len() && tar[pos] != 0 {
        let header = &tar[pos..pos + 512];
        let name = String::from_utf8_lossy(&header[..100]).trim_end_matches('\0').to_string();
        let octal = std::str::from_utf8(&header[124..136]).expect("ASCII size").trim_matches(['\0', ' ']);
        let size = usize::from_str_radix(octal, 8).expect("octal size");
        entries.push((name, pos + 512, size));
        pos += 512 + size.div_ceil(512) * 512;
    }
    entries
}

#[tokio::test]
async fn export_carries_only_what_changed_and_import_refuses_damaged_archives() {
    let fx = Fixture::new("airgap");
    grow_fleet(&fx);
    let keys = Keys::new("ops");
    let connected = format!("oci+http://{}/airlock-e2e/{}", airlock_e2e::service_env("AIRLOCK_REGISTRY"), fx.run);
    let far = format!("oci+http://{}/airlock-e2e/{}", airlock_e2e::service_env("AIRLOCK_REGISTRY_REMOTE"), fx.run);
    let publish = ["publish", "--from-dir", fx.path(), "--to", &connected, "--key", &keys.key];
    let first = summary(&run_expect(&publish, 0));
    assert_eq!(first.len(), SITES + 3);
    let tmp = tempfile::tempdir().expect("tempdir");
    let archive = |name: &str| tmp.path().join(name);
    let export = |to: &Path, extra: &[&str]| {
        let to = format!("oci-archive:{}", to.display());
        let mut args = vec!["export", "--from", &connected, "--to", &to, "--keyring", &keys.keyring_path];
        args.extend_from_slice(extra);
        run_expect(&args, 0)
    };

    let full = archive("full.tar");
    let full_bytes = reported_archive_bytes(&export(&full, &[]), &full);
    let index = ExportIndex::read(&full).expect("index beside the archive");
    assert_eq!(index.clusters.len(), SITES + 3);
    assert_eq!(index.carried, index.clusters);
    assert!(index.new_bytes < index.total_bytes / 10, "shared parts count once in new bytes: {index:?}");
    assert_eq!(imported(&full, &far, &keys), (SITES + 3, 0));
    let b = read_back(&far, &site(&fx, 0), &keys.keyring).await;
    assert!(has_part(&b, &fx.part("platform")) && b.predicate().version == 1);

    // One profile changes: the north clusters (the fixture's two and half the sites) get v2.
    fx.edit("configmaps.yaml", "replicas: \"3\"", "replicas: \"5\"");
    let second = summary(&run_expect(&publish, 0));
    let north = 2 + SITES / 2;
    assert_eq!(second.iter().filter(|(_, v, s)| v == "2" && s == "published").count(), north, "{second:?}");
    let delta = archive("delta.tar");
    let since = full.to_str().expect("UTF-8 path");
    let out = export(&delta, &["--since", since]);
    let delta_bytes = reported_archive_bytes(&out, &delta);
    eprintln!("full archive {full_bytes} bytes, delta {delta_bytes} bytes ({:.1}%)", 100.0 * delta_bytes as f64 / full_bytes as f64);
    assert!(delta_bytes * 2 < full_bytes, "delta {delta_bytes} bytes is not under half the full {full_bytes}");
    assert!(out.contains(&format!("clusters: {north} exported, {} unchanged", SITES + 3 - north)), "{out}");
    assert_eq!(imported(&delta, &far, &keys), (north, 0), "the delta imports on top of the full archive");
    let b = read_back(&far, &site(&fx, 0), &keys.keyring).await;
    assert!(file(&b, &format!("{}/ConfigMap.apps.zone-settings.yaml", fx.part("north"))).contains("replicas: \"5\""));
    assert_eq!(read_back(&far, &site(&fx, 1), &keys.keyring).await.predicate().version, 1, "south unchanged");
    assert_eq!(imported(&delta, &far, &keys), (0, north), "importing twice is safe");

    // Damaged or incomplete archives: refused, with nothing imported.
    let bytes = std::fs::read(&full).expect("read archive");
    let truncated = archive("truncated.tar");
    std::fs::write(&truncated, &bytes[..bytes.len() / 2]).expect("write");
    refused(&truncated, &keys, "archive").await;
    let (_, offset, size) = tar_entries(&bytes).into_iter().filter(|(n, _, _)| n.starts_with("blobs/")).max_by_key(|e| e.2).expect("blobs");
    let mut flipped = bytes.clone();
    flipped[offset + size / 2] ^= 0x01;
    let flipped_path = archive("flipped.tar");
    std::fs::write(&flipped_path, flipped).expect("write");
    refused(&flipped_path, &keys, "sha256:").await;
    refused(&delta, &keys, "lacks").await;

    // A subset by labels; and bundles that do not verify are not exported (exit 3).
    let south = archive("south.tar");
    let selector = format!("e2e.airlock.dev/zone=south,e2e.airlock.dev/run={}", fx.run);
    export(&south, &["--selector", &selector, "--from-dir", fx.path()]);
    let index = ExportIndex::read(&south).expect("south index");
    assert_eq!(index.clusters.len(), 1 + SITES / 2);
    assert!(index.clusters.iter().all(|c| c.cluster == fx.cluster("edge-3").to_string() || c.cluster.ends_with(['1', '3', '5', '7', '9'])));
    let stranger = Keys::new("stranger");
    let to = format!("oci-archive:{}", archive("never.tar").display());
    let one = fx.cluster("edge-1").to_string();
    let out = run(&["export", "--from", &connected, "--to", &to, "--keyring", &stranger.keyring_path, "--clusters", &one]);
    assert_eq!(out.status.code(), Some(3), "{}", String::from_utf8_lossy(&out.stderr));
    assert!(String::from_utf8_lossy(&out.stderr).contains(&format!("bundle for {one} rejected")));
    assert!(!archive("never.tar").exists());
}

/// The managed apiserver's `gitVersion`, which its puller would report.
async fn managed_version() -> String {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let kube = KubeArgs { kubeconfig: Some(airlock_e2e::service_env("AIRLOCK_KUBECONFIG_MANAGED").into()), context: None };
    kube.client().await.expect("managed client").apiserver_version().await.expect("version").git_version
}

/// `kubectl get sveltoscluster -A`'s NAMESPACE NAME READY VERSION of `ns`.
fn kubectl_row(ns: &str) -> Vec<String> {
    let table = kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-A"], b"");
    let row = table.lines().find(|l| l.starts_with(&format!("{ns} "))).unwrap_or_else(|| panic!("no {ns} in\n{table}"));
    row.split_whitespace().take(4).map(str::to_string).collect()
}

fn annotation(ns: &str, name: &str) -> String {
    let path = format!(r"jsonpath={{.metadata.annotations.airlock\.dev/{name}}}");
    kubectl_ok(MANAGEMENT, &["get", "sveltoscluster", "-n", ns, "edge-1", "-o", &path], b"")
}

#[tokio::test]
async fn ingest_marks_the_cluster_ready_and_refuses_a_report_signed_with_another_key() {
    let _crds = install_crds();
    let ns = unique("ingest");
    let keys = Keys::new("ops");
    let mgmt = airlock_e2e::service_env(MANAGEMENT);
    let source = format!("oci+http://{}/airlock-e2e/{ns}", airlock_e2e::service_env("AIRLOCK_REGISTRY"));
    let register = |extra: &[&str]| {
        let mut args = vec!["register", "cluster", "--namespace", &ns, "--cluster", "edge-1", "--pullmode", "--labels", "site=a"];
        args.extend_from_slice(&["--source", &source, "--keyring", &keys.keyring_path, "--kubeconfig", &mgmt]);
        args.extend_from_slice(extra);
        let out = run(&args);
        assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
        out.stdout
    };
    let key = report_key_of(&register(&[]));
    let version = managed_version().await;
    let cluster = format!("{ns}/edge-1");
    let reports = tempfile::tempdir().expect("tempdir");
    let write = |name: &str, bytes: Vec<u8>| std::fs::write(reports.path().join(name), bytes).expect("write report");
    write(
        &format!("report-{ns}.edge-1-2026-03-01T10:00:00.000Z.json"),
        signed_report(&cluster, "2026-03-01T10:00:00Z", "applied", &version, 4, &key),
    );
    let ingest = |from: &str, code: i32| {
        let out = run(&["ingest", "--from", from, "--kubeconfig", &mgmt]);
        let text = format!("{}{}", String::from_utf8_lossy(&out.stdout), String::from_utf8_lossy(&out.stderr));
        assert_eq!(out.status.code(), Some(code), "{text}");
        text
    };
    let out = ingest(reports.path().to_str().expect("UTF-8 path"), 0);
    assert!(out.contains("ingested"), "{out}");
    assert_eq!(kubectl_row(&ns), [ns.as_str(), "edge-1", "true", version.as_str()]);
    assert_eq!(annotation(&ns, "applied-version"), "4");
    assert_eq!(annotation(&ns, "report-time"), "2026-03-01T10:00:00Z");
    assert_eq!(annotation(&ns, "report-key"), key.public().to_openssh(&cluster), "register's fields stay");
    let reason = kubectl_ok(
        MANAGEMENT,
        &[
            "get",
            "sveltoscluster",
            "-n",
            &ns,
            "edge-1",
            "-o",
            "jsonpath={.metadata.annotations.airlock\\.dev/result} {.metadata.labels.site}",
        ],
        b"",
    );
    assert_eq!(reason, "Applied a");

    // Carried back by `export-reports`: an older genuine report, and a newer one signed with
    // a stranger's key (file-name order puts them at [0] and [1]).
    let site = tempfile::tempdir().expect("tempdir");
    let stranger = SigningKey::from_seed([42; 32]);
    for (time, key) in [("2026-02-01T00:00:00", &key), ("2026-03-02T00:00:00", &stranger)] {
        let bytes = signed_report(&cluster, &format!("{time}Z"), "error", &version, 4, key);
        std::fs::write(site.path().join(format!("report-{ns}.edge-1-{time}.000Z.json")), bytes).expect("write report");
    }
    let bundle = reports.path().join("reports.json");
    let out = Command::new(airlock_e2e::puller_bin())
        .args(["export-reports", "--from", site.path().to_str().expect("UTF-8 path"), "--to", bundle.to_str().expect("UTF-8 path")])
        .output()
        .expect("airlock-puller runs");
    assert!(out.status.success(), "export-reports: {}", String::from_utf8_lossy(&out.stderr));
    let out = ingest(bundle.to_str().expect("UTF-8 path"), 3);
    assert!(out.contains(&format!("{}[1]", bundle.display())) && out.contains(&format!("report key registered for {cluster}")), "{out}");
    assert!(out.contains("older than the ingested report"), "{out}");
    assert_eq!(kubectl_row(&ns), [ns.as_str(), "edge-1", "true", version.as_str()], "nothing changed");

    // Registering again with the same key keeps the status; a newer failed run leaves the
    // cluster READY, as Sveltos does, and says what failed on an annotation.
    let key_file = reports.path().join("report.key");
    std::fs::write(&key_file, key.to_pkcs8_pem()).expect("write key");
    std::fs::set_permissions(&key_file, std::fs::Permissions::from_mode(0o600)).expect("chmod");
    register(&["--report-key-file", key_file.to_str().expect("UTF-8 path")]);
    assert_eq!(kubectl_row(&ns)[2], "true");
    assert_eq!(annotation(&ns, "report-time"), "2026-03-01T10:00:00Z");
    write("report-later.json", signed_report(&cluster, "2026-03-03T00:00:00Z", "error", &version, 4, &key));
    ingest(reports.path().to_str().expect("UTF-8 path"), 0);
    assert_eq!(kubectl_row(&ns)[2], "true");
    assert_eq!(annotation(&ns, "last-error"), "apiserver unreachable");
    kubectl_ok(MANAGEMENT, &["delete", "namespace", &ns, "--wait=false"], b"");
}

#[tokio::test]
async fn ingest_to_dir_updates_the_file_that_status_then_shows() {
    let fx = Fixture::new("ingest-dir");
    let keys = Keys::new("ops");
    let carried = tempfile::tempdir().expect("tempdir");
    let store = format!("oci-layout:{}", carried.path().join("layout").display());
    let out = run(&[
        "register",
        "cluster",
        "--namespace",
        &fx.run,
        "--cluster",
        "edge-9",
        "--pullmode",
        "--labels",
        &format!("e2e.airlock.dev/run={},e2e.airlock.dev/zone=east", fx.run),
        "--source",
        &store,
        "--keyring",
        &keys.keyring_path,
        "--to-dir",
        fx.path(),
    ]);
    assert!(out.status.success(), "register: {}", String::from_utf8_lossy(&out.stderr));
    let key = report_key_of(&out.stdout);
    run_expect(&["publish", "--from-dir", fx.path(), "--to", &store, "--key", &keys.key], 0);
    let cluster = fx.cluster("edge-9").to_string();
    let reports = carried.path().join("reports.json");
    let report = signed_report(&cluster, "2026-03-01T10:00:00Z", "up-to-date", "v1.20.2", 4, &key);
    std::fs::write(&reports, format!("[{}]", String::from_utf8(report).expect("JSON"))).expect("write");
    let out = run_expect(&["ingest", "--from", reports.to_str().expect("UTF-8 path"), "--to-dir", fx.path()], 0);
    assert!(out.contains("ingested"), "{out}");

    let status = run_expect(&["status", "--from-dir", fx.path(), "--from", &store, "--cluster", &cluster], 0);
    let row: Vec<&str> = status.lines().nth(1).expect("a row").split_whitespace().collect();
    assert_eq!(row[0], cluster);
    assert_eq!(row[row.len() - 5..], ["true", "v4", "v1.20.2", "1", "2026-03-01T10:00:00Z"], "{status}");
}
