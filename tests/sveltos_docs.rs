//! The Sveltos documentation examples of `testdata/sveltos-docs/` held against the real
//! binaries: `airlock-publisher publish` from the directory and from the management
//! apiserver holding the same objects under the real Sveltos CRDs, every pull-mode
//! cluster's bundle read back verified and compared with what the examples say Sveltos
//! deploys there (objects, templated values, settings, notes, failures), the push-mode
//! cluster checked to get nothing, and one cluster's bundle applied by `airlock-puller`.
//! The examples' charts come from `shared/charts`, served on 127.0.0.1 for the run, and
//! their Git repositories are pushed to the test Git server (`git_repos`).
//!
//! It reports every difference at once, as a table of feature against expected and actual
//! (`report`), instead of stopping at the first: the table is the list of what the
//! publisher still does differently from Sveltos. Set `AIRLOCK_SVELTOS_DOCS_REPORT` to a
//! path to also get the table written there as Markdown, and `AIRLOCK_SVELTOS_DOCS_DIR` to
//! run a copy of the directory instead (with some features left out, say). The directory
//! is read by `expected`, a bundle compared by `check` (values by `diff`), the management
//! apiserver prepared by `management` and the apply checked by `managed`.

mod check;
mod diff;
mod expected;
mod git_repos;
mod managed;
mod management;
mod report;

use std::fmt::Write;

use airlock_bundle::{ClusterId, Limits};
use airlock_e2e::publisher::{Keys, run, try_read_back};
use airlock_e2e::root;
use airlock_store::{RegistryCredentials, StoreRef};

use expected::Suite;
use report::{Mismatch, Report, Source};

/// The cluster whose bundle the puller applies: no active window, nothing that needs a
/// namespace it would not create.
const APPLIED: &str = "docs-fleet/edge-west";
/// What the examples write for the chart repository's address (a name that never resolves),
/// replaced by the address of the one the test serves.
const CHART_REPO: &str = "http://chart-repo.invalid";

/// `from`, the examples' directory, copied into `to` with each `(placeholder, address)`
/// of `addresses` replaced: [`CHART_REPO`] and the Git repositories' placeholders.
fn with_addresses(from: &std::path::Path, to: &std::path::Path, addresses: &[(String, String)]) {
    std::fs::create_dir_all(to).unwrap_or_else(|e| panic!("{}: {e}", to.display()));
    for entry in std::fs::read_dir(from).unwrap_or_else(|e| panic!("{}: {e}", from.display())) {
        let path = entry.expect("a directory entry").path();
        let target = to.join(path.file_name().expect("a file name"));
        if path.is_dir() {
            with_addresses(&path, &target, addresses);
        } else {
            let mut text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
            for (placeholder, address) in addresses {
                text = text.replace(placeholder.as_str(), address);
            }
            std::fs::write(&target, text).unwrap_or_else(|e| panic!("{}: {e}", target.display()));
        }
    }
}

