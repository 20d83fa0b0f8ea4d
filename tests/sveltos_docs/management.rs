//! The examples on the management apiserver of `hack/services.sh`: the real Sveltos CRDs
//! (`hack/sveltos-crds.sh`) and a Flux GitRepository CRD serving only v1beta2
//! (`testdata/flux-crds/`, as Flux before 2.0 serves it), then every management file
//! applied with kubectl, and a check that the apiserver kept every field the files set. On
//! drop the examples and the Flux CRD are deleted and Airlock's own CRDs of `hack/crds/`
//! (same names, smaller schemas) are put back, since the other end-to-end tests expect
//! those.
//!
//! The CRDs are shared by every test using that apiserver: if another test applied
//! `hack/crds/` while the examples are being applied, the smaller schemas would prune
//! fields (patchesFrom, per-reference tiers, ...), and the examples' profiles, which select
//! by label, could match other tests' clusters. So the examples are applied only while no other test of the
//! process uses the apiserver (`airlock_e2e::locks`); the check after applying still
//! catches a run from another process that ignored the lock file, and says so, rather than
//! letting a pruned profile pass for a publisher bug.

use std::path::PathBuf;
use std::process::{Command, Output};

use airlock_e2e::locks::{self, RealSveltosCrds};
use airlock_e2e::{root, service_env};
use serde_json::Value;

use super::diff;
use super::expected::{Suite, documents};

const KUBECONFIG: &str = "AIRLOCK_KUBECONFIG_MANAGEMENT";

pub fn kubeconfig() -> String {
    service_env(KUBECONFIG)
}

fn kubectl(args: &[&str]) -> Output {
    airlock_e2e::publisher::kubectl(KUBECONFIG, args, b"")
}

fn kubectl_ok(args: &[&str]) -> Result<String, String> {
    let out = kubectl(args);
    if out.status.success() {
        Ok(String::from_utf8_lossy(&out.stdout).into_owned())
    } else {
        Err(format!("kubectl {}: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim()))
    }
}

/// The examples applied to the management apiserver; removed again on drop.
pub struct Management {
    cluster_profiles: Vec<String>,
    namespaces: Vec<String>,
    /// Released after Drop has put `hack/crds/` back.
    _crds: RealSveltosCrds,
}

impl Management {
    /// Installs the CRDs and applies the examples. An error says what failed; the caller
    /// records it and skips the live publish.
    pub fn apply(suite: &Suite) -> Result<Management, String> {
        let files = suite.management_files();
        let objects: Vec<Value> = files.iter().flat_map(|f| documents(f)).collect();
        let named = |kind: &str| -> Vec<String> {
            objects.iter().filter(|o| o["kind"] == kind).map(|o| o["metadata"]["name"].as_str().unwrap_or_default().to_string()).collect()
        };
        let crds = locks::real_sveltos_crds();
        let management = Management { cluster_profiles: named("ClusterProfile"), namespaces: named("Namespace"), _crds: crds };
        management.delete(true);
        install_crds()?;
        // kubectl's client-side validation reads the apiserver's OpenAPI document, which
        // lags behind a CRD just replaced; the apiserver validates anyway, and check_kept
        // catches what it would prune.
        let mut args = vec!["apply".to_string(), "--server-side".to_string(), "--validate=false".to_string()];
        for f in &files {
            args.extend(["-f".to_string(), f.display().to_string()]);
        }
        kubectl_ok(&args.iter().map(String::as_str).collect::<Vec<_>>())?;
        management.check_kept(&objects)?;
        Ok(management)
    }

    /// Every profile and cluster as applied: what the files set must still be there.
    fn check_kept(&self, objects: &[Value]) -> Result<(), String> {
        let mut lost = Vec::new();
        for o in objects.iter().filter(|o| matches!(o["kind"].as_str(), Some("ClusterProfile" | "Profile" | "SveltosCluster"))) {
            let kind = format!(
                "{}.{}",
                o["kind"].as_str().unwrap_or_default(),
                o["apiVersion"].as_str().unwrap_or_default().split('/').next().unwrap_or_default()
            );
            let name = o["metadata"]["name"].as_str().unwrap_or_default();
            let mut args = vec!["get", kind.as_str(), name, "-o", "json"];
            if let Some(ns) = o["metadata"]["namespace"].as_str() {
                args.extend(["-n", ns]);
            }
            let live: Value = serde_json::from_str(&kubectl_ok(&args)?).map_err(|e| format!("{kind} {name}: {e}"))?;
            let diffs = diff::within(&o["spec"], &live["spec"]);
            if !diffs.is_empty() {
                lost.push(format!("{kind} {name}: {}", diff::summary(&diffs)));
            }
        }
        if lost.is_empty() {
            Ok(())
        } else {
            Err(format!(
                "the management apiserver did not keep what the files set (did another test apply hack/crds/ meanwhile? run again): {}",
                lost.join("; ")
            ))
        }
    }

    /// Deletes the examples' ClusterProfiles and namespaces (with everything in them).
    fn delete(&self, wait: bool) {
        let wait = format!("--wait={wait}");
        let mut profiles = vec!["delete", "clusterprofiles.config.projectsveltos.io", "--ignore-not-found", &wait];
        profiles.extend(self.cluster_profiles.iter().map(String::as_str));
        let _ = kubectl(&profiles);
        let mut namespaces = vec!["delete", "namespace", "--ignore-not-found", &wait, "--timeout=180s"];
        namespaces.extend(self.namespaces.iter().map(String::as_str));
        let _ = kubectl(&namespaces);
    }
}

impl Drop for Management {
    fn drop(&mut self) {
        self.delete(false);
        let _ = kubectl(&["delete", "--ignore-not-found", "--wait=false", "-f", &flux_crds()]);
        let crds = root().join("hack/crds").display().to_string();
        let _ = kubectl(&["apply", "--server-side", "-f", &crds]);
        let _ = kubectl(&["wait", "--for", "condition=established", "--timeout=60s", "-f", &crds]);
    }
}

fn flux_crds() -> String {
    root().join("testdata/flux-crds").display().to_string()
}

/// `hack/sveltos-crds.sh install` against the management apiserver, then the Flux CRDs.
fn install_crds() -> Result<(), String> {
    let script: PathBuf = root().join("hack/sveltos-crds.sh");
    let out = Command::new(&script)
        .args(["install", &kubeconfig()])
        .env("AIRLOCK_KUBECTL", service_env("AIRLOCK_KUBECTL"))
        .output()
        .expect("hack/sveltos-crds.sh runs");
    if !out.status.success() {
        return Err(format!("hack/sveltos-crds.sh install: {}", String::from_utf8_lossy(&out.stderr).trim()));
    }
    let flux = flux_crds();
    kubectl_ok(&["apply", "--server-side", "-f", &flux])?;
    kubectl_ok(&["wait", "--for", "condition=established", "--timeout=60s", "-f", &flux]).map(drop)
}
