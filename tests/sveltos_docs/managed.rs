//! One cluster's bundle applied for real: `airlock-puller sync` against the managed
//! apiserver, then every object the examples expect there read back with kubectl and
//! compared with what the example states (the apiserver's defaults, status and the
//! puller's own labels are extra fields, so the comparison is `diff::within`). Objects of
//! a DryRun part must not be there; create-only Namespaces must. What a run leaves behind
//! is deleted before and after, so reruns start clean.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::{Command, Output};

use airlock_e2e::{managed_kubeconfig, puller_bin};
use serde_json::Value;

use super::check::Key;
use super::diff;
use super::expected::Suite;
use super::report::Mismatch;

fn kubectl(args: &[&str]) -> Output {
    airlock_e2e::publisher::kubectl("AIRLOCK_KUBECONFIG_MANAGED", args, b"")
}

/// `Kind.version.group` as kubectl takes it (`Deployment.v1.apps`), `Kind` for the core group.
fn resource(object: &Value) -> String {
    let kind = object["kind"].as_str().unwrap_or_default();
    match object["apiVersion"].as_str().unwrap_or_default().split_once('/') {
        Some((group, version)) => format!("{kind}.{version}.{group}"),
        None => kind.to_string(),
    }
}

/// What one cluster's bundle should put on the managed apiserver.
struct Expected<'s> {
    /// (feature, object, applied): DryRun objects are expected absent.
    objects: Vec<(&'s str, &'s Value, bool)>,
    /// Implicit namespace → the first feature that needs it.
    namespaces: BTreeMap<&'s str, &'s str>,
}

fn expected<'s>(suite: &'s Suite, cluster: &str) -> Expected<'s> {
    let expect = suite.for_cluster(cluster);
    let mut objects = Vec::new();
    let mut namespaces = BTreeMap::new();
    for (feature, part) in expect.parts.values() {
        let applied = part.settings.get("syncMode").and_then(Value::as_str) != Some("DryRun");
        objects.extend(part.objects.iter().map(|o| (*feature, o, applied)));
        for ns in &part.implicit_namespaces {
            namespaces.entry(ns.as_str()).or_insert(*feature);
        }
    }
    Expected { objects, namespaces }
}

/// Deletes what the examples would create on the managed apiserver: their objects outside
/// the examples' own namespaces, and those namespaces (`docs-*`) whole.
fn clean(expected: &Expected<'_>, wait: bool) {
    let wait = format!("--wait={wait}");
    let mut namespaces: BTreeSet<String> = expected.namespaces.keys().filter(|n| n.starts_with("docs-")).map(|n| n.to_string()).collect();
    for (_, o, _) in &expected.objects {
        let key = Key::of(o);
        if key.kind() == "Namespace" {
            namespaces.insert(key.name().to_string());
        } else if !key.namespace().starts_with("docs-") {
            let mut args = vec!["delete", "--ignore-not-found", &wait];
            let res = resource(o);
            args.extend([res.as_str(), key.name()]);
            if !key.namespace().is_empty() {
                args.extend(["-n", key.namespace()]);
            }
            let _ = kubectl(&args);
        }
    }
    let mut args = vec!["delete", "namespace", "--ignore-not-found", &wait, "--timeout=180s"];
    args.extend(namespaces.iter().map(String::as_str));
    let _ = kubectl(&args);
}

/// Applies `cluster`'s newest bundle in `store` and reports every difference on the cluster.
pub fn apply_and_check(suite: &Suite, cluster: &str, store: &str, keyring: &Path) -> Vec<Mismatch> {
    let expected = expected(suite, cluster);
    let mut out = Vec::new();
    let mut push = |feature: &str, what: String, want: &str, got: String| {
        out.push(Mismatch { feature: feature.into(), cluster: cluster.into(), what, expected: want.into(), actual: got })
    };
    clean(&expected, true);
    let state_ns = format!("airlock-docs-{}-{}", std::process::id(), jiff::Timestamp::now().as_second() % 1_000_000);
    let created = kubectl(&["create", "namespace", &state_ns]);
    assert!(created.status.success(), "state namespace: {}", String::from_utf8_lossy(&created.stderr));
    let sync = Command::new(puller_bin())
        .args(["sync", "--source", store, "--cluster", cluster, "--state-namespace", &state_ns])
        .arg("--keyring")
        .arg(keyring)
        .env("KUBECONFIG", managed_kubeconfig())
        .env("AIRLOCK_LOG", "warn")
        .output()
        .expect("airlock-puller runs");
    if !sync.status.success() {
        let stderr = String::from_utf8_lossy(&sync.stderr);
        let tail: Vec<&str> = stderr.lines().rev().take(3).collect();
        push("*", "airlock-puller sync".into(), "exit 0", format!("exit {:?}: {}", sync.status.code(), tail.join(" / ")));
    }
    for (feature, object, applied) in &expected.objects {
        let key = Key::of(object);
        let mut args = vec!["get", "--ignore-not-found", "-o", "json"];
        let res = resource(object);
        args.extend([res.as_str(), key.name()]);
        if !key.namespace().is_empty() {
            args.extend(["-n", key.namespace()]);
        }
        let got = kubectl(&args);
        let text = String::from_utf8_lossy(&got.stdout);
        let live: Option<Value> = if text.trim().is_empty() { None } else { serde_json::from_str(&text).ok() };
        match (live, applied) {
            (None, true) => push(feature, format!("live {key}"), "applied", "not on the cluster".into()),
            (Some(_), false) => push(feature, format!("live {key}"), "absent (DryRun)", "on the cluster".into()),
            (Some(live), true) => {
                let diffs = diff::within(object, &live);
                if !diffs.is_empty() {
                    push(feature, format!("live {key}"), "as the example", diff::summary(&diffs));
                }
            }
            (None, false) => {}
        }
    }
    for (ns, feature) in &expected.namespaces {
        let got = kubectl(&["get", "namespace", ns, "--ignore-not-found", "-o", "name"]);
        if String::from_utf8_lossy(&got.stdout).trim().is_empty() {
            push(feature, format!("live Namespace {ns}"), "created (implicit namespace)", "not on the cluster".into());
        }
    }
    clean(&expected, false);
    let _ = kubectl(&["delete", "namespace", &state_ns, "--wait=false"]);
    out
}