/// What one publish printed, kept for the report.
struct Published {
    source: Source,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Published {
    fn run(source: Source, args: &[&str]) -> Published {
        let out = run(args);
        Published {
            source,
            code: out.status.code(),
            stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
            stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
        }
    }

    /// The reason the summary gives for `cluster`'s failure, if it failed.
    fn failure_of(&self, cluster: &str) -> Option<&str> {
        self.stdout.lines().find_map(|l| l.strip_prefix(cluster).and_then(|r| r.strip_prefix(": ")))
    }
}

fn mismatch(cluster: &str, what: &str, expected: &str, actual: String) -> Mismatch {
    Mismatch { feature: "*".into(), cluster: cluster.into(), what: what.into(), expected: expected.into(), actual }
}

/// Every pull-mode cluster's bundle in `store` against the examples; push-mode clusters
/// must have none.
async fn check_store(suite: &Suite, store: &str, keys: &Keys, published: &Published, report: &mut Report) {
    let source = published.source;
    // A profile that fails on a cluster makes the publish a partial failure (exit 2) that
    // names each failed (cluster, part) pair; with none expected, it succeeds.
    let failures = suite.failures();
    let code = if failures.is_empty() { 0 } else { 2 };
    if published.code != Some(code) {
        let last = published.stderr.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or_default();
        report.add(source, mismatch("*", "publish exit code", &code.to_string(), format!("{:?}: {last}", published.code)));
    }
    for (cluster, part) in failures {
        let named = format!("{cluster}: {part}: ");
        if !published.stdout.lines().any(|l| l.starts_with(&named)) {
            report.add(source, mismatch(cluster, &format!("publish output: {part} failed"), "named", "not named".into()));
        }
    }
    let reference: StoreRef = store.parse().expect("a store reference");
    let opened = airlock_store::open(&reference, &RegistryCredentials::default()).await.expect("the store opens");
    let listed: Vec<String> = opened.clusters(&Limits::SPEC).await.unwrap_or_default().iter().map(ToString::to_string).collect();
    for cluster in &suite.push {
        if listed.contains(cluster) {
            report.add(source, mismatch(cluster, "bundle", "none (push mode)", "published".into()));
        }
    }
    for cluster in &suite.pull {
        let id: ClusterId = cluster.parse().expect("a cluster id");
        match try_read_back(store, &id, &keys.keyring).await {
            Ok(bundle) => report.extend(source, check::cluster(suite, cluster, &bundle, source == Source::Live)),
            Err(e) => {
                let why = published.failure_of(cluster).map_or(e, str::to_string);
                report.add(source, mismatch(cluster, "bundle", "published", format!("none: {why}")));
            }
        }
    }
}

/// The Markdown written to `AIRLOCK_SVELTOS_DOCS_REPORT`.
fn markdown(report: &Report, runs: &[Published]) -> String {
    let head = std::process::Command::new("git")
        .args(["-C", &root().display().to_string(), "log", "-1", "--format=%h %s"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).trim().to_string())
        .unwrap_or_default();
    let mut out = format!(
        "# Sveltos documentation examples: mismatches\n\nWritten by `cargo test -p airlock-e2e --test e2e sveltos_docs::` \
         at `{head}`: {} rows.\n\n",
        report.len()
    );
    for (feature, n) in report.per_feature() {
        let _ = writeln!(out, "- {feature}: {n}");
    }
    out.push('\n');
    out.push_str(&report.table());
    for r in runs {
        let warnings: Vec<&str> = r.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        let _ = write!(out, "\n## publish ({:?}): exit {:?}\n\n```\n{}", r.source, r.code, r.stdout);
        let _ = write!(out, "```\n\nstderr ({} lines):\n\n```\n{}\n```\n", warnings.len(), warnings.join("\n"));
    }
    out
}

#[tokio::test(flavor = "multi_thread")]
async fn sveltos_documentation_examples_publish_as_sveltos_deploys() {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let dir: std::path::PathBuf =
        std::env::var_os("AIRLOCK_SVELTOS_DOCS_DIR").map_or_else(|| root().join("testdata/sveltos-docs"), Into::into);
    let tmp = tempfile::tempdir().expect("tempdir");
    let charts = airlock_e2e::chart_repo::ChartRepo::serve(&airlock_e2e::chart_repo::charts_dir(), None);
    let scratch = tempfile::tempdir().expect("tempdir");
    let mut addresses = git_repos::push_all(&dir, scratch.path());
    addresses.push((CHART_REPO.to_string(), charts.url.clone()));
    with_addresses(&dir, &tmp.path().join("examples"), &addresses);
    let suite = Suite::load(&tmp.path().join("examples"));
    let keys = Keys::new("docs");
    let mut report = Report::default();
    let mut runs = Vec::new();

    let dir_store = format!("oci-layout:{}", tmp.path().join("from-dir").display());
    let dir = suite.root.display().to_string();
    let kubectl = airlock_e2e::kustomize_kubectl().display().to_string();
    let helm = airlock_e2e::chart_repo::helm_paths()[0].display().to_string();
    let tools = ["--no-cache", "--kubectl", &kubectl, "--helm", &helm];
    let from_dir =
        Published::run(Source::Dir, &[&["publish", "--from-dir", &dir, "--to", &dir_store, "--key", &keys.key], &tools[..]].concat());
    check_store(&suite, &dir_store, &keys, &from_dir, &mut report).await;
    runs.push(from_dir);

    match management::Management::apply(&suite) {
        Err(why) => report.add(Source::Live, mismatch("*", "management apiserver", "examples applied", why)),
        Ok(_applied) => {
            let live_store = format!("oci-layout:{}", tmp.path().join("live").display());
            let kubeconfig = management::kubeconfig();
            let mut args = [&["publish", "--kubeconfig", &kubeconfig, "--to", &live_store, "--key", &keys.key], &tools[..]].concat();
            for c in &suite.pull {
                args.extend(["--cluster", c]);
            }
            let live = Published::run(Source::Live, &args);
            check_store(&suite, &live_store, &keys, &live, &mut report).await;
            runs.push(live);
            for push in &suite.push {
                let asked = Published::run(
                    Source::Live,
                    &["publish", "--kubeconfig", &kubeconfig, "--to", &live_store, "--key", &keys.key, "--cluster", push, "--dry-run"],
                );
                if asked.code == Some(0) || !asked.stderr.contains("pull mode") {
                    let got = format!("exit {:?}: {}", asked.code, asked.stderr.trim());
                    report.add(Source::Live, mismatch(push, "publish --cluster (push mode)", "refused: not in pull mode", got));
                }
            }
        }
    }

    let applied: ClusterId = APPLIED.parse().expect("a cluster id");
    if try_read_back(&dir_store, &applied, &keys.keyring).await.is_ok() {
        let keyring = std::path::PathBuf::from(&keys.keyring_path);
        report.extend(Source::Apply, managed::apply_and_check(&suite, APPLIED, &dir_store, &keyring));
    } else {
        report.add(Source::Apply, mismatch(APPLIED, "airlock-puller sync", "the bundle applied", "skipped: no bundle".into()));
    }

    if let Ok(path) = std::env::var("AIRLOCK_SVELTOS_DOCS_REPORT") {
        std::fs::write(&path, markdown(&report, &runs)).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    assert!(report.is_empty(), "{} mismatches between the Sveltos examples and the publisher:\n{}", report.len(), report.table());
}
