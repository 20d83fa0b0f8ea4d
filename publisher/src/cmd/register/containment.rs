//! The flags of `register cluster` that say what a contained puller keeps from its bundles
//! inside its watched namespaces (spec 5.12): the Pod Security level the watched Namespaces
//! get, more Namespace keys no bundle may set, and whether Endpoints and EndpointSlices may
//! be written. They go to the puller's local settings file, never into a bundle, so a
//! bundle cannot loosen them; the RBAC grants Endpoints only when they are allowed.
//! Checked here; written by `manifests` and `rbac`.

use airlock_bundle::cluster::is_key_pattern;
use anyhow::ensure;
use clap::{Args, ValueEnum};

/// The label Pod Security admission reads a namespace's enforced level from.
pub const POD_SECURITY_ENFORCE: &str = "pod-security.kubernetes.io/enforce";

/// A Pod Security Standards level.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum PodSecurity {
    Restricted,
    Baseline,
    Privileged,
}

impl PodSecurity {
    /// The label value Pod Security admission reads.
    pub fn level(self) -> &'static str {
        match self {
            PodSecurity::Restricted => "restricted",
            PodSecurity::Baseline => "baseline",
            PodSecurity::Privileged => "privileged",
        }
    }
}

/// The flags as typed; [`ContainmentFlags::check`] turns them into a [`Containment`].
#[derive(Debug, Clone, Default, Args)]
pub struct ContainmentFlags {
    /// With --watch-namespaces: the Pod Security level the watched Namespaces enforce,
    /// written as their `pod-security.kubernetes.io/enforce` label, which no bundle may
    /// change. The cluster's admission control enforces it (Pod Security admission:
    /// Kubernetes 1.23 and later, 1.22 behind its feature gate); older clusters only carry it.
    #[arg(long, value_enum, value_name = "LEVEL")]
    pub pod_security: Option<PodSecurity>,
    /// With --watch-namespaces: more Namespace label and annotation keys no bundle may set
    /// (`KEY`, or `PREFIX/*` for all of a prefix), besides `pod-security.kubernetes.io/*`,
    /// which are always protected; written to the puller's settings.
    #[arg(long, value_delimiter = ',', value_name = "KEY|PREFIX/*,...")]
    pub protect_namespace_keys: Vec<String>,
    /// With --watch-namespaces: let bundles write Endpoints and EndpointSlices, which can
    /// send a Service's traffic to any address (granted, and allowed in the puller's settings).
    #[arg(long)]
    pub allow_endpoints: bool,
}

/// What a contained puller keeps from its bundles, checked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Containment {
    pub pod_security: Option<PodSecurity>,
    /// Sorted, without repeats.
    pub protected_keys: Vec<String>,
    pub allow_endpoints: bool,
}

impl ContainmentFlags {
    /// `contained`: whether the registration has watch-namespaces, which every flag needs.
    pub fn check(&self, contained: bool) -> anyhow::Result<Containment> {
        let given = self.pod_security.is_some() || !self.protect_namespace_keys.is_empty() || self.allow_endpoints;
        ensure!(
            contained || !given,
            "--pod-security, --protect-namespace-keys and --allow-endpoints need --watch-namespaces: without it the puller may write everything anyway"
        );
        let mut protected_keys = Vec::new();
        for key in self.protect_namespace_keys.iter().map(|k| k.trim()).filter(|k| !k.is_empty()) {
            ensure!(
                is_key_pattern(key),
                "--protect-namespace-keys: {key:?} is neither a label key nor a prefix and /* (such as example.com/*)"
            );
            protected_keys.push(key.to_string());
        }
        protected_keys.sort();
        protected_keys.dedup();
        Ok(Containment { pod_security: self.pod_security, protected_keys, allow_endpoints: self.allow_endpoints })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_flag_needs_watch_namespaces() {
        let flags = ContainmentFlags { pod_security: Some(PodSecurity::Restricted), ..Default::default() };
        let error = flags.check(false).unwrap_err().to_string();
        assert!(error.contains("need --watch-namespaces"), "{error}");
        assert_eq!(ContainmentFlags::default().check(false).unwrap(), Containment::default());
        assert!(ContainmentFlags { allow_endpoints: true, ..Default::default() }.check(false).is_err());
    }

    #[test]
    fn protected_keys_are_checked_sorted_and_deduplicated() {
        let flags =
            ContainmentFlags { protect_namespace_keys: vec!["team".into(), "example.com/*".into(), "team".into()], ..Default::default() };
        assert_eq!(flags.check(true).unwrap().protected_keys, ["example.com/*", "team"]);
        let bad = ContainmentFlags { protect_namespace_keys: vec!["*".into()], ..Default::default() };
        let error = bad.check(true).unwrap_err().to_string();
        assert!(error.contains("--protect-namespace-keys: \"*\""), "{error}");
    }

    #[test]
    fn registration_labels_the_watched_namespaces_and_grants_endpoints_only_when_allowed() {
        use crate::cmd::register::tests::{get, render};
        let granted = |docs: &[serde_json::Value]| -> Vec<String> {
            let role = get(docs, "Role", Some("web"), "airlock-puller:airlock-system");
            let rules = role["rules"].as_array().unwrap().iter();
            rules.flat_map(|r| r["resources"].as_array().unwrap().iter().map(|x| x.as_str().unwrap().to_string())).collect()
        };
        let config = |docs: &[serde_json::Value]| -> serde_json::Value {
            let data = &get(docs, "ConfigMap", Some("airlock-system"), "airlock-puller")["data"];
            serde_json::from_str(data["config.json"].as_str().unwrap()).unwrap()
        };
        let (_, docs) = render(&["--watch-namespaces", "web", "--pod-security", "restricted", "--protect-namespace-keys", "example.com/*"]);
        assert_eq!(get(&docs, "Namespace", None, "web")["metadata"]["labels"], serde_json::json!({POD_SECURITY_ENFORCE: "restricted"}));
        assert_eq!(config(&docs)["protectNamespaceKeys"], serde_json::json!(["example.com/*"]));
        assert_eq!(config(&docs)["allowEndpoints"], serde_json::Value::Null, "refused unless asked");
        let groups = get(&docs, "Role", Some("web"), "airlock-puller:airlock-system")["rules"][1]["apiGroups"].clone();
        assert!(!groups.as_array().unwrap().iter().any(|g| g == "discovery.k8s.io"), "{groups}");
        assert!(!granted(&docs).iter().any(|r| r.starts_with("endpoint")), "{:?}", granted(&docs));

        let (_, docs) = render(&["--watch-namespaces", "web", "--allow-endpoints"]);
        assert_eq!(get(&docs, "Namespace", None, "web")["metadata"].get("labels"), None, "no level asked, no label");
        assert_eq!(config(&docs)["allowEndpoints"], serde_json::json!(true));
        let resources = granted(&docs);
        assert!(resources.contains(&"endpoints".into()) && resources.contains(&"endpointslices".into()), "{resources:?}");
    }
}
