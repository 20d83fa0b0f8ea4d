//! The labels and annotations of Namespaces that belong to the cluster's operator, not to
//! a bundle (spec 5.12): Pod Security admission's `pod-security.kubernetes.io/*` always,
//! and whatever keys the puller's local settings add. With watch-namespaces in effect, a
//! bundle's Namespace that sets one is refused by the policy before any write, so a forced
//! server-side apply of a watched Namespace, which takes over only the fields the bundle
//! sets, never takes these over either. The list only grows: the bundle has no say in it.
//!
//! A pattern is a label key (`example.com/tier`), or a prefix and `/*` for every key of that
//! prefix. Entry points: [`PatternError`]-checked [`parse`], and [`set_keys`].

use serde_json::Value;

/// Protected on every contained cluster, whatever the settings add: Pod Security
/// admission reads its level from these labels, so a bundle that set them would choose
/// how much its own Pods may do.
pub const ALWAYS: [&str; 1] = ["pod-security.kubernetes.io/*"];

/// A pattern the settings name that is neither a label key nor `<prefix>/*`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{pattern:?} is neither a label key nor a prefix and /* (such as example.com/*)")]
pub struct PatternError {
    pub pattern: String,
}

/// Checks a pattern of the settings.
pub fn parse(pattern: &str) -> Result<String, PatternError> {
    match airlock_bundle::cluster::is_key_pattern(pattern) {
        true => Ok(pattern.to_string()),
        false => Err(PatternError { pattern: pattern.to_string() }),
    }
}

fn matches(pattern: &str, key: &str) -> bool {
    match pattern.strip_suffix("/*") {
        Some(prefix) => key.rsplit_once('/').is_some_and(|(p, _)| p == prefix),
        None => key == pattern,
    }
}

/// Every protected key `namespace` (a Namespace's manifest) sets, as (`label` or
/// `annotation`, key), in that order; `extra` are the settings' patterns.
pub(crate) fn set_keys(namespace: &Value, extra: &[String]) -> Vec<(&'static str, String)> {
    let protected = |key: &str| ALWAYS.iter().copied().chain(extra.iter().map(String::as_str)).any(|p| matches(p, key));
    let mut found = Vec::new();
    for (what, field) in [("label", "labels"), ("annotation", "annotations")] {
        let Some(map) = namespace.pointer(&format!("/metadata/{field}")).and_then(Value::as_object) else { continue };
        found.extend(map.keys().filter(|k| protected(k)).map(|k| (what, k.clone())));
    }
    found
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn pod_security_labels_are_always_protected() {
        let ns = json!({"metadata": {"labels": {"pod-security.kubernetes.io/enforce": "privileged", "team": "web"}}});
        assert_eq!(set_keys(&ns, &[]), [("label", "pod-security.kubernetes.io/enforce".to_string())]);
        let warn = json!({"metadata": {"annotations": {"pod-security.kubernetes.io/warn-version": "latest"}}});
        assert_eq!(set_keys(&warn, &[]), [("annotation", "pod-security.kubernetes.io/warn-version".to_string())]);
    }

    #[test]
    fn the_settings_add_keys_and_prefixes() {
        let extra = vec!["example.com/tier".to_string(), "policy.example.org/*".to_string()];
        let ns = json!({"metadata": {
            "labels": {"example.com/tier": "gold", "example.com/other": "x", "policy.example.org/audit": "off"},
            "annotations": {"policy.example.org/exempt": "true", "sub.policy.example.org/x": "y"}
        }});
        let found = set_keys(&ns, &extra);
        assert_eq!(
            found,
            [
                ("label", "example.com/tier".to_string()),
                ("label", "policy.example.org/audit".to_string()),
                ("annotation", "policy.example.org/exempt".to_string()),
            ],
            "a prefix matches its own keys, not a longer domain's"
        );
        assert!(set_keys(&json!({"metadata": {"name": "web"}}), &extra).is_empty());
    }

    #[test]
    fn rejects_patterns_that_are_not_keys_or_prefixes() {
        assert_eq!(parse("example.com/*"), Ok("example.com/*".to_string()));
        assert_eq!(parse("x*"), Err(PatternError { pattern: "x*".into() }));
    }
}
